import HearthModel
import Testing

/// One query Firestore rejects and a fragment of the message naming the rule.
struct InvalidQueryCase: Sendable, CustomTestStringConvertible {
    let name: String
    let query: Query
    let message: String
    var testDescription: String { name }
}

private let name = FieldPath.documentID
private let group = Query(target: .collectionGroup(id: "cg", parent: nil))
private let groupUnder = Query(target: .collectionGroup(id: "cg", parent: QT.path("a/b")))

private func grouped(_ filter: Filter? = nil, orderBy: [Query.Order] = [], startAt: Query.Bound? = nil,
                     parent: Bool = false) -> Query {
    var q = parent ? groupUnder : group
    q.filter = filter
    q.orderBy = orderBy
    q.startAt = startAt
    return q
}

let invalidQueryCases: [InvalidQueryCase] = [
    .init(name: "negative limit", query: QT.query(limit: -1), message: "limit must not be negative"),
    .init(name: "negative limitToLast", query: QT.query(orderBy: [QT.asc("a")], limitToLast: -2),
          message: "limitToLast must not be negative"),
    .init(name: "negative offset", query: QT.query(offset: -1), message: "offset must not be negative"),
    .init(name: "limit with limitToLast", query: QT.query(orderBy: [QT.asc("a")], limit: 1, limitToLast: 1),
          message: "limit and limitToLast cannot be used together"),
    .init(name: "limitToLast without orderBy", query: QT.query(limitToLast: 3),
          message: "limitToLast requires at least one orderBy"),
    .init(name: "limitToLast with only an inequality", query: QT.query(filter: QT.f("a", .greaterThan, 1), limitToLast: 3),
          message: "limitToLast requires at least one orderBy"),
    .init(name: "orderBy twice, same direction", query: QT.query(orderBy: [QT.asc("a"), QT.asc("a")]),
          message: "orderBy names field 'a' more than once"),
    .init(name: "orderBy twice, conflicting", query: QT.query(orderBy: [QT.asc("a"), QT.asc("b"), QT.desc("a")]),
          message: "orderBy names field 'a' more than once"),
    .init(name: "orderBy after __name__", query: QT.query(orderBy: [QT.asc("__name__"), QT.asc("a")]),
          message: "orderBy after __name__ is not allowed"),
    .init(name: "!= with only orderBy __name__", query: QT.query(filter: QT.f("a", .notEqual, 2), orderBy: [QT.asc("__name__")]),
          message: #"the inequality filter on 'a' orders the results by 'a' before __name__, so an explicit orderBy __name__ must follow an orderBy on 'a': "orderBy":[["a","asc"],["__name__","asc"]]"#),
    .init(name: "range with orderBy b, __name__", query: QT.query(filter: QT.f("a", .greaterThan, 1), orderBy: [QT.asc("b"), QT.desc("__name__")]),
          message: #"an explicit orderBy __name__ must follow an orderBy on 'a': "orderBy":[["b","asc"],["a","desc"],["__name__","desc"]]"#),
    .init(name: "not-in with orderBy __name__", query: QT.query(filter: QT.f("a", .notIn, [2]), orderBy: [QT.desc("__name__")]),
          message: "the inequality filter on 'a' orders the results by 'a' before __name__"),
    .init(name: "in with a scalar", query: QT.query(filter: QT.f("a", .in, 1)),
          message: "'in' filter on 'a' requires an array of values, got integer"),
    .init(name: "not-in with a scalar", query: QT.query(filter: QT.f("a", .notIn, "x")),
          message: "'not-in' filter on 'a' requires an array of values, got string"),
    .init(name: "array-contains-any with a map", query: QT.query(filter: QT.f("a", .arrayContainsAny, ["k": 1])),
          message: "'array-contains-any' filter on 'a' requires an array of values, got map"),
    .init(name: "empty in", query: QT.query(filter: QT.f("a", .in, [])),
          message: "'in' filter on 'a' requires a non-empty array"),
    .init(name: "empty not-in", query: QT.query(filter: QT.f("a", .notIn, [])),
          message: "'not-in' filter on 'a' requires a non-empty array"),
    .init(name: "empty array-contains-any", query: QT.query(filter: QT.f("a", .arrayContainsAny, [])),
          message: "'array-contains-any' filter on 'a' requires a non-empty array"),
    .init(name: "31 values in in", query: QT.query(filter: QT.f("a", .in, QT.ints(1...31))),
          message: "'in' filter on 'a' has 31 values; at most 30 are allowed"),
    .init(name: "31 values in array-contains-any", query: QT.query(filter: QT.f("a", .arrayContainsAny, QT.ints(1...31))),
          message: "'array-contains-any' filter on 'a' has 31 values; at most 30 are allowed"),
    .init(name: "11 values in not-in", query: QT.query(filter: QT.f("a", .notIn, QT.ints(1...11))),
          message: "'not-in' filter on 'a' has 11 values; at most 10 are allowed"),
    .init(name: "> null", query: QT.query(filter: QT.f("a", .greaterThan, .null)),
          message: "null supports only '==' and '!=' filters"),
    .init(name: "<= null", query: QT.query(filter: QT.f("a", .lessThanOrEqual, .null)),
          message: "null supports only '==' and '!=' filters"),
    .init(name: "< NaN", query: QT.query(filter: QT.f("a", .lessThan, .double(.nan))),
          message: "NaN supports only '==' and '!=' filters"),
    .init(name: ">= NaN inside or", query: QT.query(filter: QT.or(QT.f("b", .equal, 1), QT.f("a", .greaterThanOrEqual, .double(.nan)))),
          message: "NaN supports only '==' and '!=' filters"),
    .init(name: "array-contains on __name__", query: QT.query(filter: QT.f("__name__", .arrayContains, "x")),
          message: "'array-contains' filters are not allowed on __name__"),
    .init(name: "array-contains-any on __name__", query: QT.query(filter: QT.f("__name__", .arrayContainsAny, ["x"])),
          message: "'array-contains-any' filters are not allowed on __name__"),
    .init(name: "__name__ ID with a slash", query: QT.query(filter: QT.f("__name__", .equal, "a/b")),
          message: "must not contain \"/\""),
    .init(name: "__name__ empty ID", query: QT.query(filter: QT.f("__name__", .greaterThan, "")),
          message: "is not a valid document ID"),
    .init(name: "__name__ integer", query: QT.query(filter: QT.f("__name__", .equal, 1)),
          message: "a __name__ value must be a document ID string or a reference, got integer"),
    .init(name: "__name__ in list with a null", query: QT.query(filter: QT.f("__name__", .in, ["a", .null])),
          message: "a __name__ value must be a document ID string or a reference, got null"),
    .init(name: "group __name__ odd path", query: grouped(QT.f("__name__", .equal, "a/b/cg")),
          message: "is not a document path"),
    .init(name: "group __name__ bad path", query: grouped(QT.f("__name__", .equal, "a//b")),
          message: "document path \"a//b\" is invalid"),
    .init(name: "group __name__ outside parent", query: grouped(QT.f("__name__", .equal, "x/y/cg/d"), parent: true),
          message: "is not inside the collection group's parent \"a/b\""),
    .init(name: "group __name__ is the parent itself", query: grouped(QT.f("__name__", .equal, "a/b"), parent: true),
          message: "is not inside the collection group's parent"),
    .init(name: "two !=", query: QT.query(filter: QT.and(QT.f("a", .notEqual, 1), QT.f("b", .notEqual, 2))),
          message: "at most one '!=' filter is allowed per query"),
    .init(name: "two != across or", query: QT.query(filter: QT.or(QT.f("a", .notEqual, 1), QT.f("a", .notEqual, 2))),
          message: "at most one '!=' filter is allowed per query"),
    .init(name: "two not-in", query: QT.query(filter: QT.and(QT.f("a", .notIn, [1]), QT.f("b", .notIn, [2]))),
          message: "at most one 'not-in' filter is allowed per query"),
    .init(name: "not-in with !=", query: QT.query(filter: QT.and(QT.f("a", .notIn, [1]), QT.f("b", .notEqual, 2))),
          message: "'not-in' cannot be combined with '!='"),
    .init(name: "not-in with in", query: QT.query(filter: QT.and(QT.f("a", .notIn, [1]), QT.f("b", .in, [2]))),
          message: "'not-in' cannot be combined with 'in'"),
    .init(name: "not-in with array-contains-any", query: QT.query(filter: QT.and(QT.f("a", .notIn, [1]), QT.f("b", .arrayContainsAny, [2]))),
          message: "'not-in' cannot be combined with 'array-contains-any'"),
    .init(name: "not-in with or", query: QT.query(filter: QT.and(QT.f("a", .notIn, [1]), QT.or(QT.f("b", .equal, 1), QT.f("c", .equal, 2)))),
          message: "'not-in' cannot be combined with 'or' filters"),
    .init(name: "two array-contains", query: QT.query(filter: QT.and(QT.f("a", .arrayContains, 1), QT.f("b", .arrayContains, 2))),
          message: "at most one 'array-contains' filter is allowed per disjunction"),
    .init(name: "two array-contains after distribution",
          query: QT.query(filter: QT.and(QT.f("a", .arrayContains, 1), QT.or(QT.f("b", .equal, 1), QT.f("c", .arrayContains, 2)))),
          message: "at most one 'array-contains' filter is allowed per disjunction"),
    .init(name: "array-contains with array-contains-any", query: QT.query(filter: QT.and(QT.f("a", .arrayContains, 1), QT.f("b", .arrayContainsAny, [2]))),
          message: "'array-contains' cannot be combined with 'array-contains-any' in the same disjunction"),
    .init(name: "two array-contains-any", query: QT.query(filter: QT.and(QT.f("a", .arrayContainsAny, [1]), QT.f("b", .arrayContainsAny, [2]))),
          message: "at most one 'array-contains-any' filter is allowed per disjunction"),
    .init(name: "2 x 16 disjunctions", query: QT.query(filter: QT.and(QT.f("a", .in, [1, 2]), QT.f("b", .in, QT.ints(1...16)))),
          message: "the filter has 32 disjunctions in disjunctive normal form"),
    .init(name: "20 + 11 disjunctions", query: QT.query(filter: QT.or(QT.f("a", .in, QT.ints(1...20)), QT.f("b", .in, QT.ints(1...11)))),
          message: "the filter has 31 disjunctions"),
    .init(name: "5 x 10 disjunctions (Firestore docs example)",
          query: QT.query(filter: QT.and(QT.f("a", .in, QT.ints(1...5)), QT.f("b", .in, QT.ints(1...10)))),
          message: "the filter has 50 disjunctions"),
    .init(name: "(or of 2) x array-contains-any of 16",
          query: QT.query(filter: QT.and(QT.or(QT.f("a", .equal, 1), QT.f("b", .equal, 2)), QT.f("c", .arrayContainsAny, QT.ints(1...16)))),
          message: "the filter has 32 disjunctions"),
    .init(name: "huge product saturates",
          query: QT.query(filter: QT.and(QT.f("a", .in, QT.ints(1...30)), QT.f("b", .in, QT.ints(1...30)), QT.f("c", .in, QT.ints(1...30)),
                                         QT.f("d", .in, QT.ints(1...30)), QT.f("e", .in, QT.ints(1...30)), QT.f("f", .in, QT.ints(1...30)),
                                         QT.f("g", .in, QT.ints(1...30)), QT.f("h", .in, QT.ints(1...30)), QT.f("i", .in, QT.ints(1...30)),
                                         QT.f("j", .in, QT.ints(1...30)), QT.f("k", .in, QT.ints(1...30)), QT.f("l", .in, QT.ints(1...30)),
                                         QT.f("m", .in, QT.ints(1...30)), QT.f("n", .in, QT.ints(1...30)))),
          message: "the filter has more than 30 disjunctions"),
    .init(name: "101 field filters", query: QT.query(filter: .composite(.and, (0...100).map { QT.f("f\($0)", .equal, 1) })),
          message: "the filter has 101 field filters; at most 100 are allowed"),
    .init(name: "empty and", query: QT.query(filter: .composite(.and, [])), message: "an 'and' filter needs at least one filter"),
    .init(name: "empty nested or", query: QT.query(filter: QT.and(QT.f("a", .equal, 1), .composite(.or, []))),
          message: "an 'or' filter needs at least one filter"),
    .init(name: "cursor longer than the order", query: QT.query(orderBy: [QT.asc("a")], startAt: .init([1, "x", 3], inclusive: true)),
          message: "startAt cursor has 3 values but the query is ordered by only 2 fields"),
    .init(name: "endAt longer than the implicit order", query: QT.query(endAt: .init(["x", "y"], inclusive: false)),
          message: "endAt cursor has 2 values but the query is ordered by only 1 fields"),
    .init(name: "empty startAfter", query: QT.query(orderBy: [QT.asc("a")], startAt: .init([], inclusive: false)),
          message: "startAt cursor needs at least one value"),
    .init(name: "empty endAt", query: QT.query(endAt: .init([], inclusive: true)),
          message: "endAt cursor needs at least one value"),
    .init(name: "cursor __name__ with a slash", query: QT.query(orderBy: [QT.asc("a")], startAt: .init([1, "x/y"], inclusive: true)),
          message: "startAt cursor: a document ID for a collection query must not contain \"/\""),
    .init(name: "cursor __name__ number", query: QT.query(startAt: .init([5], inclusive: true)),
          message: "startAt cursor: a __name__ value must be a document ID string or a reference, got integer"),
    .init(name: "group cursor __name__ odd path", query: grouped(orderBy: [QT.asc("__name__")], startAt: .init(["a"], inclusive: true)),
          message: "startAt cursor: \"a\" is not a document path"),
    .init(name: "bad collection group ID", query: Query(target: .collectionGroup(id: "a/b", parent: nil)),
          message: "collection group ID \"a/b\" is invalid"),
]

@Suite struct QueryValidationTests {
    @Test(arguments: invalidQueryCases)
    func rejects(_ c: InvalidQueryCase) {
        let e = QT.error(c.query)
        #expect(e?.code == .invalidArgument, "\(c.name): expected INVALID_ARGUMENT, got \(String(describing: e))")
        #expect(e?.message.contains(c.message) == true, "\(c.name): message \"\(e?.message ?? "none")\" lacks \"\(c.message)\"")
    }

    @Test func acceptsFirestoreLimitsExactly() {
        let ok: [Query] = [
            QT.query(filter: QT.and(QT.f("a", .in, [1, 2]), QT.f("b", .in, QT.ints(1...15)))),
            QT.query(filter: QT.f("a", .in, QT.ints(1...30))),
            QT.query(filter: QT.f("a", .arrayContainsAny, QT.ints(1...30))),
            QT.query(filter: QT.f("a", .notIn, QT.ints(1...10))),
            QT.query(filter: QT.or(QT.f("a", .in, QT.ints(1...20)), QT.f("b", .in, QT.ints(1...10)))),
            QT.query(filter: QT.and(QT.or(QT.f("a", .equal, 1), QT.f("b", .equal, 2)), QT.f("c", .in, QT.ints(1...15)))),
            // Multiple inequality fields, equality on null / NaN, != null, in with null, array-contains null.
            QT.query(filter: QT.and(QT.f("a", .greaterThan, 1), QT.f("b", .lessThan, 2), QT.f("c", .notEqual, 3))),
            QT.query(filter: QT.and(QT.f("a", .equal, .null), QT.f("b", .equal, .double(.nan)), QT.f("c", .notEqual, .null))),
            QT.query(filter: QT.and(QT.f("a", .in, [1, .null, .double(.nan)]), QT.f("b", .arrayContains, .null))),
            // One array-contains per disjunction: across an or is fine; in with array-contains-any is fine.
            QT.query(filter: QT.or(QT.f("a", .arrayContains, 1), QT.f("b", .arrayContains, 2))),
            QT.query(filter: QT.and(QT.f("a", .in, [1, 2]), QT.f("b", .arrayContainsAny, [1, 2]))),
            QT.query(filter: QT.and(QT.f("a", .in, [1]), QT.f("b", .in, [2]))),
            // != inside an or; not-in alone with ranges.
            QT.query(filter: QT.or(QT.f("a", .notEqual, 1), QT.f("b", .equal, 2))),
            QT.query(filter: QT.and(QT.f("a", .notIn, [1, 2]), QT.f("b", .greaterThan, 2), QT.f("c", .arrayContains, 1))),
            QT.query(orderBy: [QT.asc("a"), QT.desc("__name__")], limitToLast: 0),
            QT.query(orderBy: [QT.asc("a")], startAt: .init([1, "id"], inclusive: true), endAt: .init([2], inclusive: false)),
            QT.query(limit: 0, offset: 0, select: []),
        ]
        for q in ok { #expect(QT.error(q) == nil, "\(q)") }
    }

    @Test func normalizedOrder() {
        func order(_ q: Query) -> [String] {
            QT.valid(q).orderBy.map { "\($0.field) \($0.direction.rawValue)" }
        }
        #expect(order(QT.query()) == ["__name__ asc"])
        #expect(order(QT.query(orderBy: [QT.desc("z")])) == ["z desc", "__name__ desc"])
        // Inequality fields after the explicit ones, lexicographically, in the last explicit direction.
        let ineq = QT.and(QT.f("b", .greaterThan, 1), QT.f("a", .notEqual, 2), QT.f("a.c", .lessThan, 3), QT.f("e", .equal, 1))
        #expect(order(QT.query(filter: ineq)) == ["a asc", "a.c asc", "b asc", "__name__ asc"])
        #expect(order(QT.query(filter: ineq, orderBy: [QT.asc("x"), QT.desc("b")])) ==
                ["x asc", "b desc", "a desc", "a.c desc", "__name__ desc"])
        // not-in is an inequality; fields inside an or count; __name__ inequalities add nothing.
        #expect(order(QT.query(filter: QT.and(QT.f("q", .notIn, [1]), QT.f("__name__", .greaterThan, "x")))) ==
                ["q asc", "__name__ asc"])
        #expect(order(QT.query(filter: QT.or(QT.f("r", .equal, 1), QT.and(QT.f("q", .lessThan, 1), QT.f("p", .equal, 2))))) ==
                ["q asc", "__name__ asc"])
        #expect(order(QT.query(filter: QT.f("a", .greaterThan, 1), orderBy: [QT.desc("a")])) == ["a desc", "__name__ desc"])
        #expect(order(QT.query(orderBy: [QT.desc("__name__")])) == ["__name__ desc"])
        // An explicit __name__ after every inequality field; a __name__ inequality needs no other order.
        #expect(order(QT.query(filter: QT.f("a", .notEqual, 1), orderBy: [QT.asc("a"), QT.desc("__name__")])) == ["a asc", "__name__ desc"])
        #expect(order(QT.query(filter: QT.f("__name__", .greaterThan, "x"), orderBy: [QT.desc("__name__")])) == ["__name__ desc"])
        // Backtick-quoted segments order by bytes segment-wise: a.b before a!.
        #expect(order(QT.query(filter: QT.and(QT.f("`a!`", .greaterThan, 1), QT.f("a.b", .greaterThan, 1)))) ==
                ["a.b asc", "`a!` asc", "__name__ asc"])
    }

    @Test func documentKeyOperandsBecomeReferences() throws {
        let q = QT.valid(QT.query("users", filter: QT.and(QT.f("__name__", .greaterThan, "alice"),
                                                          QT.f("__name__", .in, ["bob", QT.reference("other/x")]))))
        #expect(q.filter == QT.and(QT.f("__name__", .greaterThan, QT.reference("users/alice")),
                                   QT.f("__name__", .in, [QT.reference("users/bob"), QT.reference("other/x")])))
        let g = QT.valid(grouped(QT.f("__name__", .greaterThanOrEqual, "a/b"), orderBy: [QT.asc("__name__")],
                                 startAt: .init(["x/y/cg/z"], inclusive: false)))
        #expect(g.filter == QT.f("__name__", .greaterThanOrEqual, QT.reference("a/b")))
        #expect(g.startAt == .init([QT.reference("x/y/cg/z")], inclusive: false))
        let under = QT.valid(grouped(QT.f("__name__", .equal, "a/b/cg/d"), parent: true))
        #expect(under.filter == QT.f("__name__", .equal, QT.reference("a/b/cg/d")))
        // Cursor positions on __name__ convert; other positions are left alone (even strings with slashes).
        let c = QT.valid(QT.query(orderBy: [QT.asc("a")], startAt: .init(["x/y", "id1"], inclusive: true)))
        #expect(c.startAt == .init(["x/y", QT.reference("c/id1")], inclusive: true))
    }

    @Test func filtersAreFlattened() {
        let a = QT.f("a", .equal, 1), b = QT.f("b", .equal, 2), c = QT.f("c", .equal, 3)
        #expect(QT.valid(QT.query(filter: QT.and(a))).filter == a)
        #expect(QT.valid(QT.query(filter: QT.and(QT.and(a, b), QT.or(c)))).filter == QT.and(a, b, c))
        #expect(QT.valid(QT.query(filter: QT.or(a, QT.or(b, QT.and(c))))).filter == QT.or(a, b, c))
        // A single-child or is not an or: not-in is allowed with it.
        #expect(QT.error(QT.query(filter: QT.and(QT.f("x", .notIn, [1]), QT.or(a)))) == nil)
    }

    @Test func disjunctiveNormalForm() {
        let a = QT.f("a", .equal, 1), b = QT.f("b", .equal, 2), c = QT.f("c", .in, [1, 2, 3]), d = QT.f("d", .greaterThan, 0)
        let q = QT.valid(QT.query(filter: QT.and(QT.or(a, b), QT.or(c, d))))
        func show(_ t: [[FieldFilter]]) -> [String] { t.map { $0.map { "\($0.field)\($0.op.rawValue)" }.joined(separator: "&") } }
        #expect(show(q.disjuncts) == ["a==&cin", "a==&d>", "b==&cin", "b==&d>"])
        #expect(q.disjunctionCount == 8)
        #expect(QT.valid(QT.query()).disjuncts == [[]])
        #expect(QT.valid(QT.query()).disjunctionCount == 1)
        #expect(QT.valid(QT.query(filter: QT.and(QT.f("a", .in, [1, 2]), QT.f("b", .in, QT.ints(1...15))))).disjunctionCount == 30)
        #expect(QT.valid(QT.query(filter: QT.and(a, d))).inequalityFields == [QT.field("d")])
        // ANDs with ORs between one-term children: the one-term children are appended to every term in place.
        let mixed = QT.valid(QT.query(filter: QT.and(a, QT.or(b, d), QT.and(QT.f("e", .equal, 5), QT.f("f", .equal, 6)))))
        #expect(show(mixed.disjuncts) == ["a==&b==&e==&f==", "a==&d>&e==&f=="], "\(show(mixed.disjuncts))")
        // A long AND is one term with every atom, in order.
        let atoms = (0..<QueryLimits.maxFilters).map { QT.f("a\($0 % 7)", .equal, .int(Int64($0))) }
        let long = QT.valid(QT.query(filter: .composite(.and, atoms)))
        #expect(long.disjuncts.count == 1)
        #expect(long.disjuncts.first?.map(\.value) == atoms.map { if case .field(_, _, let v) = $0 { return v } else { return .null } })
        // Far more is refused from its count, before any expansion (20,000 atoms once held the loop for 3 s).
        let tooMany = (0..<20_000).map { QT.f("a\($0 % 7)", .equal, .int(Int64($0))) }
        #expect(throws: HearthError.self) { try QT.query(filter: .composite(.and, tooMany)).validated() }
    }

    @Test func limitToLastExecutesReversed() {
        let q = QT.valid(QT.query(orderBy: [QT.asc("a"), QT.desc("b")], limitToLast: 2,
                                  startAt: .init([1], inclusive: false), endAt: .init([5, "x"], inclusive: true)))
        let (run, reverse) = q.execution
        #expect(reverse)
        #expect(run.limit == 2 && run.limitToLast == nil)
        #expect(run.orderBy == [QT.desc("a"), QT.asc("b"), QT.asc("__name__")])
        #expect(run.explicitOrderBy == [QT.desc("a"), QT.asc("b")])
        #expect(run.startAt == .init([5, "x"], inclusive: true))
        #expect(run.endAt == .init([1], inclusive: false))
        let plain = QT.valid(QT.query(limit: 3))
        #expect(plain.execution.reverseResults == false)
        #expect(plain.execution.query == plain)
    }
}
