#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite
import HearthModel
import HearthStorage

/// An online backup of a store (`DocumentStore.backup`) with SQLite's backup API, on a connection of its own.
///
/// Consistency: the source connection opens a read transaction first and reads `last_seq` in it, which fixes
/// its WAL snapshot; `sqlite3_backup_step` then copies pages inside that same transaction (it opens none of
/// its own while one is open), so every page comes from the state after commit `seq`, however many commits
/// land meanwhile. The store's other connections are untouched: the loop's reads and the writer go on; the
/// checkpointer only cannot copy WAL frames past the snapshot until the backup ends (the WAL grows meanwhile).
///
/// Files: the copy is written to `<directory>/hearth.db.partial` (mode 0600), synced, then renamed to
/// `<directory>/hearth.db` and the directory synced, so a directory holds either a complete store or none.
/// Neither `LOCK` nor the WAL is copied: the copy is a self-contained database file (its header says WAL
/// mode, so a store opened on it runs as the original does).
enum SQLiteBackup {
    /// Pages copied per step: 4 MiB at SQLite's default page size. Between steps the source snapshot stays
    /// open and no lock is held that the loop or the writer waits for.
    static let pagesPerStep: Int32 = 1024

    static func run(source path: String, to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult {
        try DataDirectory.create(directory)
        let final = DataDirectory.file(SQLiteStore.fileName, in: directory)
        let partial = final + ".partial"
        if access(final, F_OK) == 0 {
            throw HearthError(.alreadyExists, "backup: \(directory) already holds a store (\(SQLiteStore.fileName)); choose a new or empty directory")
        }
        if access(DataDirectory.file(DataDirectoryLock.fileName, in: directory), F_OK) == 0 {
            throw HearthError(.alreadyExists, "backup: \(directory) is a data directory (it has a LOCK file); choose a new or empty directory")
        }
        _ = unlink(partial)
        let fd = open(partial, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw HearthError(.unavailable, "backup: cannot create \(partial): \(DataDirectory.describe(errno))")
        }
        _ = close(fd)
        var finished = false
        defer { if !finished { _ = unlink(partial); _ = unlink(partial + "-journal") } }

        let source = try SQLiteConnection(path: path, role: "backup source", create: false)
        defer { source.close() }
        try source.exec("BEGIN", "starting the backup's read transaction")
        let seq = UInt64(try source.queryInt("SELECT value FROM meta WHERE key = 'last_seq'"))   // fixes the snapshot
        let target = try SQLiteConnection(path: partial, role: "backup target", create: false)
        defer { target.close() }
        try target.exec("PRAGMA synchronous = FULL", "setting the backup target's durability")

        guard let b = sqlite3_backup_init(target.db, "main", source.db, "main") else {
            throw SQLiteFailure.error(sqlite3_errcode(target.db), target.db, "starting the backup into \(partial)")
        }
        var total = 0
        var stepError: HearthError?
        while true {
            let rc = sqlite3_backup_step(b, pagesPerStep)
            total = Int(sqlite3_backup_pagecount(b))
            if rc == SQLITE_DONE { break }
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { usleep(1000); continue }
            guard rc == SQLITE_OK else {
                stepError = SQLiteFailure.error(rc, target.db, "copying pages into \(partial)")
                break
            }
            if !progress(BackupProgress(done: total - Int(sqlite3_backup_remaining(b)), total: total)) {
                stepError = HearthError(.unavailable, "backup: stopped before the end (the daemon is shutting down); \(directory) holds no store")
                break
            }
            // What SQLite has written of the copy so far (all but the pages its cache still holds, about 2 MiB)
            // goes to the disk before the next slice is copied, so the copy never piles up in the page cache
            // to reach the disk in one burst at its final sync, which commit-log syncs would wait behind (as
            // SQLiteWriteback paces the applier's writes).
            do { try target.syncFiles(wal: false, database: true) } catch {
                stepError = HearthError(error.code, "backup: syncing \(partial) failed: \(error.message)")
                break
            }
        }
        let finish = sqlite3_backup_finish(b)
        if let stepError { throw stepError }
        try SQLiteFailure.check(finish, target.db, "finishing the backup into \(partial)")
        _ = progress(BackupProgress(done: total, total: total))
        target.close()
        try source.exec("COMMIT", "ending the backup's read transaction")

        let bytes = try syncFile(partial)
        guard rename(partial, final) == 0 else {
            throw HearthError(.unavailable, "backup: cannot rename \(partial) to \(final): \(DataDirectory.describe(errno))")
        }
        finished = true
        _ = try? syncFile(directory)
        return BackupResult(seq: seq, pages: total, bytes: bytes)
    }

    /// fsyncs `path` (a file or a directory) and returns its size.
    private static func syncFile(_ path: String) throws(HearthError) -> Int64 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HearthError(.unavailable, "backup: cannot open \(path): \(DataDirectory.describe(errno))") }
        defer { _ = close(fd) }
        guard fsync(fd) == 0 else { throw HearthError(.unavailable, "backup: cannot sync \(path): \(DataDirectory.describe(errno))") }
        var st = stat()
        _ = fstat(fd, &st)
        return Int64(st.st_size)
    }
}
