#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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
/// How: a thread of its own syncs the WAL and hearth.db every `interval` while a writer is active (between
/// `begin()` and `end()`: an applier transaction, with the checkpoint its commit may run inline, or a
/// background checkpoint), and once more after the last one ends. It syncs through SQLite's own file
/// handles on a connection of its own (`SQLiteConnection.syncFiles`): a descriptor of our own on hearth.db
/// would drop SQLite's POSIX locks when closed. Idle, it sleeps. Its syncs only make data durable earlier;
/// nothing relies on them. A failed sync is kept (`failure`): Linux reports a failed page write-back to every
/// descriptor open on the file (since 4.13), but a failed flush of the disk's cache only to the sync that
/// issued it, so the commit pipeline, before it relies on SQLite's files (to remove a log segment), treats
/// a failure kept here as its own sync's and refuses writes until a restart recovers from the log.
/// Compactions (a vacuum rewrites the whole database through the WAL) and groups applied before their
/// acknowledgement on a nearly full disk are paced too.
final class SQLiteWriteback: @unchecked Sendable {
    /// How long writes may gather between two syncs while a writer is active. At the disk speeds of the
    /// figures (a few hundred MiB/s), 20 ms of a writer's output is a few MiB.
    static let interval: Int = 20_000_000   // ns

    private let connection: SQLiteConnection
    /// hearth.db; its WAL is `databasePath-wal`.
    private let databasePath: String
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
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
    /// The first sync that failed. A failed sync may have consumed a failed flush of the disk's cache, which is
    /// reported to its caller only: the commit pipeline checks this before it relies on SQLite's files
    /// (`CommitPipeline.syncFiles(of:)`).
    private var firstFailure: HearthError?

    init(path: String) throws(HearthError) {
        // Everything that can fail comes before the mutex and condition are initialized (deinit destroys them).
        let c = try SQLiteConnection(path: path, role: "writeback", create: false)
        do {
            // The connection opens the WAL at its first read; its handle is what `syncFiles` syncs.
            _ = try c.queryInt("SELECT count(*) FROM meta")
        } catch {
            c.close()
            throw error
        }
        connection = c
        databasePath = path
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        StorageThread.initCondition(changed)
        do { thread = try StorageThread.start("writeback", name: "hearth-wback") { self.run() } } catch {
            connection.close()
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
        var deadline = StorageThread.deadline(after: Int(seconds * 1e9))
        return locked {
            while !done() && !stopping {
                if pthread_cond_timedwait(changed, mutex, &deadline) == ETIMEDOUT { return done() }
            }
            return done()
        }
    }

    /// Stops the thread and closes its connection. Call before the store's other connections close (their
    /// last close removes the WAL). Idempotent.
    func close() {
        guard let t = locked({ () -> pthread_t? in
            stopping = true
            pthread_cond_broadcast(changed)
            defer { thread = nil }
            return thread
        }) else { return }
        pthread_join(t, nil)
        connection.close()
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
            pthread_mutex_unlock(mutex)
            let (failure, files) = syncChangedFiles()
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

    /// The WAL's and hearth.db's modification time and size when this thread last synced them.
    private var synced: [Stamp?] = [nil, nil]

    private struct Stamp: Equatable {
        let seconds: Int
        let nanoseconds: Int
        let size: Int64
    }

    /// Syncs the WAL and hearth.db, each only when its modification time or size changed since its last sync
    /// (a sync flushes the disk's cache even when the file has nothing to write, and a writer may leave one of
    /// them untouched: an applier transaction that runs no checkpoint writes only the WAL). A file system that
    /// keeps whole seconds (no nanoseconds in the time) cannot tell: such a file is synced on every pass. A
    /// write in the same clock tick as the last look may wait for the next sync: pacing, not durability.
    /// Returns the first failure, and how many files were synced.
    private func syncChangedFiles() -> (failure: HearthError?, files: Int) {
        let paths = [databasePath + "-wal", databasePath]
        var wanted = [false, false]
        var stamps: [Stamp?] = [nil, nil]
        for i in 0..<2 {
            var st = stat()
            guard stat(paths[i], &st) == 0 else { continue }
            #if canImport(Darwin)
            let time = st.st_mtimespec
            #else
            let time = st.st_mtim
            #endif
            stamps[i] = Stamp(seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec), size: Int64(st.st_size))
            wanted[i] = stamps[i] != synced[i] || time.tv_nsec == 0
        }
        var files = 0
        for i in 0..<2 where wanted[i] {
            do { try connection.syncFiles(wal: i == 0, database: i == 1) } catch { return (error, files) }
            synced[i] = stamps[i]
            files += 1
        }
        return (nil, files)
    }
}
