#if canImport(Glibc)
import Glibc
#endif
import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// The daemon: one libuv loop thread owning every connection and the engine; durable commits on a writer
/// thread, grouped. See docs/architecture.md.
public final class Server {
    public let config: ServerConfig
    let logger: Logger
    package let loop: EventLoop
    package let engine: Engine
    let store: any DocumentStore
    let dispatcher: Dispatcher
    /// Reader threads for large reads (`Context.readOffLoop`).
    let readers: WorkerPool
    /// Reads on reader threads whose response has not come back to the loop yet.
    package private(set) var readsInFlight = 0
    func offLoopReadStarted() { readsInFlight += 1 }
    func offLoopReadReturned() { readsInFlight -= 1 }
    private var listener: TCPListener?
    private var sessions: [ObjectIdentifier: Session] = [:]
    private var hooks: [LoopHook] = []
    private var signals: [SignalWatcher] = []
    private(set) var shuttingDown = false
    /// Connections, unfinished input and timeouts across all connections.
    var budget: ConnectionBudget
    private var sweepTimer: LoopTimer?
    /// Refusals and accept failures not yet logged (logged at most once a second, with their count).
    private var unloggedRefusals = 0
    private var refusalLogTimer: LoopTimer?
    private var shutdownTimer: LoopTimer?
    private var closingSessions = false

    /// The port actually bound (useful with --port 0).
    public private(set) var boundPort = 0

    public init(config: ServerConfig, store: any DocumentStore, logger: Logger) throws {
        self.config = config
        self.logger = logger
        self.store = store
        self.loop = try EventLoop()
        self.engine = try Engine(store: store, codec: JSONDocumentCodec(), cacheBytes: config.cacheBytes)
        self.dispatcher = Dispatcher()
        self.budget = ConnectionBudget(config.budgetLimits)
        self.readers = WorkerPool(loop: loop, threads: config.readers)
        self.indexFile = IndexCatalogFile(dataDir: config.dataDir)
        let catalog = try indexFile.load()
        engine.restoreIndexes(catalog.indexes, nextID: catalog.nextID)
        engine.onIndexesChanged = { [unowned self] in self.saveIndexes() }
    }

    private let indexFile: IndexCatalogFile

    private func saveIndexes() {
        do {
            try indexFile.save(engine.indexes, nextID: engine.nextIndexID)
            let summary = engine.indexes.map { "#\($0.id) \($0.summary) \($0.state.rawValue)" }.joined(separator: "; ")
            logger.info("indexes: \(summary.isEmpty ? "none declared" : summary)")
        } catch {
            logger.info("could not save the index catalog: \(error)")
        }
    }

    /// Listens, serves until SIGTERM/SIGINT, then shuts down gracefully. Returns when the loop has ended.
    public func run() throws {
        engine.adoptCurrentThread()
        raiseFileLimit()
        let listener = try loop.listen(host: config.host, port: config.port) { [unowned self] conn in
            self.accept(conn)
        }
        listener.onAcceptError = { [unowned self] e in self.noteRefusal("accepting a connection failed: \(e)") }
        self.listener = listener
        if let every = budget.sweepIntervalMs {
            sweepTimer = loop.timer(after: every, repeat: every) { [unowned self] in self.sweep(now: self.loop.now) }
        }
        boundPort = listener.port
        hooks.append(loop.beforePoll { [unowned self] in
            self.runIndexWork()
            self.startGroupCommit()
        })
        for sig in [SIGTERM, SIGINT] {
            signals.append(loop.onSignal(sig) { [unowned self] in self.beginShutdown(reason: sig == SIGTERM ? "SIGTERM" : "SIGINT") })
        }
        logger.info("hearthd \(HearthVersion.string) listening on \(config.host):\(boundPort), data dir \(config.dataDir), seq \(engine.lastDurableSeq)")
        loop.run()
        loop.shutdown()
    }

    // MARK: Connections

    package func accept(_ conn: ClientConnection) {
        guard !shuttingDown else { conn.abort(); return }
        if let refusal = budget.admit() {
            var w = JSONWriter(capacity: 256)
            ResponseLine.error(&w, refusal, id: nil)
            conn.send(w.bytes)
            conn.close()
            noteRefusal("refused a connection from \(conn.peer): \(refusal.message)")
            return
        }
        let session = Session(conn: conn, server: self)
        sessions[ObjectIdentifier(session)] = session
        session.start()
    }

    func sessionClosed(_ session: Session) {
        sessions[ObjectIdentifier(session)] = nil
        budget.released(unfinished: session.heldInput)
        engine.gate.forget(session)
        if closingSessions && sessions.isEmpty { stopLoop() }
    }

    /// Closes the connections whose unfinished line is too old, or that stayed idle too long.
    func sweep(now: UInt64) {
        var closed = 0
        for s in Array(sessions.values) {
            guard let e = budget.expired(now: now, lineStartedMs: s.lineStartedMs, lastActivityMs: s.lastActivityMs,
                                         listening: !s.subscriptions.isEmpty) else { continue }
            s.close(with: e)
            closed += 1
        }
        if closed > 0 { logger.info("closed \(closed) connection\(closed == 1 ? "" : "s") (unfinished line or idle timeout)") }
    }

    /// Logs a refused or closed connection or a failed accept, at most one line a second (with how many there
    /// were).
    func noteRefusal(_ line: String) {
        unloggedRefusals += 1
        guard refusalLogTimer == nil else { return }
        logger.info(line)
        unloggedRefusals = 0
        refusalLogTimer = loop.timer(after: 1000) { [unowned self] in
            self.refusalLogTimer = nil
            if self.unloggedRefusals > 0 {
                self.logger.info("\(self.unloggedRefusals) more connection\(self.unloggedRefusals == 1 ? "" : "s") refused, closed over the input budget, or failed to be accepted in the last second (\(self.sessions.count) open, limit \(self.budget.limits.maxConnections))")
                self.unloggedRefusals = 0
            }
        }
    }

    /// Raises the soft limit on open files to the hard limit, and logs what that allows.
    private func raiseFileLimit() {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return }
        if rl.rlim_cur < rl.rlim_max {
            var raised = rl
            raised.rlim_cur = rl.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { rl = raised }
        }
        let files = Int(clamping: rl.rlim_cur)
        // Files the daemon needs besides connections: the store's connections, readers, the WAL, logs.
        let capacity = max(0, files - 64 - config.readers)
        if config.maxConnections > capacity {
            logger.info("open-file limit \(files) allows about \(capacity) connections, below --max-connections \(config.maxConnections): serving at most \(capacity)")
            budget = ConnectionBudget(.init(maxConnections: capacity, inputBytes: config.inputBudget,
                                            lineTimeoutMs: config.lineTimeoutMs, idleTimeoutMs: config.idleTimeoutMs))
        } else {
            logger.info("open-file limit \(files); serving at most \(config.maxConnections) connections, \(config.inputBudget) bytes of unfinished input")
        }
    }

    // MARK: Group commit

    /// Once per loop turn: if no batch is being made durable, hand every commit queued since the last one
    /// to the writer thread as one transaction.
    func startGroupCommit() {
        guard let batch = engine.takeBatch() else { return }
        let store = self.store
        let outcome = BatchOutcome()
        loop.submit({
            outcome.error = Engine.makeDurable(batch, in: store)
        }, done: { [unowned self] in
            self.batchLanded(batch, error: outcome.error)
        })
    }

    /// Back on the loop thread with a batch the writer made durable (or failed): the engine publishes it,
    /// acknowledges its commits and wakes the reads that waited for it (`Engine.finish`).
    package func batchLanded(_ batch: CommitBatch, error: HearthError?) {
        if let error { logger.info("commit of seq \(batch.records.first?.seq ?? 0)...\(batch.records.last?.seq ?? 0) failed: \(error)") }
        engine.finish(batch, error: error)
        if shuttingDown { maybeFinishShutdown() }
    }

    /// One page of index backfill or purge per loop turn, so building an index never blocks writes.
    private func runIndexWork() {
        guard engine.hasIndexWork, !shuttingDown, engine.pendingCommitCount < 64 else { return }
        do { try engine.indexWorkStep() } catch { logger.info("index work failed, will retry: \(error)") }
        // Keep the loop turning while work remains, even when no client is active.
        if engine.hasIndexWork && indexTimer == nil {
            indexTimer = loop.timer(after: 1) { [unowned self] in self.indexTimer = nil }
        }
    }

    private var indexTimer: LoopTimer?

    // MARK: Shutdown

    /// Stops accepting, lets queued and in-flight commits finish, flushes output, then ends the loop.
    func beginShutdown(reason: String) {
        guard !shuttingDown else { return }
        shuttingDown = true
        logger.info("\(reason): shutting down (\(sessions.count) connections, \(engine.pendingCommitCount) commits pending)")
        listener?.close()
        listener = nil
        for s in sessions.values { s.stopReading() }
        shutdownTimer = loop.timer(after: config.shutdownGraceMs) { [unowned self] in
            self.logger.info("shutdown grace period over; closing \(self.sessions.count) connections")
            self.finishShutdown()
        }
        maybeFinishShutdown()
    }

    private func maybeFinishShutdown() {
        guard engine.isIdle else { return }
        finishShutdown()
    }

    /// Closes every connection gracefully (pending output is flushed first); the loop stops when the last
    /// one has closed, or after a short deadline.
    private func finishShutdown() {
        guard !closingSessions else { return }
        closingSessions = true
        shutdownTimer?.cancel()
        shutdownTimer = loop.timer(after: 2000) { [unowned self] in self.stopLoop() }
        for s in Array(sessions.values) { s.close() }
        if sessions.isEmpty { stopLoop() }
    }

    /// Joins the reader threads (their last responses go nowhere: every session is closed by now).
    package func closeReaders() { readers.close() }

    private func stopLoop() {
        closeReaders()
        sweepTimer?.cancel()
        sweepTimer = nil
        refusalLogTimer?.cancel()
        refusalLogTimer = nil
        shutdownTimer?.cancel()
        shutdownTimer = nil
        for h in hooks { h.cancel() }
        for s in signals { s.stop() }
        hooks.removeAll()
        signals.removeAll()
        loop.stop()
    }
}

/// Carries the writer thread's result back to the loop thread (written before `done` runs; libuv orders it).
private final class BatchOutcome: @unchecked Sendable {
    var error: HearthError?
}
