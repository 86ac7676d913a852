import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// One client connection: framing, in-order responses, parked lines, and backpressure.
///
/// Ordering contract: responses leave in request order. Writes pipeline (many may wait for durability at
/// once), but a read that follows a write on the same connection waits until that write is durable and
/// published, so a connection always reads its own writes and never sees anything not yet durable.
///
/// Parking: a line that cannot run yet (a read behind the connection's own pending writes, a read the
/// snapshot gate holds back, any line behind a read running on a reader thread, or any line while the
/// connection's unsent output is above the high-water mark) is parked, with every line after it, and reading
/// pauses. The session is woken by the gate (`snapshotGateOpened`), after a publication has finished: when
/// its last pending write completes during a publication it asks the gate to wake it, and a read the gate
/// held back parked it there; by the answer of its read (`answerOffLoopRead`); and by the drain of its output
/// (`outputDrained`), for lines parked behind the output.
final class Session: SnapshotWaiter {
    let conn: ClientConnection
    /// The server outlives every session (it closes them before it goes away); unowned(unsafe) skips the
    /// reference counting that each access would otherwise do on the delivery path.
    unowned(unsafe) let server: Server
    private var framer: LineFramer
    let responses = ResponseQueue()
    /// Writes submitted and not yet durable (or failed).
    @exclusivity(unchecked) private(set) var pendingWrites = 0   // and below: changed by every request (loop thread, never across a call)
    /// Lines waiting behind the read barrier, oldest first.
    @exclusivity(unchecked) private var parked: [Parked] = []   // read on every drain (`isParked`)
    private enum Parked {
        case line([UInt8])
        case error(HearthError)
    }
    private var parkedHead = 0
    /// `runParked` is running (it is not re-entered).
    private var runningParked = false
    /// `close` was called: the connection closes once its output is flushed, and runs no more lines.
    private(set) var closing = false
    /// A read running on a reader thread: the connection's next lines wait for its response.
    @exclusivity(unchecked) private(set) var readInFlight = false
    /// Its result, read at a seq not yet published: `finish` answers it once that seq is.
    private var heldRead: (seq: UInt64, finish: () -> Void)?
    /// The running line missed documents the loop does not read (`readMissed`): what it read before it runs
    /// again, and how that went.
    var lineReads: LineReads?
    @exclusivity(unchecked) private var readingPaused = false
    // @exclusivity(unchecked) here and below: loop-thread state read on every delivered event; dynamic exclusivity checks off (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) private(set) var closed = false
    /// Some input has arrived (the first bytes are checked for a TLS handshake sent to a plain-text port).
    @exclusivity(unchecked) private var sawInput = false
    /// Bytes of the unfinished line this connection holds, as last counted in the server's budget.
    @exclusivity(unchecked) private(set) var heldInput = 0
    /// When the unfinished line began (loop clock, ms), moved later by each time the daemon held it
    /// (`timedLineStartMs`).
    @exclusivity(unchecked) private(set) var lineStartedMs: UInt64?
    /// Since when the daemon holds the unfinished line (reading paused while an answer is owed), if it does.
    @exclusivity(unchecked) private var lineHeldSinceMs: UInt64?
    /// When the last input arrived or the last owed answer (a write's, a read's on a reader) was sent.
    @exclusivity(unchecked) private(set) var lastActivityMs: UInt64

    // Subscriptions (see Session+Listeners.swift).
    /// The snapshot a paged `export` reads, kept from its first page to its last or until the connection
    /// closes (`ExportHandlers`).
    var exportSnapshot: (any StoreSnapshot)?
    var subscriptions: [String: Listener] = [:]
    var nextSubscription = 1
    /// Refusals (the rules judged again) of listeners whose first snapshot was being read: their listen is
    /// answered with it.
    var refusedWhilePending: [String: HearthError] = [:]
    /// Completions of pending listeners whose first snapshot came back while they were held, being judged
    /// again (`rejudge`): run once that judgement is made.
    var completionsAfterJudging: [String: () -> Void] = [:]
    /// Listeners whose reset is being read (`readAfterReset`): their listen was answered long ago.
    var awaitingReset = Set<String>()
    /// Events of a listener being registered, held until its `listen` response has gone out.
    @exclusivity(unchecked) var heldEvents: [ListenerEvent]?
    var heartbeatTimer: LoopTimer?
    var heartbeatMs: UInt64 = 0
    /// Output sent since the last heartbeat tick.
    @exclusivity(unchecked) var sentSinceTick = false
    /// Set while listeners are coalescing because the subscriber is over its output budget.
    var slowDeadline: LoopTimer?
    /// The subscriber missed its drain deadline: its final error line is queued and the connection closing.
    var closingSlow = false

    // Identity and access (see Security/Session+Access.swift).
    var principal: Principal = .anonymous
    /// True while a line a follower forwarded runs (`Dispatcher.forwarded`): a write made of it remembers that
    /// (`PreparedWrite.forwarded`), so that its refusal carries the seq it was decided at.
    var answeringForward = false
    /// Fires when the connection's token expires.
    var expiryTimer: LoopTimer?
    /// While rules are enforced: what each listener listens to, to judge it again.
    var listenTargets: [String: ListenTarget] = [:]
    /// The TLS client certificate's subject has been added to the identity (once the first request came, the
    /// handshake being complete).
    var certificateAdopted = false

    init(conn: ClientConnection, server: Server) {
        self.conn = conn
        self.server = server
        self.framer = LineFramer(maxLineBytes: server.config.maxLineBytes)
        self.lastActivityMs = server.loop.now
    }

    /// The verified subject of the client's TLS certificate (RFC 2253) when the daemon requires client
    /// certificates (`--tls-client-ca`); nil on plain-text connections and without a client CA. This is what
    /// authorization rules see as `request.auth.token.cert_subject`.
    var peerCertificateSubject: String? { conn.peerCertificateSubject }

    func start() {
        conn.onRead = { [unowned self] bytes in self.received(bytes) }
        // Unretained: the handler runs once per flush that empties the output (every delivery to a
        // subscriber), and `unowned` costs a checked strong reference each time (`swift_unownedRetainStrong`),
        // `unowned(unsafe)` a plain one; it is cleared in `onClose`, before the server lets the session go,
        // and the connection calls it only while open. `session` keeps it alive to the end, should the handler
        // close the connection and a connection call `onClose` at once.
        let me = Unmanaged.passUnretained(self)
        conn.onDrain = {
            // Most drains (a pushed line went out whole) find nothing waiting for them: one look at plain
            // state, with no reference taken.
            guard me._withUnsafeGuaranteedRef({ $0.waitsForDrain }) else { return }
            let session = me.takeUnretainedValue()
            // The lines that waited for the drain first, so requests are not held behind listener catch-up.
            session.outputDrained()
            session.drainedListeners()
            session.updateReading()   // the listeners' catch-up may have filled the output again
        }
        conn.onEndOfInput = { [unowned self] in
            self.inputEnded = true
            self.closeIfAnswered()
        }
        conn.onClose = { [unowned self] _ in
            self.closed = true
            self.endSubscriptions()
            self.exportSnapshot = nil   // closed by the last holder (a page still being read holds it)
            self.conn.onRead = nil
            self.conn.onDrain = nil
            self.conn.onClose = nil
            self.server.sessionClosed(self)
        }
        conn.startReading()
    }

    private var isParked: Bool { parkedHead < parked.count }

    /// Whether a drain has something to move on, that is whether `outputDrained`, `drainedListeners` or
    /// `updateReading` could act: lines parked, reading paused or a read in flight (reading may pause or
    /// resume), the client's end of input (the connection may close), a line's held clock, a subscriber behind
    /// or on its drain deadline. A drain comes with the output empty (but for TLS plaintext sent before the
    /// handshake ended, which no line can have sent: none is read before it), so it never pauses reading.
    private var waitsForDrain: Bool {
        isParked || readingPaused || readInFlight || inputEnded || lineHeldSinceMs != nil || slowDeadline != nil
            || Unmanaged.passUnretained(server.listenerHub)._withUnsafeGuaranteedRef { $0.hasListenersBehind }
    }

    /// The unfinished line's start for `--line-timeout-ms`: none while reading is paused and the daemon owes the
    /// connection an answer (the client cannot finish the line: it waits behind lines parked for the daemon's
    /// work, or behind a read on a reader), and afterwards its start moved later by exactly that time
    /// (`syncLineHold`). The credit is the daemon's work on lines that arrived before it, at most one read's
    /// worth (reading stays paused, and no later line can park until this one ends). While reading is on, or
    /// paused only behind output the client does not read, the line is timed.
    var timedLineStartMs: UInt64? { lineHeldSinceMs != nil ? nil : lineStartedMs }

    /// Starts or ends the daemon's hold on the unfinished line; at its end the line's start moves later by its
    /// length. Called by `updateReading`, which runs wherever reading may pause or resume, after every read
    /// that starts or ends a line (`received`), and on every answer path: an owed answer that leaves reading
    /// paused ends the hold there.
    private func syncLineHold() {
        let held = readingPaused && owesAnswer && lineStartedMs != nil
        if held {
            if lineHeldSinceMs == nil { lineHeldSinceMs = server.loop.now }
        } else if let since = lineHeldSinceMs {
            lineHeldSinceMs = nil
            if let start = lineStartedMs { lineStartedMs = start + (server.loop.now - since) }
        }
    }

    /// The daemon owes this connection an answer it is still working on (a write not yet durable, a read on a
    /// reader, a read held for its seq): the connection is not idle, whatever the time since its last input.
    var owesAnswer: Bool { responses.hasOutstanding || readInFlight }

    /// An answer the daemon owed went out: the connection's idle time starts again.
    private func answeredOwed() {
        lastActivityMs = server.loop.now
    }

    /// Output the client had not taken when the sweep last looked, and what it has taken since it last counted
    /// as active (`noteOutputTaken`).
    private var outputWhenLooked = 0
    private var takenSinceActive = 0
    /// Output a client must take to count as active: a trickle (a byte now and then, which holds a large
    /// answer's memory for as long as it lasts) does not.
    static let activeOutputBytes = 64 << 10

    /// The sweep's look at the output, before it judges idleness: a client that took 64 KiB of its output (or
    /// all of it) since it last counted as active is active, as one that sent input is, so a client reading a
    /// large answer slowly is not idle (Redis counts a reply written as interaction too). Counted to the peer's
    /// acknowledgement (`outputNotTaken`): the kernel's buffer would hide a slow reader's progress.
    func noteOutputTaken(now: UInt64) {
        let notTaken = conn.outputNotTaken
        if notTaken < outputWhenLooked {
            takenSinceActive += outputWhenLooked - notTaken
            if takenSinceActive >= Self.activeOutputBytes || notTaken == 0 {
                lastActivityMs = max(lastActivityMs, now)
                takenSinceActive = 0
            }
        }
        outputWhenLooked = notTaken
    }

    /// True while the responses not yet taken by the client are above `--output-high-water`: no line runs then
    /// (it parks, as do the lines after it), so a client that pipelines requests without reading their
    /// answers holds at most about one answer past the mark, not the answers of every line it sent (reading
    /// stops at the mark, but one read can carry thousands of lines). The lines run once the output drains.
    private var outputBacklogged: Bool { conn.pendingOutputBytes > server.config.outputHighWater }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        server.engine.thread.check("Session.received")
        if !sawInput {
            sawInput = true
            // A TLS record starts with 22 (handshake); no JSON request can.
            if bytes.first == 0x16 && !conn.isTLS { server.tlsOnPlainPort(self); return }
        }
        let now = server.loop.now
        lastActivityMs = now
        var sawLine = false
        framer.feed(bytes) { event in
            sawLine = true
            switch event {
            case .line(let line):
                if isParked || readInFlight || outputBacklogged || server.dispatcher.dispatch(line, session: self) == .mustWait {
                    parked.append(.line(Array(line)))
                }
            case .tooLong(let size):
                let e = HearthError(.resourceExhausted,
                                    "line of \(size)+ bytes exceeds the limit of \(server.config.maxLineBytes) bytes; discarded up to the next newline")
                if isParked || readInFlight { parked.append(.error(e)) } else { server.dispatcher.replyError(e, id: nil, session: self) }
            }
        }
        guard !closed else { return }
        accountInput(now: now, sawLine: sawLine)
        guard !closed else { return }
        updateReading()
    }

    /// Counts the unfinished line in the server's input budget (a line being discarded as too long holds no
    /// memory) and notes when it began; closes the connection when the budget would be exceeded.
    private func accountInput(now: UInt64, sawLine: Bool) {
        let unfinished = framer.unfinishedLineBytes
        let held = framer.isDiscardingLine ? 0 : unfinished
        if unfinished == 0 {
            lineStartedMs = nil
        } else if lineStartedMs == nil || sawLine {
            lineStartedMs = now
        }
        let before = heldInput
        heldInput = held
        if let e = server.budget.inputChanged(from: before, to: held) {
            server.noteRefusal("closed \(conn.peer): \(e.message)")
            close(with: e)
        }
    }

    /// Sends a connection-level error line (no id) and closes once it is flushed.
    func close(with error: HearthError) {
        guard !closed else { return }
        var w = JSONWriter(capacity: 256)
        ResponseLine.error(&w, error, id: nil)
        conn.send(w.bytes)
        conn.expedite()
        close()
    }

    /// Runs parked lines, until one must wait again or the output is backlogged. Not re-entered: a line it
    /// runs can be answered at once by a path that runs the parked lines (a retried write answered as a read,
    /// `offLoopReadDone`), and that must not run the same line again; this loop goes on with the next line.
    private func runParked() {
        guard !runningParked else { return }
        runningParked = true
        defer { runningParked = false }
        drain: while parkedHead < parked.count && !readInFlight && !outputBacklogged && !closing {
            switch parked[parkedHead] {
            case .line(let line):
                let r = line.withUnsafeBytes { server.dispatcher.dispatch($0, session: self) }
                if r == .mustWait { break drain }
            case .error(let e):
                server.dispatcher.replyError(e, id: nil, session: self)
            }
            parkedHead += 1
            if closed { return }
        }
        if parkedHead == parked.count {
            parked.removeAll(keepingCapacity: false)
            parkedHead = 0
        }
        updateReading()
    }

    /// The publication this session waited for has finished: send a response read at its seq, and run the
    /// parked lines.
    func snapshotGateOpened() {
        server.engine.thread.check("Session.snapshotGateOpened")
        if let held = heldRead {
            heldRead = nil
            offLoopReadReturned(seq: held.seq, then: held.finish)
            return
        }
        guard !closed, isParked, !readInFlight else { return }
        runParked()
    }

    // MARK: Reads on reader threads

    /// A read goes to a reader thread: its response takes the next slot, and the lines after it wait.
    func beginOffLoopRead() -> ResponseQueue.Slot {
        readInFlight = true
        return responses.reserve()
    }

    /// A reader thread's response, read at `seq`: it goes out once `seq` is published (at once, unless a
    /// batch landed after the read began and is not yet published), then the parked lines run.
    func offLoopReadDone(_ slot: ResponseQueue.Slot, line: [UInt8], seq: UInt64) {
        server.engine.thread.check("Session.offLoopReadDone")
        // The usual case answers at once, without making a closure.
        if !closed && seq <= server.engine.lastDurableSeq { return answerOffLoopRead(slot, line: line) }
        // Unowned: a held read is only run by this session's gate wakeup.
        offLoopReadReturned(seq: seq) { [unowned self] in self.answerOffLoopRead(slot, line: line) }
    }

    /// As `offLoopReadDone(_:line:seq:)`, with the response still in the writer a reader built it in
    /// (`Context.readOnReader`): sent from its buffer, with no line of its own.
    func offLoopReadDone(_ slot: ResponseQueue.Slot, written: consuming JSONWriter, seq: UInt64) {
        server.engine.thread.check("Session.offLoopReadDone")
        if !closed && seq <= server.engine.lastDurableSeq { return answerOffLoopRead(slot, written: written) }
        var held: JSONWriter? = written
        offLoopReadReturned(seq: seq) { [unowned self] in
            if let w = held.take() { self.answerOffLoopRead(slot, written: w) }   // taken: the only reference
        }
    }

    /// Reads a write needs go to a reader thread (`Engine.readsNeeded`); the connection's next lines wait, and
    /// once they are back the write goes on (`PreparedWrite.run`) with what was read, in its place.
    /// What the write misses when it runs (`PreparedWrite.next`) is read the same way, and it runs again.
    func readForWrite(_ reads: WriteReads, then write: PreparedWrite) {
        readHoldingLines(reads) { [self] failure in
            if let failure {
                refuseWrite(write, failure)
            } else {
                do throws(HearthError) { try write.run(on: self) } catch {
                    switch write.next(after: error, engine: server.engine) {
                    case .refuse(let e): refuseWrite(write, e)
                    case .read(let next, let again): readForWrite(again, then: next)
                    }
                }
            }
        }
    }

    /// Reads `reads` on a reader (`Server.readFirst`) while the connection's next lines wait; once back (and
    /// the connection still open), `then` runs with the read's failure, and the waiting lines go on.
    private func readHoldingLines(_ reads: WriteReads, then: @escaping (HearthError?) -> Void) {
        readInFlight = true
        server.readFirst(reads) { [self] failure in
            readInFlight = false
            guard !closed, !closing else { return }
            then(failure)
            if isParked { runParked() } else { updateReading() }
        }
    }

    /// After the running line's handler threw `error`: when the loop missed documents it does not read (a rule's
    /// `get()` over a store across the network: `Engine.publishedOnLoop`), they are read at a snapshot on a
    /// reader thread, the connection's next lines wait, and the line runs again once they are back and
    /// published here (true). Else false, and `error` is the line's answer: the handler's own, the failure of
    /// that read, or the refusal after `Server.maxReadRounds` rounds.
    func readMissed(after error: inout HearthError) -> Bool {
        let engine = server.engine
        let earlier = lineReads
        lineReads = nil
        if let failure = earlier?.failure {
            // The last round's read failed: that is the answer, if this run missed something again.
            let missed = engine.takeMissing()
            if !missed.paths.isEmpty || missed.requestID != nil { error = failure }
            return false
        }
        let rounds = earlier?.reads ?? MissedReads()
        switch rounds.next(engine, reads: { m, id in engine.readsNeeded(paths: m.paths, requestID: id, published: true) }) {
        case .stands:
            return false
        case .refused(let refusal):
            error = refusal
            return false
        case .again(let next, let reads):
            lineReads = LineReads(reads: next)
            readHoldingLines(reads) { [self] failure in lineReads?.failure = failure }
            return true
        }
    }

    /// Answers `write` with `error`. The refusal was decided against the engine's state, pending commits
    /// included (a precondition, a rule's judgement, a transform's operand): while any is pending it is
    /// answered once they all have their outcome, in its place like a write's answer (the connection's later
    /// reads wait for it), so it never tells of a commit not yet published. If they failed, the state it was
    /// decided against never existed: the write is answered UNAVAILABLE instead, to be sent again.
    /// A refusal of a line a follower forwarded names the seq it was decided at (published by then), which the
    /// follower publishes before it answers its client.
    func refuseWrite(_ write: PreparedWrite, _ error: HearthError) {
        let dispatcher = server.dispatcher
        let engine = server.engine
        // Made when sent: a forwarded line's refusal names the seq published then.
        answerJudged(op: write.op, id: write.id, timing: write.timing, failed: true, unsettled: "not applied",
                     settle: engine.afterPending) {
            dispatcher.errorLine(error.prefixed(write.op), id: write.id, seq: write.forwarded ? engine.lastDurableSeq : nil)
        }
    }

    /// Answers with `line` (made when it is sent), an answer judged against state that can hold commits not
    /// yet published: `settle` (`Engine.afterPending`, `Engine.afterCatalogDurable`) says whether any is
    /// pending, and runs its body once they have their outcome. The answer then waits in its place like a
    /// write's (the connection's later lines wait for it), and is sent once they are published; if they
    /// failed, the state it describes never existed, and UNAVAILABLE ("`unsettled`: it was judged against a
    /// commit that did not become durable; send it again") goes in its place. At once when none is pending.
    /// The request's timing ends when the answer is sent (`failed`: whether the answer is a refusal).
    func answerJudged(op: String, id: [UInt8]?, timing: RequestTiming, failed: Bool, unsettled: String,
                      settle: (@escaping (Bool) -> Void) -> Bool, _ line: @escaping () -> [UInt8]) {
        let dispatcher = server.dispatcher
        var slot: ResponseQueue.Slot?
        let held = settle { [self] published in
            guard let slot else { return }
            server.requestFinished(timing, failed: failed || !published, id: id, session: self)
            if published { return endWrite(slot, response: line()) }
            let error = HearthError(.unavailable, "\(unsettled): it was judged against a commit that did not become durable; send it again")
            endWrite(slot, response: dispatcher.errorLine(error.prefixed(op), id: id))
        }
        guard held else {
            server.requestFinished(timing, failed: failed, id: id, session: self)
            return line().withUnsafeBytes { emitLine($0) }
        }
        slot = beginWrite()
    }

    /// A reader thread's work, read at `seq`, came back: `finish` runs once `seq` is published (at once,
    /// unless a batch landed after the read began and is not yet published), and must answer the read
    /// (`answerOffLoopRead`) or hand it to a reader again. Dropped when the connection has closed.
    func offLoopReadReturned(seq: UInt64, then finish: @escaping () -> Void) {
        server.engine.thread.check("Session.offLoopReadReturned")
        guard !closed else { readInFlight = false; return }
        guard seq <= server.engine.lastDurableSeq else {
            heldRead = (seq, finish)
            server.engine.gate.wait(self)
            return
        }
        finish()
    }

    /// Answers the read in flight with `line` in its slot; `then` runs right after it is sent (a listen's
    /// first snapshot follows its response), before the parked lines run.
    func answerOffLoopRead(_ slot: ResponseQueue.Slot, line: [UInt8], then: (() -> Void)? = nil) {
        responses.fill(slot, with: line) { conn.send($0) }
        conn.expedite()
        offLoopReadAnswered(then: then)
    }

    /// As `answerOffLoopRead(_:line:then:)`, with the response still in the writer a reader built it in: it is
    /// sent from that writer's buffer, which then goes back to the readers.
    func answerOffLoopRead(_ slot: ResponseQueue.Slot, written: consuming JSONWriter) {
        responses.fill(slot, written: written) { conn.send($0) }
        conn.expedite()
        offLoopReadAnswered(then: nil)
    }

    /// The read in flight was answered (its response is in its slot, and out if nothing before it is awaited;
    /// sending only queues output, it calls nothing back): `then` runs, then the parked lines.
    private func offLoopReadAnswered(then: (() -> Void)?) {
        answeredOwed()
        readInFlight = false
        sentSinceTick = true
        then?()
        if closed { return }
        if isParked { runParked() } else { updateReading() }
    }

    /// The client finished sending (it shut down its side): every line it sent is answered, then the
    /// connection closes (`closeIfAnswered`).
    private var inputEnded = false

    /// After the client finished sending, closes once nothing it asked is still to be answered: no response
    /// awaited (a write, a read on a reader thread or held for its seq) and no line parked behind one. Checked
    /// from `updateReading`, where every path that answers something ends.
    private func closeIfAnswered() {
        guard inputEnded, !closed, !responses.hasOutstanding, !isParked, !readInFlight, heldRead == nil, pendingWrites == 0 else { return }
        conn.close()
    }

    /// The output was all taken by the client: lines parked behind the backlog run (those waiting for
    /// something else wait on: re-dispatched, they park again). The drain's handler updates reading after it.
    private func outputDrained() {
        guard !closed, isParked, !readInFlight, heldRead == nil else { return }
        // A drain never comes during a publication; a read that must wait for one parks again (the dispatcher
        // asks the gate). The drain may come from the loop's last pass before it polls, after the group commit
        // was started: a write run here queues a commit, which one more pass starts.
        runParked()
        server.loop.requestTurn()
    }

    /// Pauses reading while lines are parked or output is above the high-water mark; resumes otherwise. A read
    /// in flight alone does not pause it: a line that comes meanwhile parks behind the read (`received`), and
    /// reading pauses then; so does the start of a line not yet finished, which stays in the framer, counted
    /// in the input budget, rather than finish arriving and park outside it. So a client that waits for each
    /// answer before asking again (most do) costs no pause and resume per read (two `epoll_ctl` calls on the
    /// loop thread), and one that pipelines parks at most the whole lines of one more read.
    func updateReading() {
        closeIfAnswered()
        guard !closed, !server.shuttingDown else { return }
        let shouldPause = isParked || (readInFlight && framer.unfinishedLineBytes > 0)
            || conn.pendingOutputBytes > server.config.outputHighWater
        if shouldPause && !readingPaused {
            readingPaused = true
            conn.pauseReading()
        } else if !shouldPause && readingPaused {
            readingPaused = false
            conn.resumeReading()
        }
        syncLineHold()
    }

    func stopReading() {
        guard !closed else { return }
        readingPaused = true
        conn.pauseReading()
    }

    /// Closes once the output is flushed, or cuts the connection after `deadlineMs` (by default the loop's
    /// close deadline).
    func close(deadlineMs: UInt64? = nil) {
        guard !closed else { return }
        closing = true
        conn.close(deadlineMs: deadlineMs)
    }

    // MARK: Responses

    /// Sends a finished response line, behind any response still awaited. Answers are expedited (written at
    /// the start of the next flush pass): a client waiting for one should not wait behind a publication's
    /// pushed lines to other connections, which a pass writes 128 connections at a time.
    func emitLine(_ line: UnsafeRawBufferPointer) {
        guard !closed else { return }
        sentSinceTick = true
        if responses.hasOutstanding {
            responses.enqueue(Array(line))
        } else {
            conn.send(line)
            conn.expedite()
        }
    }

    /// Marks a write as submitted; its response takes the next slot.
    func beginWrite() -> ResponseQueue.Slot {
        pendingWrites += 1
        return responses.reserve()
    }

    /// Delivers a write's response (a commit's completion, during a publication). When it was the last
    /// pending write and lines are parked behind it, they run once the publication has finished: a
    /// completion only fills its response slot, it never runs requests.
    func endWrite(_ slot: ResponseQueue.Slot, response: [UInt8]) {
        server.engine.thread.check("Session.endWrite")
        pendingWrites -= 1
        guard !closed else { return }
        sentSinceTick = true
        answeredOwed()
        responses.fill(slot, with: response) { conn.send($0) }
        // The writer waits for this answer; the publication's pushed lines to other connections need not go
        // out first (this connection's own listener lines are already ahead of it in its buffer).
        conn.expedite()
        guard pendingWrites == 0 && isParked else { return updateReading() }
        // During a publication the parked lines run once it has finished; a write answered outside one (a
        // follower's forwarded write, `ClusterCoordinator`) lets them run now.
        if server.engine.gate.phase == .quiet { runParked() } else { server.engine.gate.wait(self) }
    }
}

/// What a line that missed documents read before it runs again (`Session.readMissed`).
struct LineReads {
    var reads = MissedReads()
    var failure: HearthError?
}
