import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol

/// `query`, `count`, `aggregate`, `explain`: reads of durable state at one published seq, each run wholly on
/// a reader thread (`Context.readOnReader`): the request is decoded and checked there, judged as a list and
/// planned against the reader's snapshot, run, and its response encoded there. The loop thread only frames
/// the line and sends the answer, so queries use every core and no query holds the loop however large.
enum QueryHandlers {
    /// Most aggregations one `aggregate` may ask for (Firestore's limit).
    static let maxAggregations = 5

    static func query(_ ctx: Context, _ req: Request) throws(HearthError) {
        ctx.readOnReader(req) { r, w throws(HearthError) in
            let q = try QueryDecoding.decode(try r.request.body)
            let prepared = try r.prepare(q, needFields: q.select != nil)
            let snapshot = try r.snapshot
            guard prepared.streams else {
                writeDocs(try prepared.run(on: snapshot, codec: r.codec), select: q.select, into: &w)
                return
            }
            // The result is the index range itself: documents go from the cache (or the snapshot) into the
            // response as the scan meets them.
            w.key("docs")
            w.beginArray()
            // The writer moves into the sink and back (`take`): shared, growing it or ending the array would
            // copy the response. It comes back on an error too, which it then carries.
            var sink = ResponseSink(writer: w.take(), scope: r)
            do {
                defer { w = sink.writer.take() }
                _ = try prepared.stream(on: snapshot, cache: r.cache, codec: r.codec, render: DocumentJSON.rendering, into: &sink)
            }
            w.endArray()
            w.key("seq"); w.uint(snapshot.seq)
        }
    }

    /// A response being streamed: each document is one element of the array, and the response may not pass
    /// `--max-response-bytes`.
    struct ResponseSink: RenderedSink {
        var writer: JSONWriter
        let scope: ReaderScope

        var room: Int { writer.room }
        mutating func reserve(_ n: Int) { writer.reserve(n) }
        mutating func write(_ parts: RenderedParts) throws(HearthError) {
            DocumentJSON.write(parts, into: &writer)
            try scope.checkResponseSize(writer)
        }
    }

    static func writeDocs(_ result: QueryResult, select: [FieldPath]?, into w: inout JSONWriter) {
        w.key("docs")
        w.beginArray()
        for d in result.documents {
            if let select {
                DocumentJSON.write(d.stored, fields: QueryEvaluator.project(d.fields, select), into: &w)
            } else {
                DocumentJSON.write(d.stored, into: &w)
            }
        }
        w.endArray()
        w.key("seq"); w.uint(result.seq)
    }

    static func count(_ ctx: Context, _ req: Request) throws(HearthError) {
        ctx.readOnReader(req) { r, w throws(HearthError) in
            let q = try QueryDecoding.decode(try r.request.body)
            let result = try r.prepare(q).aggregate([.count], on: try r.snapshot, codec: r.codec)
            w.key("count"); w.value(result.values[0])
            w.key("seq"); w.uint(result.seq)
        }
    }

    static func aggregate(_ ctx: Context, _ req: Request) throws(HearthError) {
        ctx.readOnReader(req) { r, w throws(HearthError) in try aggregate(r, into: &w) }
    }

    private static func aggregate(_ r: ReaderScope, into w: inout JSONWriter) throws(HearthError) {
        let req = try r.request
        let q = try QueryDecoding.decode(try req.object("query"), context: "query")
        let spec = try req.object("aggregations")
        var aliases: [String] = []
        var aggregations: [Aggregation] = []
        for m in spec.members {
            // An alias names a field of the result, as in Firestore: a field name's rules apply.
            if let problem = ValueCodec.fieldNameProblem(m.key) { throw .invalid("aggregations: alias: \(problem)") }
            let a = m.value
            guard a.kind == .object, a.count == 1, let kind = a.members.first(where: { _ in true }) else {
                throw .invalid("aggregations.\(m.key) must be {\"count\":{}}, {\"sum\":\"field\"} or {\"avg\":\"field\"}")
            }
            switch kind.key {
            case "count":
                guard kind.value.kind == .object else { throw .invalid("aggregations.\(m.key).count must be {}") }
                if let extra = kind.value.members.first(where: { _ in true })?.key {
                    throw .invalid(extra == "upTo"
                        ? "aggregations.\(m.key).count: upTo is not supported; give the query a limit instead"
                        : "aggregations.\(m.key).count: unknown field \"\(extra)\" (count takes none: {})")
                }
                aggregations.append(.count)
            case "sum", "avg":
                guard kind.value.kind == .string else { throw .invalid("aggregations.\(m.key).\(kind.key) must be a field path") }
                let field: FieldPath
                do { field = try FieldPath.parse(kind.value.string!) } catch { throw .invalid("aggregations.\(m.key): \(error.message)") }
                aggregations.append(kind.key == "sum" ? .sum(field) : .avg(field))
            default:
                throw .invalid("aggregations.\(m.key): unknown aggregation \"\(kind.key)\" (count, sum, avg)")
            }
            aliases.append(m.key)
        }
        guard !aggregations.isEmpty else { throw .invalid("field \"aggregations\" must not be empty") }
        guard aggregations.count <= maxAggregations else {
            throw .invalid("field \"aggregations\" holds at most \(maxAggregations) aggregations (got \(aggregations.count))")
        }
        let result = try r.prepare(q).aggregate(aggregations, on: try r.snapshot, codec: r.codec)
        w.key("result")
        w.beginObject()
        for (alias, v) in zip(aliases, result.values) { w.key(alias); w.value(v) }
        w.endObject()
        w.key("seq"); w.uint(result.seq)
    }

    static func explain(_ ctx: Context, _ req: Request) throws(HearthError) {
        ctx.readOnReader(req) { r, w throws(HearthError) in
            let q = try QueryDecoding.decode(try r.request.body)
            let prepared = try r.prepare(q, needFields: q.select != nil)
            let snapshot = try r.snapshot
            let started = EventLoop.hrtimeNanos()
            let result = try prepared.run(on: snapshot, codec: r.codec)
            writePlan(result, micros: (EventLoop.hrtimeNanos() - started) / 1000, into: &w)
        }
    }

    static func writePlan(_ r: QueryResult, micros: UInt64, into w: inout JSONWriter) {
        w.key("plan")
        w.beginObject()
        w.key("branches")
        w.beginArray()
        for b in r.stats.plan.branches {
            w.beginObject()
            w.key("index"); w.string(b.index.description)
            w.key("ranges"); w.int(Int64(b.ranges.count))
            w.key("reverse"); w.bool(b.reverse)
            w.key("exact"); w.bool(b.exact)
            w.endObject()
        }
        w.endArray()
        w.key("examined"); w.int(Int64(r.stats.examined))
        w.key("returned"); w.int(Int64(r.stats.returned))
        w.key("micros"); w.uint(micros)
        w.endObject()
        w.key("seq"); w.uint(r.seq)
    }
}
