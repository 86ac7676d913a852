import HearthEngine
import HearthModel
import HearthProtocol

/// `listen`, `unlisten`, `hello`.
enum ListenHandlers {
    static let maxHeartbeatMs: Int64 = 3_600_000

    static func listen(_ ctx: Context, _ req: Request) throws(HearthError) {
        let path = req.field("path"), query = req.field("query")
        let target: Listener.Target
        switch (path, query) {
        case (.some, nil): target = .document(try req.documentPath())
        case (nil, let q?):
            guard q.kind == .object else { throw .invalid("listen: field \"query\" must be an object with the query op's fields") }
            target = .query(try QueryDecoding.decode(q, context: "listen: query"))
        case (nil, nil): throw .invalid("listen: give \"path\" (a document) or \"query\"")
        default: throw .invalid("listen: give either \"path\" or \"query\", not both")
        }
        let resume = try req.optionalInt("resumeAfter", min: 0).map { UInt64($0) }
        var history: UInt64?
        if let h = req.field("history") {
            guard resume != nil else { throw .invalid("listen: field \"history\" goes with \"resumeAfter\" (the history the seq belongs to)") }
            guard h.kind == .string, let id = HistoryToken.decode(h.string!) else {
                throw .invalid("listen: field \"history\" must be the 16 hex digits a listen or hello response gave")
            }
            history = id
        }
        if let hb = try req.optionalInt("heartbeatMs", min: 0, max: maxHeartbeatMs) { ctx.session.setHeartbeat(UInt64(hb)) }
        if try !ctx.session.subscribe(target, resumeAfter: resume, history: history, id: req.id, ctx: ctx) { ctx.waitForPublication() }
    }

    static func unlisten(_ ctx: Context, _ req: Request) throws(HearthError) {
        let sub = try req.string("sub")
        guard ctx.session.unsubscribe(sub) else { throw HearthError(.notFound, "unlisten: no subscription \"\(sub)\" on this connection") }
        ctx.reply(req) { _ in }
    }

    static func hello(_ ctx: Context, _ req: Request) throws(HearthError) {
        if let hb = try req.optionalInt("heartbeatMs", min: 0, max: maxHeartbeatMs) { ctx.session.setHeartbeat(UInt64(hb)) }
        let seq = ctx.engine.lastDurableSeq
        ctx.reply(req) { w in
            w.key("version"); w.string(HearthVersion.string)
            w.key("seq"); w.uint(seq)
            w.key("history"); w.string(HistoryToken.encode(ctx.engine.historyID))
        }
    }
}
