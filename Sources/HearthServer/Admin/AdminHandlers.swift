import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// Administration ops (all `.admin`: only the admin while rules are enforced): `stats`, `listCollections`,
/// `deleteRecursive`, `ttl`, `compact`. docs/protocol.md and docs/operations.md describe them.
enum AdminHandlers {
    /// Largest `batchSize` of a recursive delete (and its default).
    static let maxDeleteBatch = 500

    /// Over a store across the network the store's own figures are read on a reader thread (the rest is the
    /// loop's, taken when asked).
    static func stats(_ ctx: Context, _ req: Request) throws(HearthError) {
        let report = ctx.server.statsReport()
        let deletes = ctx.server.jobs.runningDeletes, compacting = ctx.server.jobs.compacting
        let write: @Sendable (StatsReport, inout JSONWriter) -> Void = { report, w in
            report.writeJSON(into: &w)
            w.key("jobs")
            w.beginObject()
            w.key("recursiveDeletes"); w.int(Int64(deletes))
            w.key("compacting"); w.bool(compacting)
            w.endObject()
        }
        guard ctx.engine.storeIsRemote else { return ctx.reply(req) { w in write(report, &w) } }
        let store = ctx.server.store
        ctx.readOnReader(req, reparsing: false) { _, w in
            var fresh = report
            fresh.store = StoreFigures.read(store)
            write(fresh, &w)
        }
    }

    /// `{op:"listCollections"[,path:DOC]}`: `{collections:[ids sorted]}`, read on a reader thread.
    static func listCollections(_ ctx: Context, _ req: Request) throws(HearthError) {
        let parent: DocumentPath? = req.field("path") == nil ? nil : try req.documentPath()
        let admin = try ctx.server.jobs.administration(for: "list collections")
        ctx.readOffLoop(req) { _, w throws(HearthError) in
            let ids = try admin.collectionIDs(under: parent)
            w.key("collections")
            w.beginArray()
            for id in ids { w.string(id) }
            w.endArray()
        }
    }

    /// `{op:"deleteRecursive",path[,batchSize][,progress:true]}`: deletes a collection or a document and
    /// everything below it, `batchSize` documents per commit; answers `{deleted}` when done, and with
    /// `progress` pushes `{"type":"progress","id":..,"deleted":N}` after each batch. A following read on the
    /// connection waits for it, as for a write.
    static func deleteRecursive(_ ctx: Context, _ req: Request) throws(HearthError) {
        let text = try req.string("path")
        let root: ResourcePath
        do throws(HearthError) {
            root = try ResourcePath.parse(text)
        } catch {
            throw .invalid("field \"path\": \(error.message)")
        }
        guard !root.segments.isEmpty else { throw .invalid("field \"path\" must name a collection or a document, not the root") }
        let batchSize = Int(try req.optionalInt("batchSize", min: 1, max: Int64(maxDeleteBatch)) ?? Int64(maxDeleteBatch))
        let wantsProgress = try req.optionalBool("progress") ?? false
        let session = ctx.session, dispatcher = ctx.dispatcher, id = req.id, op = req.op, server = ctx.server
        let timing = ctx.deferTiming()
        var slot: ResponseQueue.Slot?
        try ctx.server.jobs.deleteRecursive(root, batchSize: batchSize, progress: { n in
            guard wantsProgress, !session.closed else { return }
            var w = JSONWriter(capacity: 96)
            w.beginObject()
            w.key("type"); w.string("progress")
            if let id { w.key("id"); w.raw(id) }
            w.key("deleted"); w.int(Int64(n))
            w.endObject()
            w.newline()
            session.conn.send(w.bytes)
        }, done: { result in
            guard let slot else { return }
            let line: [UInt8]
            switch result {
            case .success(let n):
                // The seq its last batch published: a node that forwarded it answers once it has published it.
                let seq = server.engine.lastDurableSeq
                line = dispatcher.okLine(id) { w in
                    w.key("deleted"); w.int(Int64(n))
                    w.key("seq"); w.uint(seq)
                }
            case .failure(let e): line = dispatcher.errorLine(e.prefixed(op), id: id)
            }
            server.requestFinished(timing, failed: result.isFailure, id: id, session: session)
            session.endWrite(slot, response: line)
        })
        slot = session.beginWrite()
    }

    /// `{op:"ttl",action:"set"|"remove"|"list"[,collectionGroup][,field]}`.
    static func ttl(_ ctx: Context, _ req: Request) throws(HearthError) {
        let action = try req.string("action")
        let engine = ctx.engine
        let used: [String: Set<String>] = ["set": ["collectionGroup", "field"], "remove": ["collectionGroup"], "list": []]
        if let fields = used[action] { try req.refuseFields(notIn: fields, for: action) }
        switch action {
        case "list":
            let policies = engine.ttlPolicies
            ctx.replyFromCatalog(req) { w in
                w.key("policies")
                w.beginArray()
                for p in policies {
                    w.beginObject()
                    w.key("collectionGroup"); w.string(p.collectionGroup)
                    w.key("field"); w.string(p.field.description)
                    w.endObject()
                }
                w.endArray()
            }
        case "set", "remove":
            let group = try req.string("collectionGroup")
            var slot: ResponseQueue.Slot?
            let session = ctx.session, dispatcher = ctx.dispatcher, id = req.id, op = req.op
            let completion: (Result<CommitOutcome, HearthError>) -> Void = { result in
                guard let slot else { return }
                let line: [UInt8]
                switch result {
                case .success(let o): line = dispatcher.okLine(id) { w in w.key("seq"); w.uint(o.seq) }
                case .failure(let e): line = dispatcher.errorLine(e.prefixed(op), id: id)
                }
                session.endWrite(slot, response: line)
            }
            if action == "set" {
                let fieldText = try req.string("field")
                let field: FieldPath
                do { field = try FieldPath.parse(fieldText) } catch { throw .invalid("field \"field\": \(error.message)") }
                guard try engine.setTTL(TTLPolicy(collectionGroup: group, field: field), completion: completion) else {
                    // Already in force: once durable, at the seq published then.
                    return ctx.replyFromCatalog(req) { w in w.key("seq"); w.uint(engine.lastDurableSeq) }
                }
            } else {
                do {
                    try engine.removeTTL(collectionGroup: group, completion: completion)
                } catch {
                    guard error.code == .notFound else { throw error }
                    return ctx.refuseFromCatalog(req, error)   // removed by a commit perhaps not yet durable
                }
            }
            slot = session.beginWrite()
        default:
            throw .invalid("field \"action\" must be set, remove or list (got \"\(action)\")")
        }
    }

    /// `{op:"compact"}`: gives the space of deleted data back to the filesystem; answers
    /// `{method,bytesBefore,bytesAfter,ms}` when done.
    static func compact(_ ctx: Context, _ req: Request) throws(HearthError) {
        let session = ctx.session, dispatcher = ctx.dispatcher, id = req.id, op = req.op
        let started = ServerMetrics.nanos()
        var slot: ResponseQueue.Slot?
        try ctx.server.jobs.compact { result in
            guard let slot else { return }
            let line: [UInt8]
            switch result {
            case .success(let r):
                let ms = Double((ServerMetrics.nanos() &- started) / 1000) / 1000
                line = dispatcher.okLine(id) { w in
                    w.key("method"); w.string(r.method)
                    w.key("bytesBefore"); w.int(r.bytesBefore)
                    w.key("bytesAfter"); w.int(r.bytesAfter)
                    w.key("ms"); w.double(ms)
                }
            case .failure(let e): line = dispatcher.errorLine(e.prefixed(op), id: id)
            }
            session.offLoopReadDone(slot, line: line, seq: 0)
        }
        // The connection's next lines wait for it, as for a backup (a listen's first snapshot must not come
        // before an earlier response).
        slot = session.beginOffLoopRead()
    }
}
