#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CLibcGNU
import HearthModel

/// Pushes the pages SQLite writes to the disk as they are written, while the applier and the checkpointer
/// write, so that they never pile up in the page cache and reach the disk in one burst that the commit log's
/// fdatasync then waits behind.
///
/// Why: with the commit log as the durability point, SQLite's commits do not sync. The applier writes a
/// transaction's WAL frames (tens of MiB for a backlog of fan-out posts), and a checkpoint copies them into
/// hearth.db; both land in the page cache, and the kernel writes them out only at SQLite's own syncs (a
/// checkpoint syncs the WAL, then hearth.db) or once its dirty thresholds are crossed (by default 10% of
/// memory, or 30 s). Each such sync then sends tens of MiB to the disk at once, and a commit-log fdatasync
/// issued meanwhile (the acknowledgement of every waiting client) waits for the disk to take them: 60-135 ms
/// per sync, every second or so, under a sustained fan-out. Written out every `interval` instead, the disk
/// never holds more than a few MiB of SQLite's writes ahead of a commit. PostgreSQL does the same for its
/// data files (`checkpoint_flush_after`, `bgwriter_flush_after`, `backend_flush_after`): "limit the amount of
/// dirty data in the kernel's page cache, reducing the likelihood of stalls when an fsync is issued".
/// docs/benchmarks.md, "SQLite's writes paced to the disk", has the figures.
///
/// How: a thread of its own writes the WAL's and hearth.db's dirty pages back, and waits for them
/// (`sync_file_range`), every `interval` while a writer is active (between `begin()` and `end()`: an applier
/// transaction, with the checkpoint its commit may run inline, a background checkpoint, a compaction, a group
/// applied before its acknowledgement on a nearly full disk), and once more after the last one ends; idle, it
/// sleeps. It flushes no disk cache, so it cannot take a failed flush that a sync durability relies on would
/// then not be told of, and Linux reports a failed page write-back to every descriptor open on the file (since
/// 4.13): its own descriptors' errors hide nothing from SQLite's and the pipeline's syncs, and nothing relies on
/// what it writes. A failure is kept for diagnostics (`state`, `failure`).
///
/// Descriptors: its own, read-only, on hearth.db (opened with the pacer) and on the WAL (opened when the WAL
/// first exists). Closing a descriptor of hearth.db drops every POSIX lock the process holds on the file,
/// SQLite's included, so `close()` comes after SQLite's last connection to the store has closed (the WAL
/// carries no locks: SQLite locks through the -shm file).
final class SQLiteWriteback: @unchecked Sendable {
    /// How long writes may gather between two syncs while a writer is active. At the disk speeds of the
    /// figures (a few hundred MiB/s), 20 ms of a writer's output is a few MiB.
    static let interval: Int = 20_000_000   // ns

    /// hearth.db, then its WAL: paths and this pacer's descriptors (-1: not open), used by its thread only,
    /// and by `close()` after the thread stopped.
    private let paths: [String]
    private var descriptors: [Int32]
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    // Under `mutex`:
    /// Writers between `begin()` and `end()`.
    private var active = 0
    /// A writer ended since the last sync began: one more sync is owed.
    private var owed = false
    private var stopping = false
    private var syncing = false
    private var thread: pthread_t?
    private var passCount = 0
    private var fileSyncs = 0
    private var failureCount = 0
    /// The first write-back that failed (diagnostics).
    private var firstFailure: HearthError?

    init(path: String) throws(HearthError) {
        // Everything that can fail comes before the mutex and condition are allocated (deinit destroys them).
        let database = open(path, O_RDONLY | O_CLOEXEC)
        guard database >= 0 else {
            throw HearthError(.unavailable, "storage: opening \(path) to write it back failed: \(DataDirectory.describe(errno))")
        }
        paths = [path, path + "-wal"]
        descriptors = [database, -1]
        mutex = .allocate(capacity: 1)
        changed = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        StorageThread.initCondition(changed)
        do { thread = try StorageThread.start("writeback", name: "hearth-wback") { self.run() } } catch {
            closeDescriptor(database)
            descriptors[0] = -1
            throw error
        }
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// A writer starts writing SQLite's files (any thread).
    func begin() {
        locked {
            active += 1
            if active == 1 { pthread_cond_broadcast(changed) }
        }
    }

    /// The writer that called `begin()` is done: one more sync follows, then the thread sleeps if no other
    /// writer is active.
    func end() {
        locked {
            precondition(active > 0, "SQLiteWriteback.end without begin")
            active -= 1
            owed = true
            pthread_cond_broadcast(changed)
        }
    }

    /// Passes made so far, files synced by them (a pass syncs only the files written since their last sync),
    /// passes whose sync failed, and whether the thread is asleep with nothing owed.
    var state: (passes: Int, syncs: Int, failures: Int, idle: Bool) {
        locked { (passCount, fileSyncs, failureCount, active == 0 && !owed && !syncing) }
    }

    /// True until `close()` (tests: the descriptor of hearth.db outlives the store's own connections while a
    /// snapshot or a backup is open).
    var isOpen: Bool { locked { !stopping } }

    /// The first sync that failed, if any.
    var failure: HearthError? { locked { firstFailure } }

    /// Waits up to `seconds` until no writer is active and the pass owed after the last one is done; false if
    /// that did not happen in time.
    func waitUntilIdle(within seconds: Double) -> Bool {
        wait(within: seconds) { active == 0 && !owed && !syncing }
    }

    /// Waits up to `seconds` until `n` passes have been made since the pacer started; false if they were not
    /// (tests: it keeps passing while a writer is active, and makes none while idle).
    func waitForPasses(_ n: Int, within seconds: Double) -> Bool {
        wait(within: seconds) { passCount >= n }
    }

    private func wait(within seconds: Double, until done: () -> Bool) -> Bool {
        locked {
            _ = StorageThread.wait(on: changed, mutex, within: seconds) { done() || stopping }
            return done()
        }
    }

    /// Stops the thread and closes its descriptors. Call once SQLite's last connection to the store has closed
    /// (closing a descriptor of hearth.db drops the process's POSIX locks on it), or on a failed open. Idempotent.
    func close() {
        let t = locked { () -> pthread_t? in
            stopping = true
            pthread_cond_broadcast(changed)
            defer { thread = nil }
            return thread
        }
        guard let t else { return }
        pthread_join(t, nil)
        for i in descriptors.indices where descriptors[i] >= 0 {
            closeDescriptor(descriptors[i])
            descriptors[i] = -1
        }
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while !stopping {
            guard active > 0 || owed else {
                pthread_cond_wait(changed, mutex)
                continue
            }
            owed = false
            syncing = true
            // The pass after the last writer ended writes everything back: a write in the same clock tick as the
            // previous pass's look left its file's stamp unchanged.
            let last = active == 0
            pthread_mutex_unlock(mutex)
            let (failure, files) = syncChangedFiles(all: last)
            pthread_mutex_lock(mutex)
            fileSyncs += files
            if let failure {
                failureCount += 1
                if firstFailure == nil { firstFailure = failure }
            }
            syncing = false
            passCount += 1
            pthread_cond_broadcast(changed)
            // While a writer is active, let `interval` of its writes gather (`end` or `close` cut it short).
            if active > 0 && !owed && !stopping {
                var deadline = StorageThread.deadline(after: Self.interval)
                pthread_cond_timedwait(changed, mutex, &deadline)
            }
        }
        pthread_mutex_unlock(mutex)
    }

    /// hearth.db's and the WAL's modification time and size when this thread last wrote them back.
    private var synced: [Stamp?] = [nil, nil]

    private struct Stamp: Equatable {
        let seconds: Int
        let nanoseconds: Int
        let size: Int64
    }

    /// Writes hearth.db and the WAL back (`all`), or each only when its modification time or size changed since
    /// its last write-back (each call walks the file's pages, and a writer may leave one of them untouched: an
    /// applier transaction that runs no checkpoint writes only the WAL). A file system that keeps whole seconds
    /// (no nanoseconds in file times) cannot tell: such a file is written back on every pass. A write in the
    /// same clock tick as the last look waits for the next pass: pacing, not durability. Returns the first
    /// failure, and how many files were written back.
    private func syncChangedFiles(all: Bool) -> (failure: HearthError?, files: Int) {
        var failure: HearthError?
        var files = 0
        for i in 0..<2 {
            if i == 1 && descriptors[1] < 0 { descriptors[1] = open(paths[1], O_RDONLY | O_CLOEXEC) }   // the WAL, once it exists
            guard descriptors[i] >= 0 else { continue }
            var st = stat()
            guard fstat(descriptors[i], &st) == 0 else { continue }
            if i == 1 && st.st_nlink == 0 {
                // The WAL was removed (only by something outside the store: SQLite removes it at its last close):
                // follow the file now at that path.
                closeDescriptor(descriptors[1])
                descriptors[1] = -1
                synced[1] = nil
                continue
            }
            #if canImport(Darwin)
            let time = st.st_mtimespec
            #else
            let time = st.st_mtim
            #endif
            let stamp = Stamp(seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec), size: Int64(st.st_size))
            guard all || stamp != synced[i] || time.tv_nsec == 0 else { continue }
            guard hearth_write_back(descriptors[i]) == 0 else {
                if failure == nil {
                    failure = HearthError(.unavailable, "storage: writing \(paths[i]) back failed: \(DataDirectory.describe(errno))")
                }
                continue
            }
            synced[i] = stamp
            files += 1
        }
        return (failure, files)
    }
}

/// `close(2)`, which `SQLiteWriteback.close()` hides inside the class.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
