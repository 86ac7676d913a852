import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// Index-backed execution must return exactly what the reference evaluator returns over all documents,
/// for random documents and random queries (filters, orders, cursors, limits), with the composite indexes
/// the queries need declared.
@Suite struct QueryOracleTests {
    struct RNG: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let values: [Value] = [nil, true, false, 0, 1, 1.0, 2, 2.5, -1, .double(.nan), "a", "b", "B", "é", ["x": 1], [1, 2], [2, "a"]]

    func randomValue(_ r: inout RNG) -> Value { Self.values[Int(r.next() % UInt64(Self.values.count))] }

    func populate(_ h: EngineHarness, _ r: inout RNG, count: Int) throws -> [QueryEvaluator.Doc] {
        var docs: [QueryEvaluator.Doc] = []
        var writes: [Write] = []
        for i in 0..<count {
            var f = MapValue()
            for name in ["a", "b", "c"] where r.next() % 5 != 0 { f[name] = randomValue(&r) }
            if r.next() % 3 == 0 { f["tags"] = .array([randomValue(&r), randomValue(&r)].filter { $0.arrayValue == nil }) }
            let p = i % 7 == 0 ? "coll/d\(i)/sub/s\(i)" : "coll/d" + String(String(1000 + i).dropFirst())
            writes.append(set(p, f))
            if p.hasPrefix("coll/d") && !p.contains("sub") { docs.append((path(p), f)) }
        }
        _ = h.commit(writes)
        return docs
    }

    func randomFilter(_ r: inout RNG) -> Filter {
        let field = FieldPath([["a", "b", "c"][Int(r.next() % 3)]])
        let ops: [Filter.Operator] = [.equal, .equal, .lessThan, .greaterThanOrEqual, .notEqual, .in, .arrayContains,
                                      .notIn, .arrayContainsAny, .greaterThan, .lessThanOrEqual]
        let op = ops[Int(r.next() % UInt64(ops.count))]
        var v = randomValue(&r)
        if v.isNaN || v == .null, op.isRange { v = 1 }
        switch op {
        case .in: return .field(field, .in, [randomValue(&r), randomValue(&r)])
        case .arrayContains: return .field(FieldPath(["tags"]), .arrayContains, v.arrayValue == nil ? v : 1)
        case .arrayContainsAny: return .field(FieldPath(["tags"]), .arrayContainsAny, [randomValue(&r), 1])
        case .notIn: return .field(field, .notIn, [randomValue(&r), "a"])
        default: return .field(field, op, v)
        }
    }

    @Test(arguments: 0..<16)
    func indexedExecutionMatchesTheOracle(seed: Int) throws {
        var r = RNG(state: UInt64(seed) &* 7919 &+ 17)
        let h = try EngineHarness()
        let docs = try populate(h, &r, count: 120)
        var checked = 0
        for _ in 0..<150 {
            var q = Query.collection(try CollectionPath(parsing: "coll"))
            switch r.next() % 6 {
            case 0: break
            case 1: q.filter = .composite(.or, [randomFilter(&r), randomFilter(&r)])
            case 2: q.filter = .composite(.and, [randomFilter(&r), .field(.documentID, .greaterThanOrEqual, "d050")])
            default: q.filter = randomFilter(&r)
            }
            if r.next() % 2 == 0 {
                q.orderBy = [Query.Order(FieldPath([["a", "b", "c"][Int(r.next() % 3)]]), r.next() % 2 == 0 ? .ascending : .descending)]
            }
            if r.next() % 2 == 0 { q.limit = Int(r.next() % 10) + 1 } else if !q.orderBy.isEmpty && r.next() % 3 == 0 { q.limitToLast = 3 }
            if r.next() % 4 == 0 { q.offset = Int(r.next() % 3) }
            if r.next() % 3 == 0 { q.startAt = Query.Bound([randomValue(&r)], inclusive: r.next() % 2 == 0) }
            if r.next() % 4 == 0 { q.endAt = Query.Bound([randomValue(&r)], inclusive: r.next() % 2 == 0) }
            guard let valid = try? q.validated() else { continue }
            let expected = QueryEvaluator.results(valid, over: docs).map(\.path)
            // Declare each index an error names (an OR may need one per branch), let it build, run again.
            for _ in 0..<4 {
                do {
                    _ = try h.engine.runQuery(valid)
                    break
                } catch {
                    #expect(error.code == .failedPrecondition, "\(error)")
                    try declare(from: error.message, h)
                }
            }
            let result = try h.engine.runQuery(valid)
            #expect(result.documents.map(\.stored.path) == expected, "\(q)")
            // The undecoded fast path for exact plans returns the same documents.
            #expect(try h.engine.runQuery(valid, needFields: false).documents.map(\.stored.path) == expected, "fast path: \(q)")
            checked += 1
        }
        #expect(checked > 50)
    }

    /// Collection-group queries below a parent, over documents of the group at several depths (the parent
    /// itself among them, and paths that share the parent's text as a prefix, `p/a` and `p-/a`): `__name__`
    /// filters, cursors and both directions return exactly what the reference evaluator does: the documents
    /// strictly below the parent, in name order, within the bounds.
    @Test(arguments: 0..<8)
    func groupQueriesBelowAParentMatchTheOracle(seed: Int) throws {
        var r = RNG(state: UInt64(seed) &* 104_729 &+ 3)
        let h = try EngineHarness()
        let paths = ["p/a/cg/1", "p/a/cg/1/cg/2", "p/a/cg/1/x/y/cg/3", "p/a/cg/4", "p/a/x/b/cg/5", "p-/a/cg/1", "p/ab/cg/6",
                     "p/a/cg/1/cg/2/cg/7", "cg/x", "cg/x/cg/y", "q/b/cg/8", "p/a/cgx/9", "p/a/cg/\u{0}z"]
        _ = h.commit(paths.map { set($0, m(["n": .int(Int64($0.count))])) })
        let docs: [QueryEvaluator.Doc] = paths.map { (path($0), m(["n": .int(Int64($0.count))])) }
        let parents = ["p/a", "p/a/cg/1", "p/a/cg/1/cg/2", "p-/a", "cg/x", "p/a/x/b", "q/b", "z/z"]
        let refs = paths + ["p/a/cg/0", "p/a/cg/9", "a/a/cg/a", "z/z/cg/z"]
        var checked = 0
        for _ in 0..<120 {
            let parent = path(parents[Int(r.next() % UInt64(parents.count))])
            var q = Query(target: .collectionGroup(id: "cg", parent: parent))
            func ref() -> Value { .reference(path(refs[Int(r.next() % UInt64(refs.count))])) }
            let ops: [Filter.Operator] = [.greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual, .equal]
            if r.next() % 2 == 0 { q.filter = .field(.documentID, ops[Int(r.next() % UInt64(ops.count))], ref()) }
            if r.next() % 2 == 0 { q.orderBy = [Query.Order(.documentID, r.next() % 2 == 0 ? .ascending : .descending)] }
            if r.next() % 2 == 0 { q.startAt = Query.Bound([ref()], inclusive: r.next() % 2 == 0) }
            if r.next() % 3 == 0 { q.endAt = Query.Bound([ref()], inclusive: r.next() % 2 == 0) }
            if r.next() % 3 == 0 { q.limit = Int(r.next() % 4) + 1 }
            guard let valid = try? q.validated() else { continue }
            let expected = QueryEvaluator.results(valid, over: docs).map(\.path)
            #expect(try h.engine.runQuery(valid).documents.map(\.stored.path) == expected, "\(q)")
            #expect(try h.engine.runQuery(valid, needFields: false).documents.map(\.stored.path) == expected, "fast path: \(q)")
            checked += 1
        }
        #expect(checked > 100)
    }

    /// Parses the index spec out of a FAILED_PRECONDITION message and builds it.
    func declare(from message: String, _ h: EngineHarness) throws {
        guard let start = message.firstRange(of: "\"fields\":[")?.upperBound else { throw HearthError(.internal, message) }
        let body = message[start...].prefix { $0 != "}" }.dropLast()
        var fields: [IndexDefinition.Field] = []
        for pair in body.split(separator: "]") {
            let parts = pair.split(separator: "\"").filter { $0 != "," && $0 != ",[" && $0 != "[" }
            guard parts.count >= 2, let mode = IndexDefinition.Mode(rawValue: String(parts[1])) else { continue }
            fields.append(IndexDefinition.Field(try FieldPath.parse(String(parts[0])), mode))
        }
        _ = try h.engine.createIndex(collectionID: "coll", scope: .collection, fields: fields)
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
    }

    @Test func compositeIndexServesEqualityAndOrderExactly() throws {
        let h = try EngineHarness()
        var writes: [Write] = []
        for i in 0..<200 {
            writes.append(set("calls/r\(i)", m(["customerId": .string("c\(i % 10)"), "callDate": .int(Int64(i))])))
        }
        _ = h.commit(writes)
        _ = try h.engine.createIndex(collectionID: "calls", scope: .collection,
                                     fields: [.init(fp("customerId"), .ascending), .init(fp("callDate"), .descending)])
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        var q = Query.collection(try CollectionPath(parsing: "calls"))
        q.filter = .field(fp("customerId"), .equal, "c3")
        q.orderBy = [Query.Order(fp("callDate"), .descending)]
        q.limit = 5
        let r = try h.engine.runQuery(try q.validated())
        #expect(r.documents.map { $0.fields["callDate"] } == [193, 183, 173, 163, 153])
        #expect(r.stats.examined == 5)
        #expect(r.stats.plan.branches[0].exact)
        // A later write is maintained in the index.
        _ = h.commit([set("calls/new", m(["customerId": "c3", "callDate": 1000]))])
        #expect(try h.engine.runQuery(try q.validated()).documents.first?.stored.path == path("calls/new"))
    }
}
