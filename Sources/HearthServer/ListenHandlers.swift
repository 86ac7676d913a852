import HearthEngine
import HearthModel
import HearthProtocol

/// `listen`, `unlisten` (`hello` is in AuthHandlers).
enum ListenHandlers {
    /// `heartbeatMs` is 0 (no heartbeats) or within this range: a floor, so that a client cannot ask for
    /// hundreds of lines a second, and a ceiling of an hour.
    static let heartbeatRange: ClosedRange<Int64> = 100...3_600_000

    static func listen(_ ctx: Context, _ req: Request) throws(HearthError) {
        let path = req.field("path"), query = req.field("query")
        let target: Listener.Target
        let judged: ListenTarget
        switch (path, query) {
        case (.some, nil):
            let p = try req.documentPath()
            target = .document(p)
            judged = .document(p)
        case (nil, let q?):
            guard q.kind == .object else { throw .invalid("field \"query\" must be an object with the query op's fields") }
            let valid = try QueryDecoding.decode(q, context: "query")
            // Snapshots carry whole documents, and a change to any field is a change (as Firestore's listeners):
            // a projection would be silently ignored, so it is refused.
            if valid.select != nil {
                throw .invalid("query.select is not supported by listeners (snapshots carry whole documents); leave it out")
            }
            target = .query(valid)
            judged = .query(valid.asQuery)
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
        let dependencies = try ctx.session.judgeListen(judged)
        // A query no index serves is refused against the catalog in memory, which may hold a change whose commit
        // is not durable yet: the refusal waits for it, as the index answers do, and is not sent if it fails.
        // (A query with an offset is refused for that first, by the hub.) Like any error that follows what the
        // line read (the rules' reads), it goes out only if that read was the published state.
        if case .query(let q) = target, q.offset == 0 {
            do throws(HearthError) { _ = try ctx.engine.prepare(q) } catch where error.code == .failedPrecondition {
                if let t = ctx.ticket, !ctx.engine.gate.confirm(t) { return ctx.waitForPublication() }
                return ctx.refuseFromCatalog(req, error)
            }
        }
        // A first snapshot the engine holds in memory is registered here; any other is read on a reader thread,
        // so that a large result, a resume's replay or a store across the network never holds the loop.
        if ctx.engine.listeners.registersInMemory(target, resumeAfter: resume) {
            if try !ctx.session.subscribe(target, resumeAfter: resume, history: history, id: req.id, ctx: ctx,
                                          guarding: (judged, dependencies)) { ctx.waitForPublication() }
            return
        }
        // What the rules read must be the published state before the listener is indexed at it.
        guard ctx.confirmSnapshot() else { return ctx.waitForPublication() }
        try ctx.session.subscribeOffLoop(target, resumeAfter: resume, history: history, id: req.id, ctx: ctx,
                                         guarding: (judged, dependencies))
    }

    static func unlisten(_ ctx: Context, _ req: Request) throws(HearthError) {
        let sub = try req.string("sub")
        guard ctx.session.unsubscribe(sub) else { throw HearthError(.notFound, "no subscription \"\(sub)\" on this connection") }
        ctx.reply(req) { _ in }
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
