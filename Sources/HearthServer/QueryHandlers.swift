import HearthEngine
import HearthModel
import HearthProtocol

/// `query`, `count`, `aggregate`, `explain`: reads of durable state at one seq.
enum QueryHandlers {
    /// Most aggregations one `aggregate` may ask for (Firestore's limit).
    static let maxAggregations = 5

    static func query(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(req.body)
        let result = try ctx.engine.runQuery(q, needFields: q.select != nil)
        ctx.reply(req) { w in
            w.key("docs")
            w.beginArray()
            for d in result.documents {
                if let select = q.select {
                    DocumentJSON.write(d.stored, fields: QueryEvaluator.project(d.fields, select), into: &w)
                } else {
                    DocumentJSON.write(d.stored, into: &w)
                }
            }
            w.endArray()
            w.key("seq"); w.uint(result.seq)
        }
    }

    static func count(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(req.body)
        let r = try ctx.engine.runAggregate(q, [.count])
        ctx.reply(req) { w in
            w.key("count"); w.value(r.values[0])
            w.key("seq"); w.uint(r.seq)
        }
    }

    static func aggregate(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(try req.object("query"), context: "query")
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
        let r = try ctx.engine.runAggregate(q, aggregations)
        ctx.reply(req) { w in
            w.key("result")
            w.beginObject()
            for (alias, v) in zip(aliases, r.values) { w.key(alias); w.value(v) }
            w.endObject()
            w.key("seq"); w.uint(r.seq)
        }
    }

    static func explain(_ ctx: Context, _ req: Request) throws(HearthError) {
        let q = try QueryDecoding.decode(req.body)
        let started = ctx.server.loop.hrtimeNanos()
        let r = try ctx.engine.runQuery(q, needFields: q.select != nil)
        let micros = (ctx.server.loop.hrtimeNanos() - started) / 1000
        ctx.reply(req) { w in
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
}
