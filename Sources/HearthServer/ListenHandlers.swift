import HearthEngine
import HearthModel
import HearthProtocol

/// `listen`, `unlisten`, `hello`.
enum ListenHandlers {
    /// `heartbeatMs` is 0 (no heartbeats) or within this range: a floor, so that a client cannot ask for
    /// hundreds of lines a second, and a ceiling of an hour.
    static let heartbeatRange: ClosedRange<Int64> = 100...3_600_000

    static func listen(_ ctx: Context, _ req: Request) throws(HearthError) {
        let path = req.field("path"), query = req.field("query")
        let target: Listener.Target
        switch (path, query) {
        case (.some, nil): target = .document(try req.documentPath())
        case (nil, let q?):
            guard q.kind == .object else { throw .invalid("field \"query\" must be an object with the query op's fields") }
            target = .query(try QueryDecoding.decode(q, context: "query"))
        case (nil, nil): throw .invalid("give \"path\" (a document) or \"query\"")
        default: throw .invalid("give either \"path\" or \"query\", not both")
        }
        let resume = try req.optionalInt("resumeAfter", min: 0).map { UInt64($0) }
        var history: UInt64?
        if let h = req.field("history") {
            guard resume != nil else { throw .invalid("field \"history\" goes with \"resumeAfter\" (the history the seq belongs to)") }
            guard h.kind == .string, let id = HistoryToken.decode(h.string!) else {
                throw .invalid("field \"history\" must be the 16 hex digits a listen or hello response gave")
            }
            history = id
        }
        if let hb = try heartbeatMs(req) { ctx.session.setHeartbeat(hb) }
        if try !ctx.session.subscribe(target, resumeAfter: resume, history: history, id: req.id, ctx: ctx) { ctx.waitForPublication() }
    }

    static func unlisten(_ ctx: Context, _ req: Request) throws(HearthError) {
        let sub = try req.string("sub")
        guard ctx.session.unsubscribe(sub) else { throw HearthError(.notFound, "no subscription \"\(sub)\" on this connection") }
        ctx.reply(req) { _ in }
    }

    static func hello(_ ctx: Context, _ req: Request) throws(HearthError) {
        if let hb = try heartbeatMs(req) { ctx.session.setHeartbeat(hb) }
        let seq = ctx.engine.lastDurableSeq
        ctx.reply(req) { w in
            w.key("version"); w.string(HearthVersion.string)
            w.key("seq"); w.uint(seq)
            w.key("history"); w.string(HistoryToken.encode(ctx.engine.historyID))
        }
    }

    /// The `heartbeatMs` field: 0 (off) or milliseconds within `heartbeatRange`; nil when absent.
    static func heartbeatMs(_ req: Request) throws(HearthError) -> UInt64? {
        guard let v = req.field("heartbeatMs") else { return nil }
        let expected = "0 (no heartbeats) or an integer from \(heartbeatRange.lowerBound) to \(heartbeatRange.upperBound) (milliseconds)"
        guard v.kind == .int, let ms = v.int64 else { throw req.mistyped("heartbeatMs", v, expected) }
        guard ms == 0 || heartbeatRange.contains(ms) else { throw .invalid("field \"heartbeatMs\" must be \(expected), got \(ms)") }
        return UInt64(ms)
    }
}
