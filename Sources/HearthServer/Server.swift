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
    /// The engine's listener hub, held here as a constant: the engine's is made on first use, and reading it
    /// costs a run-time exclusivity check, once per delivery on the drain path.
    let listenerHub: ListenerHub
    let store: any DocumentStore
    /// Identity and rules (docs/security.md).
    let access: AccessControl
    /// Listeners whose access depends on documents, judged again when those change.
    let listenerAccess = ListenerAccess()
    let dispatcher: Dispatcher
    /// Reader threads: every query and every read the document cache cannot answer (`Context.readOnReader`).
    let readers: WorkerPool
    /// The thread of online backups (`MaintenanceJobs`).
    let maintenance: MaintenanceJobs
    /// Request counts and latencies, group commits (`Server+Metrics.swift`).
    let metrics = ServerMetrics(ops: CommandTable.all.map(\.name))
    var metricsTimer: LoopTimer?
    var metricsEndpoint: MetricsEndpoint?
    /// The port `/metrics` is served on (`--metrics-port`, 0 resolved), once running.
    public var boundMetricsPort: Int? { metricsEndpoint?.port }
    /// Documents the TTL sweeper deleted since start.
    var ttlDeleted: UInt64 = 0
    /// Background administration jobs (TTL sweeps, recursive deletes, compaction).
    lazy var jobs = AdminJobs(server: self)
    /// Reads on reader threads whose response has not come back to the loop yet.
    package private(set) var readsInFlight = 0
    /// First snapshots sent as the reader that read them encoded them (`InitialSnapshotLine`), for tests.
    var firstSnapshotsSentAsRead = 0
    /// The store's figures last read by `refreshStoreFigures` (a store across the network), and whether a
    /// read of them is under way.
    var storeFigures = StoreFigures()
    var storeFiguresReading = false
    /// Reads handed to reader threads since start (tests count them).
    package private(set) var readsStarted = 0
    func offLoopReadStarted() {
        readsInFlight += 1
        readsStarted += 1
    }
    func offLoopReadReturned() { readsInFlight -= 1 }
    private var listeners: [TCPListener] = []
    /// TLS (certificate, key, client CA; reloaded on SIGHUP), when configured.
    public let tls: ServerTLS?
    private var sessions: [ObjectIdentifier: Session] = [:]
    var connectionCount: Int { sessions.count }
    private var hooks: [LoopHook] = []
    private var signals: [SignalWatcher] = []
    private(set) var shuttingDown = false
    /// Connections, unfinished input and timeouts across all connections.
    var budget: ConnectionBudget
    private var sweepTimer: LoopTimer?
    /// Refused or closed connections and failed accepts (at most one line a second, then a count).
    lazy var refusals = LogThrottle(loop: loop, logger: logger,
                                    summary: "more connections refused, closed over the input budget, or failed to be accepted")
    /// Refused hellos (bad tokens or admin keys), likewise.
    lazy var helloRefusals = LogThrottle(loop: loop, logger: logger, summary: "more hellos refused")
    private var shutdownTimer: LoopTimer?
    /// Logs TLS connections that failed before carrying a request (and TLS sent to a plain-text port).
    lazy var tlsFailures = LogThrottle(loop: loop, logger: logger,
                                       summary: "more connections failed TLS (a failed or timed-out handshake, plain text on a TLS port, or TLS on a plain-text port)")
    private var closingSessions = false

    /// The port actually bound for `--port` (useful with --port 0): TLS when TLS is on without a separate port.
    public private(set) var boundPort = 0
    /// With a separate TLS port (`--tls-port`): the TLS port actually bound.
    public private(set) var boundTLSPort: Int?

    /// `socket` is the listening socket made first (`ServerSocket`, so a start that cannot listen changes nothing
    /// on disk); without one, `run()` listens on `config.host:config.port` itself. Reads the index catalog in
    /// the data directory (an error names the file).
    /// `access`: the security settings already loaded, and `tls` the TLS made from `config.tls` (the daemon
    /// makes both before it binds, so bad files stop a start before anything is touched); made here from
    /// `config` when nil.
    public init(config: ServerConfig, store: any DocumentStore, logger: Logger, socket: ServerSocket? = nil,
                access: AccessControl? = nil, tls: ServerTLS? = nil) throws {
        self.config = config
        if let tls { self.tls = tls } else { self.tls = try config.tls.map { settings throws(HearthError) in try ServerTLS(settings) } }
        self.logger = logger
        self.store = store
        self.socket = socket
        self.loop = try socket?.loop ?? EventLoop()
        self.engine = try Engine(store: store, codec: JSONDocumentCodec(), indexCatalogCodec: JSONIndexCatalogCodec(),
                                 cacheBytes: config.cacheBytes)
        self.listenerHub = engine.listeners
        listenerHub.readsOffLoop = true
        self.dispatcher = Dispatcher()
        self.budget = ConnectionBudget(config.budgetLimits)
        self.readers = WorkerPool(loop: loop, threads: config.readers, name: "hearth-reader")
        self.maintenance = MaintenanceJobs(loop: loop)
        self.reserve = DiskReserve(dataDir: config.dataDir, bytes: config.diskReserveBytes)
        if let problem = config.security.protectionProblem(host: config.host) { throw HearthError(.failedPrecondition, problem) }
        self.access = try access ?? AccessControl(config.security)
        engine.willPublish = { [unowned self] records in
            let affected = self.listenerAccess.affected(by: records)
            guard !affected.listeners.isEmpty else { return }
            // The documents the batch changed are judged at their new versions without reading them.
            self.engine.learnPublished(affected.versions)
            for (session, tag) in affected.listeners { session.rejudge(tag) }
            self.engine.forgetLearned()
        }
        if config.security.rulesFile != nil {
            onReload("rules") { [unowned self] in try self.reloadRules() }
        }
        engine.onIndexesChanged = { [unowned self] index, event in self.indexChanged(index, event) }
        engine.recheckDiskSpace = { [unowned self] in self.checkDiskSpace() }
        engine.onDataLoss = { [unowned self] error in self.logDataLoss(error) }
        if let tls = self.tls {
            onReload("TLS certificate") { try tls.reload() }
        }
    }

    private let socket: ServerSocket?
    /// This node's part in a cluster over a shared store (`config.cluster`), once running.
    private(set) var cluster: ClusterCoordinator?

    /// DATA_LOSS messages already logged (each damaged document is logged once, however often it is asked for).
    private var loggedDamage = Set<String>()

    /// Logs a DATA_LOSS error loudly, once per message (at most 10,000 distinct ones; then a last line says
    /// so and further ones are only answered).
    private func logDataLoss(_ error: HearthError) {
        guard loggedDamage.count <= 10_000, loggedDamage.insert(error.message).inserted else { return }
        if loggedDamage.count > 10_000 {
            logger.error("DATA LOSS: more than 10000 damaged items; no more are logged (run hearth check on the stopped store)")
            return
        }
        logger.error("DATA LOSS: \(error.message)")
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
                    logger.warn("index catalog: imported \(file.path) into the store, but \(error)")
                }
            case .failure(let error):
                logger.warn("index catalog: importing \(file.path) failed (it is kept and imported at the next start): \(error)")
            }
        }
    }

    /// Logs the one index that changed (the catalog itself is carried by commits, into the store).
    private func indexChanged(_ index: IndexDefinition, _ event: IndexEvent) {
        let what: String
        switch event {
        case .declared: what = "declared, building"
        case .ready: what = "ready"
        case .dropped: what = "dropped"
        case .takenBack:
            what = engine.indexes.contains { $0.id == index.id }
                ? "its drop did not become durable and was taken back: the index stays"
                : "its declaration did not become durable and was taken back: there is no such index"
        }
        if event == .takenBack { logger.warn("index #\(index.id) \(index.summary): \(what)") } else { logger.info("index #\(index.id) \(index.summary): \(what)") }
    }

    /// Listens (unless a `ServerSocket` already does), serves until SIGTERM/SIGINT, then shuts down gracefully.
    /// Returns when the loop has ended.
    public func run() throws {
        engine.adoptCurrentThread()
        if let settings = config.cluster, let shared = store as? any ClusterStore {
            let c = try ClusterCoordinator(server: self, store: shared, settings: settings)
            cluster = c
            try c.start()
        } else {
            try importIndexFile()
        }
        raiseFileLimit()
        let socket = try self.socket ?? ServerSocket(loop: loop, addresses: config.listenAddresses, metrics: config.metricsAddress)
        socket.target.accept = { [unowned self] conn, tls, port in self.acceptTCP(conn, tls: tls, port: port) }
        for (listener, _) in socket.listeners {
            listener.onAcceptError = { [unowned self] e in self.noteRefusal("accepting a connection failed: \(e)") }
            listeners.append(listener)
        }
        if let every = budget.sweepIntervalMs {
            sweepTimer = loop.timer(after: every, repeat: every) { [unowned self] in self.sweep(now: self.loop.now) }
        }
        if config.tls?.port != nil {
            boundPort = socket.plainPort ?? socket.port
            boundTLSPort = socket.tlsPort
        } else {
            boundPort = socket.port
        }
        hooks.append(loop.beforePoll { [unowned self] in
            self.runIndexWork()
            self.startGroupCommit()
        })
        for sig in [SIGTERM, SIGINT] {
            signals.append(loop.onSignal(sig) { [unowned self] in self.beginShutdown(reason: sig == SIGTERM ? "SIGTERM" : "SIGINT") })
        }
        signals.append(loop.onSignal(SIGHUP) { [unowned self] in self.reload(reason: "SIGHUP") })
        prepareDiskReserve()
        startMetrics(socket)
        jobs.start()
        let addresses = socket.listeners.map { listener, tls in
            let what = tls ? self.tls.map { " (\($0.startupDescription))" } ?? "" : (config.tls != nil ? " (plain text, loopback only)" : "")
            return listener.address + what
        }
        logger.info("hearthd \(HearthVersion.string) listening on \(addresses.joined(separator: " and ")), data dir \(config.dataDir), seq \(engine.lastDurableSeq)")
        logger.info("security: \(access.modeSummary)\(access.enforcing || SecuritySettings.isLoopback(config.host) ? "" : " (--insecure-open)")")
        loop.run()
        socket.target.accept = nil
        loop.shutdown()
    }

    // MARK: Reload (SIGHUP)

    private var reloadables: [(name: String, reload: () throws -> String)] = []

    /// Registers something SIGHUP reloads (a rules file, say): `reload` applies the new version and returns a
    /// few words on what is now in use, for the log line; if it throws, the daemon keeps the old version and
    /// logs why. Loop thread.
    public func onReload(_ name: String, _ reload: @escaping () throws -> String) {
        reloadables.append((name, reload))
    }

    /// SIGHUP: never stops the daemon. Logs that it arrived and what each registered reloadable now uses. The
    /// log goes to stderr, which the daemon does not own, so there is no log file to reopen.
    func reload(reason: String) {
        guard !reloadables.isEmpty else {
            logger.info("\(reason): nothing to reload (the log goes to stderr; no reloadable configuration)")
            return
        }
        logger.info("\(reason): reloading \(reloadables.map(\.name).joined(separator: ", "))")
        for r in reloadables {
            do {
                let now = try r.reload()
                logger.info("\(reason): reloaded \(r.name): \(now)")
            } catch {
                logger.warn("\(reason): could not reload \(r.name), keeping the previous one: \(error)")
            }
        }
    }

    /// Reloads the rules file and judges every listener again under the new rules. A file that does not
    /// load throws, and the rules in force stay.
    func reloadRules() throws(HearthError) -> String {
        let summary = try access.reloadRules()
        for s in Array(sessions.values) { s.rejudgeListeners() }
        return summary
    }

    // MARK: Disk full

    /// Space held back for deletes once the disk is full.
    let reserve: DiskReserve
    /// While the disk is full: checks every second whether space came back.
    private var diskSpaceTimer: LoopTimer?

    /// At start: takes the reserve, or starts in the disk-full state when the disk has no room for it.
    func prepareDiskReserve() {
        guard let problem = reserve.create() else { return }
        if let free = reserve.freeBytes(), free < reserve.bytes + (1 << 20) {
            enterDiskFull(cause: "at start, \(problem)")
        } else {
            logger.warn("running without a disk reserve: \(problem)")
        }
    }

    /// A commit failed for want of space (or the reserve could not be made at start): from now on only commits
    /// that store nothing new run (`Engine.diskFull`), the reserve is released so they have room, and the state
    /// is checked every second. Logged once.
    func enterDiskFull(cause: String) {
        guard engine.diskFull == nil else { return }
        engine.diskFull = HearthError(.resourceExhausted, "disk full: no space left for the data directory \(config.dataDir); writes are refused until space is freed (deletes still run)")
        let released = reserve.release()
        let freed = released > 0 ? "released the \(mebibytes(released)) reserve \(reserve.path) so deletes can still commit" : "no reserve to release"
        logger.error("disk full: \(cause); \(freed); other writes are refused until space is available")
        diskSpaceTimer = loop.timer(after: 1000, repeat: 1000) { [unowned self] in self.checkDiskSpace() }
    }

    /// While the disk is full: leaves the state once the filesystem has room for the reserve and as much again,
    /// re-creating the reserve. Runs every second, after each durable batch, and before a write is refused.
    func checkDiskSpace() {
        guard engine.diskFull != nil, reserve.hasRoomToRestore else { return }
        if let problem = reserve.create() {
            logger.debug("disk still full: \(problem)")
            return
        }
        engine.diskFull = nil
        diskSpaceTimer?.cancel()
        diskSpaceTimer = nil
        let free = reserve.freeBytes().map { "\(mebibytes($0)) free" } ?? "free space unknown"
        let kept = reserve.bytes > 0 ? "re-created the \(mebibytes(reserve.bytes)) reserve; " : ""
        logger.warn("disk space available again (\(free)): \(kept)writes are accepted")
    }

    // MARK: Connections

    package func accept(_ conn: ClientConnection) {
        guard !shuttingDown else { conn.abort(); return }
        let address = peerAddress(conn.peer)
        if let refusal = budget.admit(address: address) {
            var w = JSONWriter(capacity: 256)
            ResponseLine.error(&w, refusal, id: nil)
            conn.send(w.bytes)
            conn.close()
            noteRefusal("refused a connection from \(conn.peer): \(refusal.message)")
            return
        }
        let session = Session(conn: conn, server: self)
        sessions[ObjectIdentifier(session)] = session
        logger.debug("connection from \(conn.peer)")
        session.start()
    }

    func sessionClosed(_ session: Session) {
        logger.debug("connection from \(session.conn.peer) closed")
        sessions[ObjectIdentifier(session)] = nil
        budget.released(address: peerAddress(session.conn.peer), unfinished: session.heldInput)
        engine.gate.forget(session)
        if closingSessions && sessions.isEmpty { stopLoop() }
    }

    /// Closes the connections whose unfinished line is too old, or that stayed idle too long.
    func sweep(now: UInt64) {
        guard !shuttingDown else { return }   // reading has stopped; the grace period bounds the rest
        var closed = 0
        let idleTimed = budget.limits.idleTimeoutMs > 0
        for s in Array(sessions.values) where !s.closing {
            if idleTimed { s.noteOutputTaken(now: now) }   // a system call each: only when idleness is judged
            guard let e = budget.expired(now: now, lineStartedMs: s.timedLineStartMs, lastActivityMs: s.lastActivityMs,
                                         listening: !s.subscriptions.isEmpty, owesAnswer: s.owesAnswer) else { continue }
            s.close(with: e)
            closed += 1
        }
        if closed > 0 { logger.info("closed \(closed) connection\(closed == 1 ? "" : "s") (unfinished line or idle timeout)") }
    }

    /// Logs a refused or closed connection or a failed accept, at most one line a second (with how many there
    /// were).
    func noteRefusal(_ line: String) { refusals.note(line) }

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
            logger.info("open-file limit \(files) allows about \(counted(capacity, "connection")), below --max-connections \(config.maxConnections): serving at most \(capacity)")
            var limits = config.budgetLimits
            limits.maxConnections = capacity
            budget = ConnectionBudget(limits)
        } else {
            logger.info("open-file limit \(files); serving at most \(counted(config.maxConnections, "connection")), \(config.inputBudget) bytes of unfinished input")
        }
    }

    /// A timer that keeps the loop turning while index work remains (`Server+IndexWork.swift`).
    var indexTimer: LoopTimer?
    /// A page of index work is being scanned on a reader (a store across the network).
    var indexPageReading = false

    // MARK: Shutdown

    /// Stops accepting, lets queued and in-flight commits finish, flushes output, then ends the loop.
    func beginShutdown(reason: String) {
        guard !shuttingDown else { return }
        shuttingDown = true
        maintenance.stop()
        logger.info("\(reason): shutting down (\(counted(sessions.count, "connection")), \(counted(engine.pendingCommitCount, "commit")) pending)")
        for listener in listeners { listener.close() }
        listeners.removeAll()
        jobs.stop()
        for s in sessions.values { s.stopReading() }
        shutdownTimer = loop.timer(after: config.shutdownGraceMs) { [unowned self] in
            self.logger.warn("shutdown grace period over; closing \(counted(self.sessions.count, "connection"))")
            self.finishShutdown()
        }
        maybeFinishShutdown()
    }

    /// Finishes the shutdown once nothing accepted is still owed an answer: no commit pending, no read on a
    /// reader thread (the grace period bounds the wait either way).
    func maybeFinishShutdown() {
        guard shuttingDown, engine.isIdle, readsInFlight == 0, (cluster?.forwardsAwaited ?? 0) == 0 else { return }
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
    package func closeReaders() {
        readers.close()
        maintenance.close()
    }

    private func stopLoop() {
        cluster?.stop()
        closeReaders()
        stopMetrics()
        jobs.stop()
        sweepTimer?.cancel()
        sweepTimer = nil
        refusals.stop()
        helloRefusals.stop()
        tlsFailures.stop()
        shutdownTimer?.cancel()
        shutdownTimer = nil
        diskSpaceTimer?.cancel()
        diskSpaceTimer = nil
        for h in hooks { h.cancel() }
        for s in signals { s.stop() }
        hooks.removeAll()
        signals.removeAll()
        loop.stop()
    }
}

/// The daemon's loop and listening sockets, made before anything else, so that a start that cannot listen (the
/// port is taken, the address is wrong) fails before it creates or changes anything in the data directory.
/// Connections that arrive before `Server.run()` wait in the kernel's backlog.
public final class ServerSocket {
    let loop: EventLoop
    /// One listener per address, with whether it serves TLS; in the order given.
    let listeners: [(listener: TCPListener, tls: Bool)]
    let target = AcceptTarget()
    /// The `/metrics` listener (`--metrics-port`), bound with the others; its connections go to
    /// `metricsTarget` once the server runs.
    let metricsListener: TCPListener?
    let metricsTarget = MetricsAcceptTarget()

    /// The first address's bound port (the kernel's choice when 0 was asked for).
    public var port: Int { listeners[0].listener.port }
    /// Bound ports by kind: the first TLS and the first plain-text listener's.
    public var tlsPort: Int? { listeners.first(where: { $0.tls })?.listener.port }
    public var plainPort: Int? { listeners.first(where: { !$0.tls })?.listener.port }

    /// Throws a message naming the address and the reason, e.g. "cannot listen on 127.0.0.1:7411: address
    /// already in use (EADDRINUSE)".
    public convenience init(host: String, port: Int) throws(HearthError) {
        try self.init(addresses: [ListenAddress(host: host, port: port, tls: false)])
    }

    /// Listens on every address, and on `metrics` for `/metrics` (a new loop); throws for the first that
    /// fails, closing the others.
    public convenience init(addresses: [ListenAddress], metrics: ListenAddress? = nil) throws(HearthError) {
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            throw HearthError(.unavailable, "cannot start the event loop: \(error.message) (\(error.name))")
        }
        do {
            try self.init(loop: loop, addresses: addresses, metrics: metrics)
        } catch {
            loop.shutdown()
            throw error
        }
    }

    init(loop: EventLoop, addresses: [ListenAddress], metrics: ListenAddress? = nil) throws(HearthError) {
        self.loop = loop
        let target = self.target
        var made: [(listener: TCPListener, tls: Bool)] = []
        for address in addresses {
            do {
                let tls = address.tls
                var boundPort = 0
                let listener = try loop.listen(host: address.host, port: address.port) { conn in
                    if let accept = target.accept { accept(conn, tls, boundPort) } else { conn.abort() }
                }
                boundPort = listener.port
                made.append((listener, tls))
            } catch {
                for m in made { m.listener.close() }
                throw HearthError(.unavailable, "cannot listen on \(address.host):\(address.port): \(error.message) (\(error.name))")
            }
        }
        if let metrics {
            let target = metricsTarget
            do {
                metricsListener = try loop.listen(host: metrics.host, port: metrics.port) { conn in
                    if let accept = target.accept { accept(conn) } else { conn.abort() }
                }
            } catch {
                for m in made { m.listener.close() }
                throw HearthError(.unavailable, "cannot listen for metrics on \(metrics.host):\(metrics.port): \(error.message) (\(error.name))")
            }
        } else {
            metricsListener = nil
        }
        listeners = made
    }
}

/// Where a `ServerSocket` hands accepted `/metrics` connections (the metrics endpoint, once the server runs).
final class MetricsAcceptTarget {
    var accept: ((TCPConnection) -> Void)?
}

/// Where a `ServerSocket` hands accepted connections (the server, once it runs).
final class AcceptTarget {
    /// The connection, whether its port serves TLS, and the port.
    var accept: ((TCPConnection, Bool, Int) -> Void)?
}

/// "8 MiB", "1.5 MiB".
func mebibytes(_ bytes: Int) -> String {
    bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(Double(bytes * 10 / (1 << 20)) / 10) MiB"
}
