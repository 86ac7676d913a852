#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite
import HearthModel

/// Copies WAL frames into hearth.db on a thread and connection of its own, so that a commit never waits for
/// a checkpoint.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit (and every
/// client waiting for it) pays for writing back and fsyncing every page the WAL holds. A fan-out commit that
/// touches a thousand feeds dirties thousands of pages, so each such commit paid for a checkpoint too. Here
/// the writer's WAL hook only signals this thread once the WAL holds `thresholdPages` pages; the thread runs
/// a PASSIVE checkpoint (it never blocks the writer or readers, and it writes back a page changed by several
/// commits once). Once everything is copied, the next write transaction starts the WAL over from its
/// beginning (and `journal_size_limit` trims the file).
///
/// A checkpoint that runs while commits keep arriving may never find the WAL fully copied, and only then can
/// the WAL start over. So once the WAL reaches `inlinePages` (64 MiB, the `journal_size_limit`) the writer
/// runs the checkpoint itself right after its commit, as SQLite's automatic checkpoint would: no other
/// writer can append meanwhile, so it copies everything and the WAL stays bounded under sustained load.
final class SQLiteCheckpointer: @unchecked Sendable {
    /// WAL size, in pages, that wakes the checkpointer (32 MiB of 4 KiB pages). A checkpoint copies each page
    /// once however many frames the WAL holds for it, so a larger WAL copies a hot page once for more commits:
    /// with the applier's batches, the checkpointer's CPU per durable set fell from 24-31 µs at SQLite's default
    /// of 1,000 pages to 4.4-6.7 µs (docs/benchmarks.md, "The write path"). Readers find a page in the WAL through its index, whatever its size.
    static let thresholdPages: Int32 = 8000
    /// WAL size at which the writer checkpoints inline (64 MiB of 4 KiB pages).
    static let inlinePages: Int32 = 16_384

    private let connection: SQLiteConnection
    /// The database file; its WAL is `path-wal`.
    private let path: String
    /// Paces the checkpoint's writes to hearth.db out to the disk (nil: the kernel writes them when it will).
    private let writeback: SQLiteWriteback?
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var requested = false
    private var running = false
    private var stopping = false
    private var thread: pthread_t?
    /// Checkpoints run so far (for tests and diagnostics).
    private(set) var completed = 0

    init(path: String, writeback: SQLiteWriteback?) throws(HearthError) {
        // Everything that can fail comes before the mutex and condition are initialized (deinit destroys them).
        let c = try SQLiteConnection(path: path, role: "checkpointer", create: false)
        do { try c.exec("PRAGMA synchronous = FULL;", "setting pragmas") } catch {   // fsync hearth.db after copying
            c.close()
            throw error
        }
        connection = c
        self.path = path
        self.writeback = writeback
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        do { thread = try StorageThread.start("checkpoint", name: "hearth-ckpt") { self.run() } } catch {
            connection.close()
            throw error
        }
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Replaces the writer's automatic checkpoint with a signal to this thread.
    func attach(to writer: SQLiteConnection) {
        sqlite3_wal_hook(writer.db, { context, db, _, pages in
            let me = Unmanaged<SQLiteCheckpointer>.fromOpaque(context!).takeUnretainedValue()
            if pages >= SQLiteCheckpointer.inlinePages && me.hasRoomToCopy() {
                _ = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)   // BUSY: one is running
                return SQLITE_OK
            }
            if pages >= SQLiteCheckpointer.thresholdPages { me.request() }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A checkpoint may grow hearth.db by up to the WAL's size. On a filesystem without that much room it
    /// would take the space a full disk keeps for deletes (and fail anyway): skip it until space returns.
    func hasRoomToCopy() -> Bool {
        var fs = statvfs()
        var wal = stat()
        guard statvfs(path, &fs) == 0, stat(path + "-wal", &wal) == 0 else { return true }
        let free = UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
        return free > UInt64(max(0, wal.st_size)) + (4 << 20)
    }

    private func request() {
        pthread_mutex_lock(mutex)
        requested = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    private func run() {
        while true {
            pthread_mutex_lock(mutex)
            while !requested && !stopping { pthread_cond_wait(condition, mutex) }
            let stop = stopping
            requested = false
            running = !stop
            pthread_mutex_unlock(mutex)
            if stop { return }
            // BUSY (the writer is checkpointing inline) or an I/O error: the next commit asks again, and the
            // writer's final checkpoint at close copies whatever is left.
            guard hasRoomToCopy() else {
                pthread_mutex_lock(mutex)
                running = false
                pthread_mutex_unlock(mutex)
                continue
            }
            writeback?.begin()
            let ok = sqlite3_wal_checkpoint_v2(connection.db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK
            writeback?.end()
            pthread_mutex_lock(mutex)
            if ok { completed += 1 }
            running = false
            pthread_mutex_unlock(mutex)
        }
    }

    /// Number of checkpoints completed, and whether none is running or asked for, read under the lock.
    var state: (completed: Int, idle: Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (completed, !requested && !running)
    }

    /// Stops the thread (after a checkpoint in progress) and closes the connection. Detach the writer's
    /// hook first. Idempotent.
    func close() {
        guard let t = thread else { return }
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        pthread_join(t, nil)
        thread = nil
        connection.close()
    }

    /// Removes the hook from the writer (before the writer or this object goes away).
    static func detach(from writer: SQLiteConnection) {
        sqlite3_wal_hook(writer.db, nil, nil)
    }
}
