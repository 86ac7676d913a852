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
    let loop: EventLoop
    let engine: Engine
    let store: any DocumentStore
    let dispatcher: Dispatcher
    private var listener: TCPListener?
    private var sessions: [ObjectIdentifier: Session] = [:]
    private var hooks: [LoopHook] = []
    private var signals: [SignalWatcher] = []
    private(set) var shuttingDown = false
    private var shutdownTimer: LoopTimer?
    private var closingSessions = false

    /// The port actually bound (useful with --port 0).
    public private(set) var boundPort = 0

    public init(config: ServerConfig, store: any DocumentStore, logger: Logger) throws {
        self.config = config
        self.logger = logger
        self.store = store
        self.loop = try EventLoop()
        self.engine = try Engine(store: store, codec: JSONDocumentCodec(), indexCatalogCodec: JSONIndexCatalogCodec(),
                                 cacheBytes: config.cacheBytes)
        self.dispatcher = Dispatcher()
        engine.onIndexesChanged = { [unowned self] in self.logIndexes() }
        engine.onDataLoss = { [unowned self] error in self.logDataLoss(error) }
    }

    /// DATA_LOSS messages already logged (each damaged document is logged once, however often it is asked for).
    private var loggedDamage = Set<String>()

    /// Logs a DATA_LOSS error loudly, once per message (at most 10,000 distinct ones; then a last line says
    /// so and further ones are only answered).
    private func logDataLoss(_ error: HearthError) {
        guard loggedDamage.count <= 10_000, loggedDamage.insert(error.message).inserted else { return }
        if loggedDamage.count > 10_000 {
            logger.info("DATA LOSS: more than 10000 damaged items; no more are logged (run hearth check on the stopped store)")
            return
        }
        logger.info("DATA LOSS: \(error.message)")
    }

    private func logIndexes() {
        let summary = engine.indexes.map { "#\($0.id) \($0.summary) \($0.state.rawValue)" }.joined(separator: "; ")
        logger.info("indexes: \(summary.isEmpty ? "none declared" : summary)")
    }

    /// Migrates an `indexes.json` left by an older Hearth into the store, once: imported with a commit when
    /// the store has no catalog of its own, then renamed to `indexes.json.imported` once that commit is
    /// durable (a stop before that leaves the file, and the next start imports it again). A file beside a
    /// store that already has a catalog (a stop right after the import) is only renamed.
    private func importIndexFile() throws {
        let file = IndexCatalogFile(dataDir: config.dataDir)
        guard file.exists else { return }
        if engine.loadedStoredCatalog {
            try file.retire()
            logger.info("index catalog: the store already holds it; renamed \(file.path) to \(file.importedPath)")
            return
        }
        guard let catalog = try file.load() else { return }
        let logger = self.logger
        engine.importIndexCatalog(catalog) { result in
            switch result {
            case .success:
                do {
                    try file.retire()
                    logger.info("index catalog: imported \(file.path) into the store; renamed it to \(file.importedPath)")
                } catch {
                    logger.info("index catalog: imported \(file.path) into the store, but \(error)")
                }
            case .failure(let error):
                logger.info("index catalog: importing \(file.path) failed (it is kept and imported at the next start): \(error)")
            }
        }
    }

    /// Listens, serves until SIGTERM/SIGINT, then shuts down gracefully. Returns when the loop has ended.
    public func run() throws {
        engine.adoptCurrentThread()
        try importIndexFile()
        let listener = try loop.listen(host: config.host, port: config.port) { [unowned self] conn in
            self.accept(conn)
        }
        self.listener = listener
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

    func accept(_ conn: ClientConnection) {
        guard !shuttingDown else { conn.abort(); return }
        let session = Session(conn: conn, server: self)
        sessions[ObjectIdentifier(session)] = session
        session.start()
    }

    func sessionClosed(_ session: Session) {
        sessions[ObjectIdentifier(session)] = nil
        engine.gate.forget(session)
        if closingSessions && sessions.isEmpty { stopLoop() }
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
    func batchLanded(_ batch: CommitBatch, error: HearthError?) {
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

    private func stopLoop() {
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
