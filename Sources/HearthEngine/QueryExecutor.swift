import HearthModel
import HearthStorage

/// A document in a query result: as stored (to splice into responses) and decoded.
public struct ResultDocument: Sendable {
    public var stored: StoredDocument
    public var fields: MapValue
}

/// What a query did: its plan, the index entries it examined, the documents it returned.
public struct QueryStats: Sendable {
    public var plan: QueryPlan
    public var examined: Int
    public var returned: Int
}

public struct QueryResult: Sendable {
    public var documents: [ResultDocument]
    /// The commit the result reflects (every commit up to it, none after).
    public var seq: UInt64
    public var stats: QueryStats
}

extension Engine {
    /// Runs a validated query against durable state at `lastDurableSeq`: plans it, scans the index ranges
    /// (stopping early when the plan is exact), checks every fetched document against the whole query,
    /// sorts, and applies offset and limit (or limitToLast). A damaged document the scan meets (one the
    /// store's checksum or the codec rejects) fails the whole query with DATA_LOSS naming it: a result
    /// without it would silently be wrong.
    /// With `needFields` false the caller promises not to read `ResultDocument.fields`: an exact
    /// single-range plan then returns stored documents without decoding them (the ranges already enforce
    /// every filter and cursor, and the index order is the query order).
    public func runQuery(_ query: ValidQuery, needFields: Bool = true) throws(HearthError) -> QueryResult {
        try runQuery(query, rollback: [:], needFields: needFields)
    }

    /// `runQuery` over durable state with some documents replaced: `rollback[path]` is the version to use
    /// instead of the stored one (nil: absent). Listeners use it to see the state as of an earlier seq.
    func runQuery(_ query: ValidQuery, rollback: [DocumentPath: StoredDocument?], needFields: Bool = true) throws(HearthError) -> QueryResult {
        thread.check("Engine.runQuery")
        let (q, reverseResults) = query.execution
        let plan = try QueryPlanner.plan(q, indexes: indexes)
        if !needFields, rollback.isEmpty, plan.branches.count == 1, plan.branches[0].exact, plan.branches[0].ranges.count <= 1 {
            return try runExact(plan, q, reverseResults: reverseResults)
        }
        let need = q.limit.map { $0 + q.offset + rollback.count }
        var found: [DocumentPath: ResultDocument] = [:]
        var examined = 0

        for branch in plan.branches {
            for range in branch.ranges {
                var lower = range.lower
                var upper = range.upper
                var matchedHere = 0
                let page = branch.exact ? max(1, min(need ?? 512, 512)) : 512
                scanning: while true {
                    let hits = try storeRead { (s) throws(HearthError) in
                        try s.scanIndex(from: lower, to: upper, reverse: branch.reverse, limit: page)
                    }
                    examined += hits.count
                    for hit in hits {
                        let doc = hit.document
                        if found[doc.path] != nil { matchedHere += 1; continue }
                        if rollback[doc.path] != nil { continue }
                        // Decoding verifies (`DocumentCodec.decode` fails for what `verify` rejects).
                        let fields = try decodeStored(doc)
                        guard q.matchesWithinCursors(doc.path, fields) else { continue }
                        found[doc.path] = ResultDocument(stored: doc, fields: fields)
                        matchedHere += 1
                        // A range yields documents in query order: its first `need` matches are enough.
                        if let need, matchedHere >= need { break scanning }
                    }
                    guard hits.count == page, let last = hits.last else { break }
                    if branch.reverse { upper = last.key } else { lower = IndexKey.immediateSuccessor(last.key) }
                }
            }
        }

        for (path, version) in rollback {
            guard let doc = version else { continue }
            let fields = try decodeStored(doc)
            if q.matchesWithinCursors(path, fields) { found[path] = ResultDocument(stored: doc, fields: fields) }
        }
        var rows = Array(found.values)
        if plan.branches.count > 1 || plan.branches.contains(where: { $0.ranges.count > 1 }) || !rollback.isEmpty || rows.count > 1 {
            rows.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
        }
        var window = rows.dropFirst(min(q.offset, rows.count))
        if let n = q.limit { window = window.prefix(n) }
        let result = reverseResults ? Array(window.reversed()) : Array(window)
        return QueryResult(documents: result, seq: lastDurableSeq,
                           stats: QueryStats(plan: plan, examined: examined, returned: result.count))
    }

    /// An exact single-range plan: the index yields exactly the results, in order; nothing to decode, but
    /// each document is verified before it can be served.
    private func runExact(_ plan: QueryPlan, _ q: ValidQuery, reverseResults: Bool) throws(HearthError) -> QueryResult {
        let branch = plan.branches[0]
        var rows: [ResultDocument] = []
        var examined = 0
        if let range = branch.ranges.first {
            let skip = q.offset
            let want = q.limit.map { $0 + skip } ?? Int.max
            var lower = range.lower, upper = range.upper
            while rows.count < want {
                let page = min(want - rows.count, 512)
                let hits = try storeRead { (s) throws(HearthError) in
                    try s.scanIndex(from: lower, to: upper, reverse: branch.reverse, limit: page)
                }
                examined += hits.count
                for hit in hits {
                    try verified(hit.document)
                    rows.append(ResultDocument(stored: hit.document, fields: MapValue()))
                }
                guard hits.count == page, let last = hits.last else { break }
                if branch.reverse { upper = last.key } else { lower = IndexKey.immediateSuccessor(last.key) }
            }
            rows.removeFirst(min(skip, rows.count))
        }
        if reverseResults { rows.reverse() }
        return QueryResult(documents: rows, seq: lastDurableSeq, stats: QueryStats(plan: plan, examined: examined, returned: rows.count))
    }

    /// Computes aggregations over a query's results (after cursors, offset and limit).
    public func runAggregate(_ query: ValidQuery, _ aggregations: [Aggregation]) throws(HearthError) -> (values: [Value], seq: UInt64) {
        let r = try runQuery(query)
        return (AggregateEvaluator.compute(aggregations, over: r.documents.map(\.fields)), r.seq)
    }
}
