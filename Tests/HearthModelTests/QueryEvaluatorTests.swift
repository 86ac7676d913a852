import HearthModel
import Testing

@Suite struct QueryEvaluatorTests {
    /// (a, b): d1 (1,1), d2 (1,2), d3 (2,1), d4 (2,2), d5 (3,1); given out of order.
    static let grid: [QueryEvaluator.Doc] = [
        QT.doc("c/d4", ["a": 2, "b": 2]), QT.doc("c/d1", ["a": 1, "b": 1]), QT.doc("c/d5", ["a": 3, "b": 1]),
        QT.doc("c/d3", ["a": 2, "b": 1]), QT.doc("c/d2", ["a": 1, "b": 2]),
    ]

    struct CursorCase: Sendable, CustomTestStringConvertible {
        let name: String
        let orderBy: [Query.Order]
        let startAt: Query.Bound?
        let endAt: Query.Bound?
        let expected: [String]
        var testDescription: String { name }
    }

    static let cursorCases: [CursorCase] = [
        .init(name: "startAt a=2", orderBy: [QT.asc("a")], startAt: .init([2], inclusive: true), endAt: nil, expected: ["d3", "d4", "d5"]),
        .init(name: "startAfter a=2", orderBy: [QT.asc("a")], startAt: .init([2], inclusive: false), endAt: nil, expected: ["d5"]),
        .init(name: "endAt a=2", orderBy: [QT.asc("a")], startAt: nil, endAt: .init([2], inclusive: true), expected: ["d1", "d2", "d3", "d4"]),
        .init(name: "endBefore a=2", orderBy: [QT.asc("a")], startAt: nil, endAt: .init([2], inclusive: false), expected: ["d1", "d2"]),
        .init(name: "startAt (2, d4) on the implicit key", orderBy: [QT.asc("a")], startAt: .init([2, "d4"], inclusive: true), endAt: nil, expected: ["d4", "d5"]),
        .init(name: "startAfter (2, d3)", orderBy: [QT.asc("a")], startAt: .init([2, "d3"], inclusive: false), endAt: nil, expected: ["d4", "d5"]),
        .init(name: "startAt 1 endBefore 3", orderBy: [QT.asc("a")], startAt: .init([1], inclusive: true), endAt: .init([3], inclusive: false), expected: ["d1", "d2", "d3", "d4"]),
        .init(name: "startAt 1.5 (between)", orderBy: [QT.asc("a")], startAt: .init([1.5], inclusive: false), endAt: nil, expected: ["d3", "d4", "d5"]),
        .init(name: "asc/desc startAt (1,1)", orderBy: [QT.asc("a"), QT.desc("b")], startAt: .init([1, 1], inclusive: true), endAt: nil, expected: ["d1", "d4", "d3", "d5"]),
        .init(name: "asc/desc startAfter (2,2)", orderBy: [QT.asc("a"), QT.desc("b")], startAt: .init([2, 2], inclusive: false), endAt: nil, expected: ["d3", "d5"]),
        .init(name: "asc/desc endAt (2,2)", orderBy: [QT.asc("a"), QT.desc("b")], startAt: nil, endAt: .init([2, 2], inclusive: true), expected: ["d2", "d1", "d4"]),
        .init(name: "desc startAt 2", orderBy: [QT.desc("a")], startAt: .init([2], inclusive: true), endAt: nil, expected: ["d4", "d3", "d2", "d1"]),
        .init(name: "desc startAfter 2", orderBy: [QT.desc("a")], startAt: .init([2], inclusive: false), endAt: nil, expected: ["d2", "d1"]),
        .init(name: "desc endBefore 2", orderBy: [QT.desc("a")], startAt: nil, endAt: .init([2], inclusive: false), expected: ["d5"]),
        .init(name: "desc startAt (2, d3)", orderBy: [QT.desc("a")], startAt: .init([2, "d3"], inclusive: true), endAt: nil, expected: ["d3", "d2", "d1"]),
        .init(name: "key only startAfter d2", orderBy: [], startAt: .init(["d2"], inclusive: false), endAt: nil, expected: ["d3", "d4", "d5"]),
        .init(name: "key only endAt reference", orderBy: [], startAt: nil, endAt: .init([QT.reference("c/d3")], inclusive: true), expected: ["d1", "d2", "d3"]),
        .init(name: "explicit key desc startAt d3", orderBy: [QT.desc("__name__")], startAt: .init(["d3"], inclusive: true), endAt: nil, expected: ["d3", "d2", "d1"]),
        .init(name: "string cursor after all numbers", orderBy: [QT.asc("a")], startAt: .init(["x"], inclusive: true), endAt: nil, expected: []),
        .init(name: "null cursor before all numbers", orderBy: [QT.asc("a")], startAt: .init([.null], inclusive: false), endAt: nil, expected: ["d1", "d2", "d3", "d4", "d5"]),
        .init(name: "endAt null", orderBy: [QT.asc("a")], startAt: nil, endAt: .init([.null], inclusive: true), expected: []),
        .init(name: "start after end", orderBy: [QT.asc("a")], startAt: .init([3], inclusive: true), endAt: .init([1], inclusive: true), expected: []),
    ]

    @Test(arguments: cursorCases)
    func cursors(_ c: CursorCase) {
        let q = QT.query(orderBy: c.orderBy, startAt: c.startAt, endAt: c.endAt)
        #expect(QT.ids(q, Self.grid) == c.expected)
    }

    @Test func limitOffsetAndLimitToLast() {
        let byA = [QT.asc("a")]
        #expect(QT.ids(QT.query(orderBy: byA, limit: 2), Self.grid) == ["d1", "d2"])
        #expect(QT.ids(QT.query(orderBy: byA, limit: 2, offset: 1), Self.grid) == ["d2", "d3"])
        #expect(QT.ids(QT.query(orderBy: byA, offset: 10), Self.grid) == [])
        #expect(QT.ids(QT.query(orderBy: byA, limit: 0), Self.grid) == [])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 2), Self.grid) == ["d4", "d5"])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 10), Self.grid) == ["d1", "d2", "d3", "d4", "d5"])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 0), Self.grid) == [])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 2, endAt: .init([3], inclusive: false)), Self.grid) == ["d3", "d4"])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 3, startAt: .init([2], inclusive: true), endAt: .init([2], inclusive: true)), Self.grid) == ["d3", "d4"])
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 2, startAt: .init([1, "d2"], inclusive: false)), Self.grid) == ["d4", "d5"])
        // Offset with limitToLast skips from the end (the query runs reversed).
        #expect(QT.ids(QT.query(orderBy: byA, limitToLast: 2, offset: 1), Self.grid) == ["d3", "d4"])
        #expect(QT.ids(QT.query(orderBy: [QT.desc("a"), QT.asc("b")], limitToLast: 3), Self.grid) == ["d4", "d1", "d2"])
        // Offset applies after cursors.
        #expect(QT.ids(QT.query(orderBy: byA, limit: 1, offset: 1, startAt: .init([2], inclusive: true)), Self.grid) == ["d4"])
    }

    @Test func sortsAcrossTypesInFirestoreOrder() {
        let values: [Value] = [.null, false, true, .double(.nan), -1, 0.5, 1, .timestamp(Timestamp(micros: 0)), "", "a",
                               .bytes([0]), QT.reference("a/b"), .geoPoint(GeoPoint(latitude: 0, longitude: 0)), [], [1], [:], ["a": 1]]
        func id(_ i: Int) -> String { i < 10 ? "0\(i)" : "\(i)" }
        let docs = values.enumerated().reversed().map { QT.doc("c/\(id($0.offset))", ["v": $0.element]) }
        let expected = (0..<values.count).map(id)
        #expect(QT.ids(QT.query(orderBy: [QT.asc("v")]), docs) == expected)
        #expect(QT.ids(QT.query(orderBy: [QT.desc("v")]), docs) == expected.reversed())
    }

    @Test func select() {
        let docs = [QT.doc("c/a", ["x": 1, "y": 2, "m": ["n": 3, "o": 4]])]
        let run = { (s: [FieldPath]?) in QueryEvaluator.run(QT.valid(QT.query(select: s)), over: docs)[0].fields }
        #expect(run(nil) == docs[0].fields)
        #expect(run([]) == MapValue())
        #expect(run([QT.field("x")]) == QT.fields(["x": 1]))
        #expect(run([QT.field("m.n"), QT.field("zz"), QT.field("__name__")]) == QT.fields(["m": ["n": 3]]))
        #expect(run([QT.field("m.n"), QT.field("m")]) == QT.fields(["m": ["n": 3, "o": 4]]))
        #expect(run([QT.field("x.q")]) == MapValue())
        // Projection happens after ordering by a field it drops.
        let ordered = QueryEvaluator.run(QT.valid(QT.query(orderBy: [QT.desc("y")], select: [QT.field("x")])),
                                         over: docs + [QT.doc("c/b", ["x": 9, "y": 5])])
        #expect(ordered.map(\.path.id) == ["b", "a"])
        #expect(ordered.map(\.fields) == [QT.fields(["x": 9]), QT.fields(["x": 1])])
    }

    /// "can query collection groups with startAt / endAt by arbitrary documentId" and "... with where
    /// filters on arbitrary documentId".
    @Test func collectionGroupArbitraryDocumentID() {
        let cg = "bcg"
        let docs = ["a/a/\(cg)/cg-doc1", "a/b/a/b/\(cg)/cg-doc2", "a/b/\(cg)/cg-doc3", "a/b/c/d/\(cg)/cg-doc4",
                    "a/c/\(cg)/cg-doc5", "\(cg)/cg-doc6", "a/b/nope/nope"].map { QT.doc($0, ["x": 1]) }
        var q = Query.collectionGroup(cg)
        q.orderBy = [QT.asc("__name__")]
        q.startAt = .init(["a/b"], inclusive: true)
        q.endAt = .init(["a/b0"], inclusive: true)
        #expect(QT.ids(q, docs) == ["cg-doc2", "cg-doc3", "cg-doc4"])
        q.startAt = .init(["a/b"], inclusive: false)
        q.endAt = .init([.string("a/b/\(cg)/cg-doc3")], inclusive: false)
        #expect(QT.ids(q, docs) == ["cg-doc2"])

        var w = Query.collectionGroup(cg)
        w.filter = QT.and(QT.f("__name__", .greaterThanOrEqual, "a/b"), QT.f("__name__", .lessThanOrEqual, "a/b0"))
        #expect(QT.ids(w, docs) == ["cg-doc2", "cg-doc3", "cg-doc4"])
        w.filter = QT.and(QT.f("__name__", .greaterThan, "a/b"), QT.f("__name__", .lessThan, .string("a/b/\(cg)/cg-doc3")))
        #expect(QT.ids(w, docs) == ["cg-doc2"])
        #expect(QT.ids(.collectionGroup(cg), docs) == ["cg-doc1", "cg-doc2", "cg-doc3", "cg-doc4", "cg-doc5", "cg-doc6"])
    }

    @Test func comparatorAndCursorChecksDirectly() {
        let q = QT.valid(QT.query(orderBy: [QT.asc("a")], startAt: .init([2], inclusive: true), endAt: .init([2, "d3"], inclusive: true)))
        let d = Dictionary(uniqueKeysWithValues: Self.grid.map { ($0.path.id, $0) })
        func cmp(_ x: String, _ y: String) -> Int { q.compare(d[x]!.path, d[x]!.fields, d[y]!.path, d[y]!.fields) }
        #expect(cmp("d1", "d2") == -1 && cmp("d2", "d1") == 1 && cmp("d3", "d3") == 0 && cmp("d5", "d4") == 1)
        #expect(q.beforeStart(d["d2"]!.path, d["d2"]!.fields))
        #expect(!q.beforeStart(d["d3"]!.path, d["d3"]!.fields))
        #expect(!q.afterEnd(d["d3"]!.path, d["d3"]!.fields))
        #expect(q.afterEnd(d["d4"]!.path, d["d4"]!.fields))
        #expect(q.matchesWithinCursors(d["d3"]!.path, d["d3"]!.fields))
        #expect(!q.matchesWithinCursors(d["d4"]!.path, d["d4"]!.fields))
        #expect(q.matches(d["d4"]!.path, d["d4"]!.fields))
    }
}
