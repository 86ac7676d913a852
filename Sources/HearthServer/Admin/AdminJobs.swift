import HearthEngine
import HearthModel
import HearthStorage

/// The server's background administration work: the TTL sweeper, running recursive deletes, and
/// compaction (one at a time). Loop thread.
final class AdminJobs {
    private unowned let server: Server
    let sweeper: TTLSweeper
    private var deletes: [ObjectIdentifier: RecursiveDelete] = [:]
    private(set) var compacting = false
    /// Recursive deletes running (for `stats`).
    var runningDeletes: Int { deletes.count }

    init(server: Server) {
        self.server = server
        self.sweeper = TTLSweeper(server: server)
    }

    /// The store's administration side, or UNIMPLEMENTED naming what was asked.
    func administration(for what: String) throws(HearthError) -> any StoreAdministration {
        guard let admin = server.store as? any StoreAdministration else {
            throw HearthError(.unimplemented, "this store cannot \(what)")
        }
        return admin
    }

    func start() { sweeper.start(intervalMs: server.config.ttlSweepIntervalMs) }

    func stop() {
        sweeper.stop()
        for d in Array(deletes.values) { d.cancel() }
        deletes.removeAll()
    }

    /// Starts deleting the subtree at `root` (see `RecursiveDelete`).
    func deleteRecursive(_ root: ResourcePath, batchSize: Int, progress: @escaping (Int) -> Void,
                         done: @escaping (Result<Int, HearthError>) -> Void) throws(HearthError) {
        guard !server.shuttingDown else { throw HearthError(.unavailable, "the daemon is shutting down") }
        let admin = try administration(for: "list a subtree's documents")
        var key: ObjectIdentifier?
        let job = RecursiveDelete(root: root, batchSize: batchSize, server: server, store: admin, progress: progress) { [unowned self] result in
            if let key { self.deletes[key] = nil }
            let n = (try? result.get()) ?? 0
            self.server.logger.info("recursive delete of \(root): \(result.isFailure ? "stopped" : "done"), \(n) documents deleted")
            done(result)
        }
        key = ObjectIdentifier(job)
        deletes[key!] = job
        server.logger.info("recursive delete of \(root): started, \(batchSize) documents per commit")
        job.start()
    }

    /// Compacts the store on a worker thread; the loop keeps serving reads and commits (on the SQLite store
    /// they go on into the commit log and wait for the compaction only in the applier's backlog).
    /// FAILED_PRECONDITION while another compaction runs.
    func compact(_ done: @escaping (Result<CompactionResult, HearthError>) -> Void) throws(HearthError) {
        guard !compacting else { throw HearthError(.failedPrecondition, "a compaction is already running") }
        let admin = try administration(for: "compact")
        compacting = true
        let box = CompactionBox()
        let started = ServerMetrics.nanos()
        server.logger.info("compaction: started")
        server.loop.submit({
            do throws(HearthError) { box.result = .success(try admin.compact()) } catch { box.result = .failure(error) }
        }, done: { [unowned self] in
            self.compacting = false
            let ms = Double((ServerMetrics.nanos() &- started) / 1000) / 1000
            switch box.result! {
            case .success(let r):
                self.server.logger.info("compaction: \(r.method) in \(ms) ms, \(r.bytesBefore) bytes on disk before, \(r.bytesAfter) after")
            case .failure(let e):
                self.server.logger.warn("compaction failed after \(ms) ms: \(e.message)")
            }
            done(box.result!)
        })
    }
}

extension Result {
    var isFailure: Bool { if case .failure = self { return true } else { return false } }
}

private final class CompactionBox: @unchecked Sendable {
    var result: Result<CompactionResult, HearthError>?
}
