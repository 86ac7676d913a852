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

/// A query planned on the loop thread (the plan needs the index catalog), ready to run against any
/// consistent reads: the store itself on the loop thread, or a `StoreSnapshot` on a reader thread. Running it
/// touches no engine state.
public struct PreparedQuery: Sendable {
    public let query: ValidQuery
    public let plan: QueryPlan
    /// False: the caller promises not to read `ResultDocument.fields` (an exact single-range plan then
    /// returns stored documents without decoding them).
    public let needFields: Bool

    /// Plans `query` against `indexes` (any thread: a reader plans with `IndexCatalogView.open`'s catalog).
    public init(_ query: ValidQuery, indexes: [IndexDefinition], needFields: Bool = true) throws(HearthError) {
        self.query = query
        self.plan = try QueryPlanner.plan(query.execution.query, indexes: indexes)
        self.needFields = needFields
    }

    /// Runs against `snapshot`: the result is exact at the snapshot's seq.
    public func run(on snapshot: any StoreSnapshot, codec: any DocumentCodec) throws(HearthError) -> QueryResult {
        let (rows, examined) = try QueryExecution.run(self, rollback: [:], reads: snapshot, codec: codec)
        return QueryResult(documents: rows, seq: snapshot.seq, stats: QueryStats(plan: plan, examined: examined, returned: rows.count))
    }

    /// True when the result is exactly one index range scanned in order and the caller reads no decoded
    /// fields: `stream` can then hand out the documents as the scan meets them.
    public var streams: Bool {
        !needFields && !query.execution.reverseResults && plan.branches.count == 1 && plan.branches[0].exact
            && plan.branches[0].ranges.count <= 1
    }

    /// For a query that `streams`: writes each result document, rendered (`render`'s rendering: the server's
    /// wire form), into `sink` in result order, exact at the snapshot's seq like `run`, without building the
    /// result. The snapshot's index is visited for entries only (`visitIndexEntries`: nothing is built for an
    /// entry whose document the cache holds). Each document's rendering comes from `cache` when it holds the
    /// version at the snapshot's seq (copied into the sink inside the cache's lock, into room made before),
    /// else the document is rendered (from the cache, or read from the snapshot, verified and offered to the
    /// cache) and the rendering kept with the cached version. Returns how many documents it wrote.
    public func stream(on snapshot: any StoreSnapshot, cache: DocumentCache?, codec: any DocumentCodec,
                       render: (StoredDocument) -> DocumentRendering, into sink: inout some RenderedSink) throws(HearthError) -> Int {
        precondition(streams, "stream() on a query that does not stream")
        let branch = plan.branches[0]
        guard let range = branch.ranges.first else { return 0 }
        let q = query.execution.query
        let seq = snapshot.seq
        var skip = q.offset
        var remaining = q.limit.map { $0 + q.offset } ?? Int.max
        var lower = range.lower, upper = range.upper
        var returned = 0
        var key = DocumentCache.Key()
        var lastKey: [UInt8] = []
        while remaining > 0 {
            let page = min(remaining, 512)
            var seen = 0
            try snapshot.visitIndexEntries(from: lower, to: upper, reverse: branch.reverse, limit: page) { (entry) throws(HearthError) -> Bool in
                seen += 1
                if seen == page { lastKey = Array(entry.key) }
                var found = DocumentCache.Lookup.miss
                if let cache, key.assign(collection: entry.collection, id: entry.id) {
                    let wanted = skip == 0
                    while true {
                        found = try cache.read(key, at: seq, room: wanted ? sink.room - 1 : Int.max) { (parts) throws(HearthError) in
                            if wanted { try sink.write(parts) }
                        }
                        guard case .needsRoom(let n) = found else { break }
                        sink.reserve(n + 1)                  // outside the lock; then read again
                    }
                }
                switch found {
                case .rendered, .needsRoom:
                    break
                case .unrendered(let doc):
                    if skip == 0 {
                        let rendering = render(doc)
                        try Self.write(rendering, around: doc.data, into: &sink)
                        cache?.attach(rendering, to: key, version: doc.seq)
                    }
                case .miss:
                    guard let read = try snapshot.get(try entry.path()) else { return true }   // an entry without its document
                    try codec.verifyStored(read)
                    let rendering = skip == 0 ? render(read) : nil
                    cache?.offer(read, readAt: seq, rendering: rendering)
                    if let rendering { try Self.write(rendering, around: read.data, into: &sink) }
                }
                remaining -= 1
                if skip > 0 { skip -= 1 } else { returned += 1 }
                return true
            }
            guard seen == page else { break }
            if branch.reverse { upper = lastKey } else { lower = IndexKey.immediateSuccessor(lastKey) }
        }
        return returned
    }

    private static func write(_ rendering: DocumentRendering, around data: [UInt8], into sink: inout some RenderedSink) throws(HearthError) {
        sink.reserve(rendering.renderedCount(around: data) + 1)
        try rendering.withParts(around: data) { (parts) throws(HearthError) in try sink.write(parts) }
    }

    /// Computes `aggregations` over the query's results at the snapshot's seq. A lone count over an exact
    /// single-range plan reads index entries only (no document is fetched).
    public func aggregate(_ aggregations: [Aggregation], on snapshot: any StoreSnapshot,
                          codec: any DocumentCodec) throws(HearthError) -> (values: [Value], seq: UInt64) {
        if let n = try QueryExecution.countFromIndex(self, aggregations, reads: snapshot) { return ([.int(Int64(n))], snapshot.seq) }
        let r = try run(on: snapshot, codec: codec)
        return (AggregateEvaluator.compute(aggregations, over: r.documents.map(\.fields)), r.seq)
    }
}

extension Engine {
    /// Plans `query` for a run off the loop thread (`PreparedQuery.run(on:codec:)`).
    public func prepare(_ query: ValidQuery, needFields: Bool = true) throws(HearthError) -> PreparedQuery {
        thread.check("Engine.prepare")
        return try PreparedQuery(query, indexes: indexes, needFields: needFields)
    }

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
        let p = try prepare(query, needFields: needFields)
        let (rows, examined) = try publishedReads { (reads, ahead) throws(HearthError) in
            // The listener's rollback is the older state: it wins where both name a document.
            var versions = ahead
            for (path, version) in rollback { versions[path] = version }
            return try QueryExecution.run(p, rollback: versions, reads: reads, codec: codec)
        }
        return QueryResult(documents: rows, seq: lastDurableSeq, stats: QueryStats(plan: p.plan, examined: examined, returned: rows.count))
    }

    /// Computes aggregations over a query's results (after cursors, offset and limit).
    public func runAggregate(_ query: ValidQuery, _ aggregations: [Aggregation]) throws(HearthError) -> (values: [Value], seq: UInt64) {
        let p = try prepare(query)
        if let n = try publishedReads({ (reads, ahead) throws(HearthError) -> Int? in
            // Index entries of documents changed after the published seq would be counted as they are now.
            ahead.isEmpty ? try QueryExecution.countFromIndex(p, aggregations, reads: reads) : nil
        }) {
            return ([.int(Int64(n))], lastDurableSeq)
        }
        let r = try runQuery(query)
        return (AggregateEvaluator.compute(aggregations, over: r.documents.map(\.fields)), r.seq)
    }
}

/// Executes a prepared query over `StoreReads`: scans the index ranges (stopping early when the plan is
/// exact), checks every fetched document against the whole query, sorts, applies offset and limit (or
/// limitToLast). Pure: any thread, any consistent reads.
enum QueryExecution {
    static func run(_ p: PreparedQuery, rollback: [DocumentPath: StoredDocument?], reads store: any StoreReads,
                    codec: any DocumentCodec) throws(HearthError) -> (rows: [ResultDocument], examined: Int) {
        let plan = p.plan
        let (q, reverseResults) = p.query.execution
        if !p.needFields, rollback.isEmpty, plan.branches.count == 1, plan.branches[0].exact, plan.branches[0].ranges.count <= 1 {
            return try runExact(plan, q, store: store, codec: codec, reverseResults: reverseResults)
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
                    let hits = try store.scanIndex(from: lower, to: upper, reverse: branch.reverse, limit: page)
                    examined += hits.count
                    for hit in hits {
                        let doc = hit.document
                        if found[doc.path] != nil { matchedHere += 1; continue }
                        if rollback[doc.path] != nil { continue }
                        // Decoding verifies (`DocumentCodec.decode` fails for what `verify` rejects).
                        let fields = try codec.decodeStored(doc)
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
            let fields = try codec.decodeStored(doc)
            if q.matchesWithinCursors(path, fields) { found[path] = ResultDocument(stored: doc, fields: fields) }
        }
        var rows = Array(found.values)
        if plan.branches.count > 1 || plan.branches.contains(where: { $0.ranges.count > 1 }) || !rollback.isEmpty || rows.count > 1 {
            rows.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
        }
        var window = rows.dropFirst(min(q.offset, rows.count))
        if let n = q.limit { window = window.prefix(n) }
        let result = reverseResults ? Array(window.reversed()) : Array(window)
        return (result, examined)
    }

    /// An exact single-range plan: the index yields exactly the results, in order; nothing to decode.
    /// Each document is verified before it can be served (it is not decoded).
    private static func runExact(_ plan: QueryPlan, _ q: ValidQuery, store: any StoreReads, codec: any DocumentCodec,
                                 reverseResults: Bool) throws(HearthError) -> (rows: [ResultDocument], examined: Int) {
        let branch = plan.branches[0]
        var rows: [ResultDocument] = []
        var examined = 0
        if let range = branch.ranges.first {
            let skip = q.offset
            let want = q.limit.map { $0 + skip } ?? Int.max
            var lower = range.lower, upper = range.upper
            while rows.count < want {
                let page = min(want - rows.count, 512)
                let hits = try store.scanIndex(from: lower, to: upper, reverse: branch.reverse, limit: page)
                examined += hits.count
                for hit in hits {
                    try codec.verifyStored(hit.document)
                    rows.append(ResultDocument(stored: hit.document, fields: MapValue()))
                }
                guard hits.count == page, let last = hits.last else { break }
                if branch.reverse { upper = last.key } else { lower = IndexKey.immediateSuccessor(last.key) }
            }
            rows.removeFirst(min(skip, rows.count))
        }
        if reverseResults { rows.reverse() }
        return (rows, examined)
    }


    /// A lone `count` over an exact single-range plan, from index entries alone (cursors and filters are in
    /// the range; offset and limit applied to the count); nil when the query needs its documents.
    static func countFromIndex(_ p: PreparedQuery, _ aggregations: [Aggregation], reads: any StoreReads) throws(HearthError) -> Int? {
        guard aggregations == [.count], p.plan.branches.count == 1, p.plan.branches[0].exact,
              p.plan.branches[0].ranges.count == 1 else { return nil }
        let (q, _) = p.query.execution
        let r = p.plan.branches[0].ranges[0]
        let total = try reads.countIndex(from: r.lower, to: r.upper)
        let afterOffset = max(0, total - q.offset)
        return q.limit.map { min($0, afterOffset) } ?? afterOffset
    }
}
