import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol

/// `query`, `count`, `aggregate`, `explain`: reads of durable state at one published seq. A query that reads
/// few index entries (an exact plan with a small limit) runs on the loop thread; every other one, and every
/// count and aggregation, runs on a reader thread against a snapshot (`Context.readOffLoop`), so no read holds
/// the loop for long however large the collection.
enum QueryHandlers {
    /// Most aggregations one `aggregate` may ask for (Firestore's limit).
    static let maxAggregations = 5

    /// The most index entries (limit + offset) an exact plan may read on the loop thread.
    static let loopReadLimit = 100

    /// True when the query is cheap enough to run on the loop: one exact branch reading at most
    /// `loopReadLimit` entries.
    static func runsOnLoop(_ p: PreparedQuery) -> Bool {
        let q = p.query.execution.query
        guard p.plan.branches.count == 1, p.plan.branches[0].exact, let limit = q.limit else { return false }
        return limit + q.offset <= loopReadLimit
    }

    static func query(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(req.body)
        try ctx.judgeList(q)
        let prepared = try ctx.engine.prepare(q, needFields: q.select != nil)
        guard runsOnLoop(prepared) else {
            let codec = ctx.engine.codec
            ctx.readOffLoop(req) { snapshot, w throws(HearthError) in
                writeDocs(try prepared.run(on: snapshot, codec: codec), select: q.select, into: &w)
            }
            return
        }
        let result = try ctx.engine.run(prepared)
        ctx.reply(req) { w in writeDocs(result, select: q.select, into: &w) }
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
        let q = try QueryDecoding.decode(req.body)
        try ctx.judgeList(q)
        let prepared = try ctx.engine.prepare(q)
        let codec = ctx.engine.codec
        ctx.readOffLoop(req) { snapshot, w throws(HearthError) in
            let r = try prepared.aggregate([.count], on: snapshot, codec: codec)
            w.key("count"); w.value(r.values[0])
            w.key("seq"); w.uint(r.seq)
        }
    }

    static func aggregate(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(try req.object("query"), context: "query")
        try ctx.judgeList(q)
        let spec = try req.object("aggregations")
        var aliases: [String] = []
        var aggregations: [Aggregation] = []
        for m in spec.members {
            let a = m.value
            guard a.kind == .object, a.count == 1, let kind = a.members.first(where: { _ in true }) else {
                throw .invalid("aggregations.\(m.key) must be {\"count\":{}}, {\"sum\":\"field\"} or {\"avg\":\"field\"}")
            }
            switch kind.key {
            case "count": aggregations.append(.count)
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
        let prepared = try ctx.engine.prepare(q)
        let codec = ctx.engine.codec
        let requested = aggregations
        let names = aliases
        ctx.readOffLoop(req) { snapshot, w throws(HearthError) in
            let r = try prepared.aggregate(requested, on: snapshot, codec: codec)
            w.key("result")
            w.beginObject()
            for (alias, v) in zip(names, r.values) { w.key(alias); w.value(v) }
            w.endObject()
            w.key("seq"); w.uint(r.seq)
        }
    }

    static func explain(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(req.body)
        try ctx.judgeList(q)
        let prepared = try ctx.engine.prepare(q, needFields: q.select != nil)
        guard runsOnLoop(prepared) else {
            let codec = ctx.engine.codec
            ctx.readOffLoop(req) { snapshot, w throws(HearthError) in
                let started = EventLoop.hrtimeNanos()
                let r = try prepared.run(on: snapshot, codec: codec)
                writePlan(r, micros: (EventLoop.hrtimeNanos() - started) / 1000, into: &w)
            }
            return
        }
        let started = EventLoop.hrtimeNanos()
        let r = try ctx.engine.run(prepared)
        let micros = (EventLoop.hrtimeNanos() - started) / 1000
        ctx.reply(req) { w in writePlan(r, micros: micros, into: &w) }
    }

    static func writePlan(_ r: QueryResult, micros: UInt64, into w: inout JSONWriter) {
        w.key("plan")
        w.beginObject()
        w.key("branches")
        w.beginArray()
        for b in r.stats.plan.branches {
            w.beginObject()
            w.key("index"); w.string(b.index)
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
