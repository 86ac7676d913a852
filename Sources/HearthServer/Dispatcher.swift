import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// Turns one request line into one response: parses it, checks the generic rules (an object, no key twice
/// in any object, a known op, a valid id, only known fields), decides whether a read may run now (behind the
/// connection's own writes, and through the snapshot gate), and runs the command's handler. Holds the parser
/// and the response writer, reused for every request (loop thread only).
///
/// Every error about a request whose op is known starts with `op: `, put there once, here: handlers and the
/// helpers they call never name the op themselves.
final class Dispatcher {
    enum Outcome { case handled, mustWait }

    /// Repeated keys are reported rather than thrown, so that the error can echo the request's id.
    let parser = JSONParser(rejectsDuplicateKeys: false)
    var writer = JSONWriter()
    /// The last shared change set encoded (see `ListenerSink.deliver`'s `shareKey`): its key and the bytes after
    /// `{"sub":"…",`.
    // @exclusivity(unchecked): loop-thread state read on every delivered event; dynamic exclusivity checks off (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) var eventCacheKey: UInt64?
    @exclusivity(unchecked) var eventCacheBody = SharedLineBody()
    let commands: [String: Command]
    /// While a read runs that the gate has not confirmed yet: its ok reply stays in `writer` (`heldReply`).
    fileprivate var holdingReply = false
    private var heldReply = false
    /// The running read's admission (see `SnapshotGate`).
    fileprivate var ticket: SnapshotGate.Ticket?
    /// Set by a handler (through `Context.waitForPublication`) that sent nothing and must run again later.
    fileprivate var mustWaitForPublication = false
    /// The running request's op and start, and whether its handler answers later (and times it then:
    /// `Context.deferTiming`).
    fileprivate var timing = RequestTiming(slot: 0, started: 0)
    fileprivate var timingDeferred = false

    init() {
        var table: [String: Command] = [:]
        for (i, c) in CommandTable.all.enumerated() {
            var c = c
            c.slot = i
            c.acceptedKeys = (["op", "id"] + c.fields.sorted()).map { Array($0.utf8) }
            table[c.name] = c
        }
        commands = table
    }

    func dispatch(_ line: UnsafeRawBufferPointer, session: Session) -> Outcome {
        let outcome = dispatchLine(line, session: session)
        // A line answered is done with the reads it missed, however it ended.
        if outcome == .handled, session.lineReads != nil { session.lineReads = nil }
        return outcome
    }

    private func dispatchLine(_ line: UnsafeRawBufferPointer, session: Session) -> Outcome {
        let root: JSONRef
        do {
            root = try parser.parse(line)
        } catch {
            return malformed(error, id: nil, session: session)
        }
        guard root.kind == .object else {
            return malformed(.invalid("a request must be a JSON object, not \(root.kind.article)"), id: nil, session: session)
        }
        var id: [UInt8]?
        if let idRef = root["id"] {
            guard let echo = idRef.idEcho else {
                return malformed(.invalid("field \"id\" must be a string, a number or null, not \(idRef.kind.article)"), id: nil, session: session)
            }
            id = echo
        }
        if let duplicate = parser.duplicateKey {
            // A repeated "id" has no one value to echo.
            return malformed(duplicate.error, id: duplicate.isTopLevel && duplicate.key == "id" ? nil : id, session: session)
        }
        guard let opRef = root["op"] else {
            return malformed(.invalid("field \"op\" is required (try {\"op\":\"help\"})"), id: id, session: session)
        }
        guard opRef.kind == .string else {
            return malformed(.invalid("field \"op\" must be a string, not \(opRef.kind.article)"), id: id, session: session)
        }
        let op = opRef.string!
        guard let command = commands[op] else {
            return malformed(.invalid("unknown op \"\(op)\" (try {\"op\":\"help\"})"), id: id, session: session)
        }
        // Anything but a write runs behind the connection's own writes (the session is woken once they are
        // published): a read sees them, and what a meta op reports (ping's and hello's seq, stats) is never
        // older than an answer before it. `forward` is decided by the line it carries, dispatched below as if
        // it had come on its own (so the writes a follower forwards still pipeline).
        if command.access != .write && command.name != "forward" && session.pendingWrites > 0 { return .mustWait }
        if let unknown = root.members.first(where: { !command.accepts(key: $0.keyBytes) })?.key {
            let allowed = command.fields.isEmpty ? "none" : command.fields.sorted().joined(separator: ", ")
            replyError(HearthError.invalid("unknown field \"\(unknown)\" (allowed: \(allowed))").prefixed(op), id: id, session: session)
            session.server.metrics.ops[command.slot].refused()
            return .handled
        }
        if command.clearance != .anyone, let refusal = session.server.access.refusal(command, session: session) {
            replyError(refusal.prefixed(op), id: id, session: session)
            session.server.metrics.ops[command.slot].refused()
            return .handled
        }
        if command.forwarded, let cluster = session.server.cluster, cluster.forward(line, id: id, command: command, session: session) {
            return .handled
        }
        if command.name == "forward" { return forwarded(root, id: id, session: session) }
        let request = Request(op: op, body: root, line: line, id: id)
        let gate = session.server.engine.gate
        ticket = nil
        if command.access == .read {
            session.server.cluster?.checkLease()   // a committer that may have been replaced reads as a follower
            switch gate.admit() {
            case .wait:
                gate.wait(session)
                return .mustWait
            case .run(let t):
                ticket = t
            }
        }
        // A read's reply is held until the gate confirms that what it read is exactly the published state
        // (or the handler confirms it itself before its side effects: `Context.confirmSnapshot`).
        holdingReply = ticket != nil
        heldReply = false
        mustWaitForPublication = false
        timing = RequestTiming(slot: command.slot, started: ServerMetrics.nanos())
        timingDeferred = false
        defer { holdingReply = false; ticket = nil }
        // What the loop missed is taken by whoever ran the work; a miss left over is not this line's.
        if session.server.engine.hasMissing { _ = session.server.engine.takeMissing() }
        do {
            try command.run(Context(dispatcher: self, session: session, server: session.server), request)
        } catch {
            let unconfirmed = holdingReply
            holdingReply = false
            var error = error
            // Documents the loop does not read are read on a reader; the line runs again then.
            if session.readMissed(after: &error) { return .mustWait }
            // An error can depend on what the line read: a rule's get() or exists() that read the store on the
            // loop while a batch had landed there saw a state not yet published, and may deny what the
            // published state allows. Such an error is confirmed like a reply, and the line runs again after
            // the publication if it was torn. (Decoding and validation errors read nothing: `confirm` passes.)
            if unconfirmed, let t = ticket, !gate.confirm(t) {
                gate.wait(session)
                return .mustWait
            }
            replyError(error.prefixed(op), id: id, session: session)
            session.server.requestFinished(timing, failed: true, id: id, session: session)
            return .handled
        }
        if mustWaitForPublication {
            // The handler found its read torn and sent nothing: run it again after the publication.
            gate.wait(session)
            return .mustWait
        }
        if holdingReply && heldReply {
            guard gate.confirm(ticket!) else {
                gate.wait(session)
                return .mustWait
            }
            writer.withBytes { session.emitLine($0) }
        }
        if !timingDeferred { session.server.requestFinished(timing, failed: false, id: id, session: session) }
        return .handled
    }

    /// `forward` (admin): runs the request line it carries as the identity it names, for that line only (a
    /// follower speaking for its client; `ForwardedIdentity`). The line is dispatched as if it had come on its
    /// own, so its answer (with the client's id) is the answer; a line that must wait parks this one, which
    /// runs again whole.
    private func forwarded(_ root: JSONRef, id: [UInt8]?, session: Session) -> Outcome {
        guard let r = root["request"], r.kind == .string, let text = r.string else {
            replyError(HearthError.invalid("field \"request\" must be a request line, as a string").prefixed("forward"), id: id, session: session)
            return .handled
        }
        let principal: Principal
        do { principal = try ForwardedIdentity.principal(root["as"]) } catch {
            replyError(error.prefixed("forward"), id: id, session: session)
            return .handled
        }
        let line = Array(text.utf8)
        let own = session.principal
        session.principal = principal
        session.answeringForward = true
        defer { session.principal = own; session.answeringForward = false }
        return line.withUnsafeBytes { dispatchLine($0, session: session) }
    }

    /// Answers a line refused before its op was known (counted apart: it has no op).
    private func malformed(_ error: HearthError, id: [UInt8]?, session: Session) -> Outcome {
        replyError(error, id: id, session: session)
        session.server.metrics.noteMalformed()
        return .handled
    }

    // MARK: Responses

    /// Writes `{"id":..,"ok":true, <fields>}\n` and sends it (in order) on `session`; while `holdingReply`,
    /// leaves it in `writer` for `dispatch` to send once the optimistic read is confirmed.
    func replyOK(_ id: [UInt8]?, session: Session, _ fields: (inout JSONWriter) -> Void) {
        writeOK(id, fields)
        if holdingReply { heldReply = true; return }
        writer.withBytes { session.emitLine($0) }
    }

    /// The bytes of an ok response, for responses that complete later.
    func okLine(_ id: [UInt8]?, _ fields: (inout JSONWriter) -> Void) -> [UInt8] {
        writeOK(id, fields)
        return writer.bytes
    }

    private func writeOK(_ id: [UInt8]?, _ fields: (inout JSONWriter) -> Void) {
        ResponseLine.beginOK(&writer, id: id)
        fields(&writer)
        ResponseLine.end(&writer)
    }

    func replyError(_ error: HearthError, id: [UInt8]?, session: Session) {
        writeError(error, id: id)
        writer.withBytes { session.emitLine($0) }
    }

    func errorLine(_ error: HearthError, id: [UInt8]?, seq: UInt64? = nil) -> [UInt8] {
        writeError(error, id: id, seq: seq)
        return writer.bytes
    }

    private func writeError(_ error: HearthError, id: [UInt8]?, seq: UInt64? = nil) {
        ResponseLine.error(&writer, error, id: id, seq: seq)
    }
}

/// What a handler works with.
struct Context {
    let dispatcher: Dispatcher
    let session: Session
    let server: Server
    var engine: Engine { server.engine }

    func reply(_ request: Request, _ fields: (inout JSONWriter) -> Void) {
        dispatcher.replyOK(request.id, session: session, fields)
    }

    /// Answers `request` from the index catalog in memory (an index that exists, a TTL policy in force, a
    /// listing): once the catalog it describes is durable (`Engine.afterCatalogDurable`), so the answer never
    /// tells of a declaration, drop or policy a failed commit took back; UNAVAILABLE in its place if it is
    /// not. `fields` runs when the answer is sent: take what it describes from the catalog before.
    func replyFromCatalog(_ request: Request, _ fields: @escaping (inout JSONWriter) -> Void) {
        let dispatcher = dispatcher, id = request.id
        answerFromCatalog(request, failed: false) { dispatcher.okLine(id, fields) }
    }

    /// `replyFromCatalog` for a refusal judged against the catalog in memory (NOT_FOUND for an index or a
    /// policy a pending commit removed). Through a follower it names the seq published when it is sent, which
    /// the follower publishes before it answers (as a write's refusal does).
    func refuseFromCatalog(_ request: Request, _ error: HearthError) {
        let dispatcher = dispatcher, id = request.id, op = request.op, engine = engine
        let forwarded = session.answeringForward
        answerFromCatalog(request, failed: true) {
            dispatcher.errorLine(error.prefixed(op), id: id, seq: forwarded ? engine.lastDurableSeq : nil)
        }
    }

    private func answerFromCatalog(_ request: Request, failed: Bool, _ line: @escaping () -> [UInt8]) {
        session.answerJudged(op: request.op, id: request.id, timing: deferTiming(), failed: failed, unsettled: "not answered",
                             settle: engine.afterCatalogDurable, line)
    }

    /// The running read's admission: a handler with side effects confirms it before them.
    var ticket: SnapshotGate.Ticket? { dispatcher.ticket }

    /// For a read with side effects (a listen): true when what it read so far is exactly the published state;
    /// its reply then goes out at once. False: undo nothing (there must be nothing to undo yet), call
    /// `waitForPublication()` and return.
    func confirmSnapshot() -> Bool {
        guard let t = dispatcher.ticket else { return true }
        guard engine.gate.confirm(t) else { return false }
        dispatcher.holdingReply = false
        return true
    }

    /// The handler sent nothing and must run again once the current publication has finished.
    func waitForPublication() { dispatcher.mustWaitForPublication = true }

    /// For a handler that answers later (a commit once durable, a read on a reader thread): the request's
    /// timing, to hand to `Server.requestFinished` when it is answered (the dispatcher then does not).
    func deferTiming() -> RequestTiming {
        dispatcher.timingDeferred = true
        return dispatcher.timing
    }

    /// Answers `request` from a reader thread: `read` runs there on a snapshot of the store and writes the
    /// response's fields (after `"id"` and `"ok"`) into a writer of its own. The response keeps this
    /// request's place; the connection's next lines wait until it is answered; it goes out once the
    /// snapshot's seq is published (so it is exact at a published seq, and the connection's own writes are
    /// in it). A read that throws is answered with its error.
    func readOffLoop(_ request: Request,
                     _ read: @escaping @Sendable (any StoreSnapshot, inout JSONWriter) throws(HearthError) -> Void) {
        readOnReader(request, reparsing: false) { scope, w throws(HearthError) in try read(try scope.snapshot, &w) }
    }

    /// Runs the whole request on a reader thread: `read` gets the request parsed again there
    /// (`ReaderScope.request`), decodes and checks it, judges and plans it against the scope's snapshot
    /// (`ReaderScope.prepare`), and writes the response's fields. As `readOffLoop` for the rest: the response
    /// keeps the request's place and goes out once the snapshot's seq is published; an error thrown (a
    /// request that does not decode, a refusal, a store failure) is the answer.
    /// With `reparsing` false the line is not copied, and `ReaderScope.request` must not be used (a handler
    /// that decoded what it needs on the loop).
    func readOnReader(_ request: Request, reparsing: Bool = true,
                      _ read: @escaping @Sendable (ReaderScope, inout JSONWriter) throws(HearthError) -> Void) {
        let store = server.store
        let limit = server.config.maxResponseBytes
        let id = request.id
        let op = request.op
        let line = reparsing ? [UInt8](request.line) : []
        let codec = engine.codec
        let catalog = engine.catalogView
        let cache = engine.documentCache
        let judge = offLoopJudge
        let outcome = OffLoopRead()
        let slot = session.beginOffLoopRead()
        let session = self.session
        let server = self.server
        let timing = deferTiming()
        server.offLoopReadStarted()
        server.readers.submit({
            var w = ReaderWriters.take()
            let scope = ReaderScope(op: op, id: id, line: line, codec: codec, cache: cache, judge: judge, store: store,
                                    catalog: catalog, responseLimit: limit)
            defer { scope.close() }
            do throws(HearthError) {
                ResponseLine.beginOK(&w, id: id)
                try read(scope, &w)
                ResponseLine.end(&w)
                try scope.checkResponseSize(w)
            } catch {
                ResponseLine.error(&w, error.prefixed(op), id: id)   // named by its op, as the dispatcher does
                if error.code == .dataLoss { outcome.damage = error }
                outcome.failed = true
            }
            outcome.seq = scope.seq ?? 0
            outcome.written = consume w     // sent from this buffer, which then goes back to ReaderWriters
        }, done: {
            server.offLoopReadReturned()
            server.requestFinished(timing, failed: outcome.failed, id: id, session: session)
            if let damage = outcome.damage { server.engine.onDataLoss?(damage) }   // logged on the loop
            session.offLoopReadDone(slot, written: outcome.written.take()!, seq: outcome.seq)
            server.maybeFinishShutdown()   // a shutdown waits for the reads it had accepted
        })
    }
}
