#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// The embedded, durable `DocumentStore`: one SQLite database, `<directory>/hearth.db`, in WAL mode.
///
/// Threading: two connections, each behind its own lock. The reader connection serves `get`, `list`, `scanIndex`,
/// `countIndex`, `changes`, `lastSeq` and `oldestResumableSeq` (meant for the loop thread); the writer connection
/// serves `apply` (meant for the writer thread). Reads and a write therefore run in parallel, and WAL gives every
/// read statement a snapshot of the last committed state, so a read never sees part of a group. A second thread
/// calling the same side just waits for the lock (correct, but it serializes).
///
/// Durability: `apply` appends the group to `<directory>/commit.log` and fdatasyncs it (`CommitLog`), then
/// commits it to SQLite without syncing (`synchronous = NORMAL`); a group `apply` returned for survives a
/// process crash or power loss, and the next open applies again whatever SQLite lost. SQLite's files are
/// synced and the log emptied every `defaultLogResetBytes` of log and at close. WAL frames are copied into
/// hearth.db by `SQLiteCheckpointer` on a third connection and thread, never inside a commit. Readers see a
/// group once SQLite has committed it. The reasons behind each setting are in docs/storage.md.
///
/// Errors: every SQLite failure becomes a `HearthError` (UNAVAILABLE for busy/I/O/full-disk trouble, INTERNAL
/// otherwise) naming the operation and SQLite's message; a failed `apply` is rolled back and the store stays
/// usable. Calls after `close()` throw UNAVAILABLE.
///
/// One store per data directory: the store holds an exclusive lock on `<directory>/LOCK` from open to `close()`
/// (`DataDirectoryLock`), so a second store, in this process or another, is refused with the holder's pid.
public final class SQLiteStore: DocumentStore {
    /// The database file's name inside the data directory.
    public static let fileName = "hearth.db"

    /// `<directory>/hearth.db`.
    public let databasePath: String
    /// How long the change log keeps commits (applied at each `apply`).
    public let retention: RetentionPolicy

    let reader: Locked<SQLiteReader?>
    /// Idle reader connections for snapshots (opened on demand, kept up to `maxIdleSnapshotReaders`), and
    /// whether the store is closed.
    private let snapshotReaders = Locked<(idle: [SQLiteReader], closed: Bool)>(([], false))
    private static let maxIdleSnapshotReaders = 8
    let writer: Locked<SQLiteWriter?>
    private let checkpointer: SQLiteCheckpointer

    /// Opens the store in `directory`, creating the directory and the database when missing, and locks the
    /// directory for as long as the store is open.
    ///
    /// A store of an older schema version is migrated in place (version 1 gains `index_entries`), in the open
    /// transaction. Throws INTERNAL when the file is not a Hearth store or was written by a newer schema
    /// version, and UNAVAILABLE when the directory or file cannot be created or opened (the message says why:
    /// not a directory, read-only, permission denied), or when another store holds the directory's lock (the
    /// message names the holder's pid); in that last case nothing in the directory is changed.
    public convenience init(directory: String, retention: RetentionPolicy = .default) throws(HearthError) {
        try self.init(directory: directory, retention: retention, lockingDirectory: true)
    }

    /// `lockingDirectory: false` opens without the lock, as a second connection set on the same files (for the
    /// storage tests that check what another process would see; never for serving).
    package init(directory: String, retention: RetentionPolicy = .default, lockingDirectory: Bool,
                 logResetBytes: Int = SQLiteStore.defaultLogResetBytes) throws(HearthError) {
        try DataDirectory.create(directory)
        let lock = lockingDirectory ? try DataDirectoryLock(directory: directory) : nil
        let path = DataDirectory.file(Self.fileName, in: directory)
        try Self.createDatabaseFile(path, in: directory)
        let connection = try SQLiteConnection(path: path, role: "writer", create: true)
        if connection.isReadOnly {
            connection.close()
            throw HearthError(.unavailable, "storage: \(path) is read-only (permission denied for writing)")
        }
        try SQLiteSchema.prepare(writer: connection, path: path)
        let log = lockingDirectory ? try CommitLog(directory: directory) : nil
        let w = try SQLiteWriter(connection: connection, retention: retention, log: log, logResetBytes: logResetBytes)
        recovery = try w.recover(directory: directory)
        let r = try SQLiteReader(path: path)
        checkpointer = try SQLiteCheckpointer(path: path)
        checkpointer.attach(to: connection)
        databasePath = path
        self.retention = retention
        self.lock = lock
        reader = Locked(r)
        writer = Locked(w)
    }

    /// The commit log is emptied, after syncing SQLite's files, once it holds this many bytes: the most a
    /// start after a power loss applies again.
    package static let defaultLogResetBytes = 8 << 20

    /// What the open found in the commit log (`CommitLogRecovery.summary` is the line to log); nil for a store
    /// opened without the directory's lock, which leaves the log alone.
    public let recovery: CommitLogRecovery?

    /// The directory's lock, released by `close()`.
    private let lock: DataDirectoryLock?

    /// Creates an empty `hearth.db` with mode 0600 when there is none, so SQLite (which would create it 0644)
    /// finds it and gives its -wal, -shm and -journal files the same mode. Names the file and the reason when
    /// it cannot: a directory in the way, permission denied, read-only file system.
    private static func createDatabaseFile(_ path: String, in directory: String) throws(HearthError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 { _ = Glibc.close(fd); return }
        let failure = errno
        switch failure {
        case EROFS: throw HearthError(.unavailable, "storage: the data directory \(directory) is read-only (read-only file system): cannot open \(path)")
        default: throw HearthError(.unavailable, "storage: cannot open the database \(path): \(DataDirectory.describe(failure))")
        }
    }

    deinit { close() }

    public func lastSeq() throws(HearthError) -> UInt64 {
        try read { r throws(HearthError) in try r.meta("last_seq") }
    }

    public func oldestResumableSeq() throws(HearthError) -> UInt64 {
        try read { r throws(HearthError) in try r.meta("pruned_through") }
    }

    public func historyID() throws(HearthError) -> UInt64 {
        try read { r throws(HearthError) in try r.meta("history_id") }
    }

    public func indexCatalog() throws(HearthError) -> [UInt8]? {
        try read { r throws(HearthError) in try r.indexCatalog() }
    }

    public func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        try read { r throws(HearthError) in try r.get(path) }
    }

    public func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        try read { r throws(HearthError) in try r.list(collection: collection, afterID: afterID, limit: limit) }
    }

    public func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try read { r throws(HearthError) in try r.index.scan(from: lower, to: upper, reverse: reverse, limit: limit) }
    }

    public func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try read { r throws(HearthError) in try r.index.count(from: lower, to: upper) }
    }

    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        // Built on the reader connection, visited after it is returned (the visitor may read the store).
        let entries = try read { r throws(HearthError) in
            var out: [IndexEntry] = []
            try r.index.visit(from: lower, to: upper, reverse: reverse, limit: limit) { (e) throws(HearthError) in
                out.append(try e.entry())
                return true
            }
            return out
        }
        for e in entries { guard try e.withView(visit) else { return } }
    }

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try read { r throws(HearthError) in try r.changes(after: after, limit: limit) }
    }

    /// A read transaction on a connection of its own (reused once closed).
    public func snapshot() throws(HearthError) -> any StoreSnapshot {
        let pooled: SQLiteReader? = try snapshotReaders.withLock { (p: inout (idle: [SQLiteReader], closed: Bool)) throws(HearthError) in
            guard !p.closed else { throw CommitValidation.closed }
            return p.idle.popLast()
        }
        let r: SQLiteReader
        if let pooled { r = pooled } else { r = try SQLiteReader(path: databasePath) }
        let seq: UInt64
        do throws(HearthError) { seq = try r.beginSnapshot() } catch { r.close(); throw error }
        return SQLiteSnapshot(reader: r, seq: seq, store: self)
    }

    /// Takes back a snapshot's connection, its transaction ended.
    func returnReader(_ r: SQLiteReader) {
        r.endSnapshot()
        let keep = snapshotReaders.withLock { p in
            guard !p.closed, p.idle.count < Self.maxIdleSnapshotReaders else { return false }
            p.idle.append(r)
            return true
        }
        if !keep { r.close() }
    }

    /// `SQLiteBackup`, on a connection of its own; stops early once the store closes.
    public func backup(to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult {
        let isClosed = { self.snapshotReaders.withLock { $0.closed } }
        guard !isClosed() else { throw CommitValidation.closed }
        return try SQLiteBackup.run(source: databasePath, to: directory) { p in !isClosed() && progress(p) }
    }

    public func apply(_ commits: [CommitRecord]) throws(HearthError) {
        try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
            guard let w else { throw CommitValidation.closed }
            try w.apply(commits)
        }
    }

    /// Checkpoints the background checkpointer has completed since the store opened, and whether it is idle
    /// (none running or asked for).
    package var backgroundCheckpoints: (completed: Int, idle: Bool) { checkpointer.state }

    /// Closes the connections (waiting for a running `apply` and checkpoint to finish). The writer closes last
    /// so that it checkpoints the WAL into hearth.db and removes the -wal and -shm files. Idempotent.
    public func close() {
        writer.withLock { w in
            guard let w else { return }
            SQLiteCheckpointer.detach(from: w.connection)
            // Everything committed is then durable in SQLite's files; the log has nothing left to give, and a
            // cleanly closed data directory holds only the database (and LOCK).
            if (try? w.syncAndEmptyLog()) != nil, let log = w.log { _ = unlink(log.path) }
        }
        checkpointer.close()
        reader.withLock { r in
            r?.close()
            r = nil
        }
        let idle = snapshotReaders.withLock { p in
            p.closed = true
            defer { p.idle.removeAll() }
            return p.idle
        }
        for r in idle { r.close() }
        writer.withLock { w in
            w?.close()
            w = nil
        }
        lock?.release()
    }

    func read<R>(_ body: (SQLiteReader) throws(HearthError) -> R) throws(HearthError) -> R {
        try reader.withLock { (r: inout SQLiteReader?) throws(HearthError) -> R in
            guard let r else { throw CommitValidation.closed }
            return try body(r)
        }
    }
}
