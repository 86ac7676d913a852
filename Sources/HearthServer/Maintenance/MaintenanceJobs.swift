import HearthLoop
import HearthModel
import HearthStorage

/// Long maintenance work (online backups) on a thread of its own, so it neither holds the loop nor takes a
/// reader thread from queries for minutes. One backup runs at a time; a shutdown stops a running one at its
/// next slice (`stopRequested`), before the thread is joined.
final class MaintenanceJobs {
    let pool: WorkerPool
    /// Set by a shutdown; read by the running job between slices (any thread).
    let stopRequested = Locked(false)
    /// The directory of the running backup (loop thread only).
    var runningBackup: String?

    init(loop: EventLoop) {
        pool = WorkerPool(loop: loop, threads: 1, name: "hearth-maint")
    }

    /// Asks the running job to stop at its next slice.
    func stop() { stopRequested.withLock { $0 = true } }

    /// Stops the running job and joins the thread (loop thread).
    func close() {
        stop()
        pool.close()
    }
}

/// A maintenance job's response, written on its thread before `done` runs on the loop (the pool's lock
/// orders it).
final class JobOutcome: @unchecked Sendable {
    var line: [UInt8] = []
    var seq: UInt64 = 0
    var error: HearthError?
}
