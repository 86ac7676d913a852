import HearthModel
import Testing

/// Matching tables taken from firebase-js-sdk `test/integration/api/query.test.ts` (results as the Firestore
/// backend returns them), plus Hearth's own edge cases.
@Suite struct QueryMatchingTests {
    /// "can use != filters": ordered by zip because `!=` is an inequality.
    static let notEqualDocs: [QueryEvaluator.Doc] = [
        QT.doc("c/a", ["zip": .double(.nan)]),
        QT.doc("c/b", ["zip": 91102]),
        QT.doc("c/c", ["zip": 98101]),
        QT.doc("c/d", ["zip": "98101"]),
        QT.doc("c/e", ["zip": [98101]]),
        QT.doc("c/f", ["zip": [98101, 98102]]),
        QT.doc("c/g", ["zip": ["98101", ["zip": 98101]]]),
        QT.doc("c/h", ["zip": ["code": 500]]),
        QT.doc("c/i", ["code": 500]),
        QT.doc("c/j", ["zip": .null]),
    ]

    @Test func notEqual() {
        func run(_ v: Value) -> [String] { QT.ids(QT.query(filter: QT.f("zip", .notEqual, v)), Self.notEqualDocs) }
        #expect(run(98101) == ["a", "b", "d", "e", "f", "g", "h"])
        #expect(run(["code": 500]) == ["a", "b", "c", "d", "e", "f", "g"])
        #expect(run(.null) == ["a", "b", "c", "d", "e", "f", "g", "h"])
        #expect(run(.double(.nan)) == ["b", "c", "d", "e", "f", "g", "h"])
        #expect(run(98101.0) == ["a", "b", "d", "e", "f", "g", "h"])
    }

    /// "can use NOT_IN filters".
    static let notInDocs: [QueryEvaluator.Doc] = [
        QT.doc("c/a", ["zip": .double(.nan)]),
        QT.doc("c/b", ["zip": 91102]),
        QT.doc("c/c", ["zip": 98101]),
        QT.doc("c/d", ["zip": 98103]),
        QT.doc("c/e", ["zip": [98101]]),
        QT.doc("c/f", ["zip": [98101, 98102]]),
        QT.doc("c/g", ["zip": ["98101", ["zip": 98101]]]),
        QT.doc("c/h", ["zip": ["code": 500]]),
        QT.doc("c/i", ["code": 500]),
        QT.doc("c/j", ["zip": .null]),
    ]

    @Test func notIn() {
        func run(_ v: Value) -> [String] { QT.ids(QT.query(filter: QT.f("zip", .notIn, v)), Self.notInDocs) }
        #expect(run([98101, 98103, [98101, 98102]]) == ["a", "b", "e", "g", "h"])
        #expect(run([["code": 500]]) == ["a", "b", "c", "d", "e", "f", "g"])
        #expect(run([.null]) == [])
        #expect(run([98101, .null]) == [])
        #expect(run([.double(.nan)]) == ["b", "c", "d", "e", "f", "g", "h"])
        #expect(run([.double(.nan), 98101]) == ["b", "d", "e", "f", "g", "h"])
    }

    /// "can use IN filters": null and NaN in the list match nothing.
    static let inDocs: [QueryEvaluator.Doc] = [
        QT.doc("c/a", ["zip": 98101]),
        QT.doc("c/b", ["zip": 91102]),
        QT.doc("c/c", ["zip": 98103]),
        QT.doc("c/d", ["zip": [98101]]),
        QT.doc("c/e", ["zip": ["98101", ["zip": 98101]]]),
        QT.doc("c/f", ["zip": ["code": 500]]),
        QT.doc("c/g", ["zip": [98101, 98102]]),
        QT.doc("c/h", ["zip": .null]),
        QT.doc("c/i", ["zip": .double(.nan)]),
    ]

    @Test func inFilter() {
        func run(_ v: Value) -> [String] { QT.ids(QT.query(filter: QT.f("zip", .in, v)), Self.inDocs) }
        #expect(run([98101, 98103, [98101, 98102]]) == ["a", "c", "g"])
        #expect(run([["code": 500]]) == ["f"])
        #expect(run([.null]) == [])
        #expect(run([98101, .null]) == ["a"])
        #expect(run([.double(.nan)]) == [])
        #expect(run([98101, .double(.nan)]) == ["a"])
        #expect(run([98101.0, "91102"]) == ["a"])
        // == is where null and NaN match.
        #expect(QT.ids(QT.query(filter: QT.f("zip", .equal, .null)), Self.inDocs) == ["h"])
        #expect(QT.ids(QT.query(filter: QT.f("zip", .equal, .double(.nan))), Self.inDocs) == ["i"])
    }

    /// "can use array-contains filters" / "can use array-contains-any filters".
    static let arrayDocs: [QueryEvaluator.Doc] = [
        QT.doc("c/a", ["array": [42]]),
        QT.doc("c/b", ["array": ["a", 42, "c"]]),
        QT.doc("c/c", ["array": [41.999, "42", ["a": [42]]]]),
        QT.doc("c/d", ["array": [42], "array2": ["bingo"]]),
        QT.doc("c/e", ["array": [43]]),
        QT.doc("c/f", ["array": [["a": 42]]]),
        QT.doc("c/g", ["array": 42]),
        QT.doc("c/h", ["array": [.null]]),
        QT.doc("c/i", ["array": [.double(.nan)]]),
    ]

    @Test func arrayContains() {
        func run(_ v: Value) -> [String] { QT.ids(QT.query(filter: QT.f("array", .arrayContains, v)), Self.arrayDocs) }
        #expect(run(42) == ["a", "b", "d"])
        #expect(run(42.0) == ["a", "b", "d"])
        #expect(run(["a": 42]) == ["f"])
        #expect(run("42") == ["c"])
        #expect(run(.null) == [])
        #expect(run(.double(.nan)) == [])
    }

    @Test func arrayContainsAny() {
        func run(_ v: Value) -> [String] { QT.ids(QT.query(filter: QT.f("array", .arrayContainsAny, v)), Self.arrayDocs) }
        #expect(run([42, 43]) == ["a", "b", "d", "e"])
        #expect(run([["a": 42]]) == ["f"])
        #expect(run([.null]) == [])
        #expect(run([43, .null]) == ["e"])
        #expect(run([.double(.nan)]) == [])
        #expect(run([43, .double(.nan)]) == ["e"])
    }

    @Test func documentIDFilters() {
        let docs = ["aa", "ab", "ba", "bb"].map { QT.doc("c/\($0)", ["key": .string($0)]) }
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .notEqual, "aa")), docs) == ["ab", "ba", "bb"])
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .in, ["aa", "ab"])), docs) == ["aa", "ab"])
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .notIn, ["aa", "ab"])), docs) == ["ba", "bb"])
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .greaterThanOrEqual, "b")), docs) == ["ba", "bb"])
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .lessThan, QT.reference("c/b"))), docs) == ["aa", "ab"])
        // A reference into another collection is accepted as is and compares by path.
        #expect(QT.ids(QT.query(filter: QT.f("__name__", .greaterThan, QT.reference("b/zz"))), docs) == ["aa", "ab", "ba", "bb"])
    }

    @Test func typeBracketedComparisons() {
        let docs: [QueryEvaluator.Doc] = [
            QT.doc("c/int", ["v": 6]), QT.doc("c/dbl", ["v": 5.5]), QT.doc("c/str", ["v": "6"]),
            QT.doc("c/nul", ["v": .null]), QT.doc("c/nan", ["v": .double(.nan)]), QT.doc("c/arr", ["v": [7]]),
            QT.doc("c/bool", ["v": true]), QT.doc("c/none", ["w": 1]),
        ]
        #expect(QT.ids(QT.query(filter: QT.f("v", .greaterThan, 5)), docs) == ["dbl", "int"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .lessThan, 6)), docs) == ["nan", "dbl"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .greaterThanOrEqual, "")), docs) == ["str"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .lessThan, true)), docs) == [])
        #expect(QT.ids(QT.query(filter: QT.f("v", .lessThanOrEqual, [8])), docs) == ["arr"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .equal, 6.0)), docs) == ["int"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .equal, "6")), docs) == ["str"])
    }

    @Test func integerEqualsDouble() {
        let docs = [QT.doc("c/b", ["v": 42]), QT.doc("c/a", ["v": 42.0]), QT.doc("c/c", ["v": 42.5]), QT.doc("c/d", ["v": 41])]
        #expect(QT.ids(QT.query(filter: QT.f("v", .equal, 42)), docs) == ["a", "b"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .equal, 42.0)), docs) == ["a", "b"])
        #expect(QT.ids(QT.query(filter: QT.f("v", .in, [42.0])), docs) == ["a", "b"])
        // Ties under the order are broken by the document key, in the last explicit direction.
        #expect(QT.ids(QT.query(orderBy: [QT.asc("v")]), docs) == ["d", "a", "b", "c"])
        #expect(QT.ids(QT.query(orderBy: [QT.desc("v")]), docs) == ["c", "b", "a", "d"])
        #expect(QT.ids(QT.query(orderBy: [QT.desc("v"), QT.asc("__name__")]), docs) == ["c", "a", "b", "d"])
    }

    @Test func missingFieldsAndOrderByExistence() {
        let docs = [QT.doc("c/a", ["x": 1]), QT.doc("c/b", ["y": 1]), QT.doc("c/c", ["x": .null, "y": 2]),
                    QT.doc("c/d", ["m": ["n": 1]]), QT.doc("c/e", ["m": 5])]
        #expect(QT.ids(QT.query(orderBy: [QT.asc("x")]), docs) == ["c", "a"])
        #expect(QT.ids(QT.query(orderBy: [QT.asc("m.n")]), docs) == ["d"])
        #expect(QT.ids(QT.query(filter: QT.f("y", .equal, 1), orderBy: [QT.asc("x")]), docs) == [])
        #expect(QT.ids(QT.query(filter: QT.f("x", .notEqual, 5)), docs) == ["a"])
        #expect(QT.ids(QT.query(filter: QT.f("m.n", .equal, 1)), docs) == ["d"])
        // An implicit inequality order also requires the field.
        #expect(QT.ids(QT.query(filter: QT.or(QT.f("x", .greaterThan, 0), QT.f("y", .equal, 1))), docs) == ["a"])
    }

    @Test func compositeFilters() {
        let docs = (1...6).map { i in QT.doc("c/d\(i)", ["a": .int(Int64(i)), "b": .int(Int64(i % 3))]) }
        let q = QT.query(filter: QT.or(QT.and(QT.f("a", .greaterThan, 4), QT.f("b", .equal, 0)), QT.f("a", .equal, 1)))
        #expect(QT.ids(q, docs) == ["d1", "d6"])
        let q2 = QT.query(filter: QT.and(QT.or(QT.f("b", .equal, 1), QT.f("b", .equal, 2)), QT.f("a", .lessThanOrEqual, 4)))
        #expect(QT.ids(q2, docs) == ["d1", "d2", "d4"])
    }

    /// "can query collection groups": only collections named exactly `cg`, at any depth.
    @Test func collectionGroupMembership() {
        let paths = ["abc/123/cg/cg-doc1", "abc/123/cg/cg-doc2", "cg/cg-doc3", "cg/cg-doc4", "def/456/cg/cg-doc5",
                     "cg/virtual-doc/nested-coll/not-cg-doc", "xcg/not-cg-doc", "cgx/not-cg-doc",
                     "abc/123/cgx/not-cg-doc", "abc/123/xcg/not-cg-doc", "abc/cg"]
        let docs = paths.reversed().map { QT.doc($0, ["x": 1]) }
        #expect(QT.ids(.collectionGroup("cg"), docs) == ["cg-doc1", "cg-doc2", "cg-doc3", "cg-doc4", "cg-doc5"])
        #expect(QT.paths(.collectionGroup("cg", parent: QT.path("abc/123")), docs) == ["abc/123/cg/cg-doc1", "abc/123/cg/cg-doc2"])
        #expect(QT.paths(.collectionGroup("cg", parent: QT.path("abc/12")), docs) == [])
        #expect(QT.paths(.collectionGroup("nested-coll"), docs) == ["cg/virtual-doc/nested-coll/not-cg-doc"])
        // A collection query sees only its direct children.
        #expect(QT.paths(QT.query("cg"), docs) == ["cg/cg-doc3", "cg/cg-doc4"])
        #expect(QT.paths(QT.query("abc/123/cg"), docs) == ["abc/123/cg/cg-doc1", "abc/123/cg/cg-doc2"])
    }

    @Test func matcherOnSingleValues() {
        // Missing fields never match, whatever the operator.
        for op in Filter.Operator.allCases {
            let operand: Value = op.takesList ? [1] : 1
            #expect(!QueryFilterMatcher.matches(nil, op, operand), "\(op.rawValue)")
        }
        #expect(QueryFilterMatcher.matches(.null, .equal, .null))
        #expect(!QueryFilterMatcher.matches(.null, .notEqual, 1))
        #expect(!QueryFilterMatcher.matches(.double(.nan), .notEqual, .double(.nan)))
        #expect(QueryFilterMatcher.matches(.double(.nan), .notEqual, .null))
        #expect(QueryFilterMatcher.matches(.double(-0.0), .equal, 0))
        #expect(QueryFilterMatcher.matches(.int(.max), .greaterThan, .double(9.223372036854774784e18)))
        #expect(!QueryFilterMatcher.matches(.int(.max), .greaterThanOrEqual, .double(9.223372036854775807e18)))
    }
}
