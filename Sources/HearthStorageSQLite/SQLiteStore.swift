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
/// Durability: the writer runs with `synchronous=FULL`, so `apply` returns only after the group's WAL frames
/// are fsynced; a committed group survives a process crash or power loss. WAL frames are copied into
/// hearth.db by `SQLiteCheckpointer` on a third connection and thread, never inside a commit. Readers see a group only after that
/// point. The reasons behind each setting are in docs/storage.md.
///
/// Errors: every SQLite failure becomes a `HearthError` (UNAVAILABLE for busy/I/O/full-disk trouble, INTERNAL
/// otherwise) naming the operation and SQLite's message; a failed `apply` is rolled back and the store stays
/// usable. Calls after `close()` throw UNAVAILABLE.
public final class SQLiteStore: DocumentStore {
    /// The database file's name inside the data directory.
    public static let fileName = "hearth.db"

    /// `<directory>/hearth.db`.
    public let databasePath: String
    /// How long the change log keeps commits (applied at each `apply`).
    public let retention: RetentionPolicy

    private let reader: Locked<SQLiteReader?>
    private let writer: Locked<SQLiteWriter?>
    private let checkpointer: SQLiteCheckpointer

    /// Opens the store in `directory`, creating the directory and the database when missing.
    ///
    /// A store of an older schema version is migrated in place (version 1 gains `index_entries`), in the open
    /// transaction. Throws INTERNAL when the file is not a Hearth store or was written by a newer schema
    /// version, and UNAVAILABLE when the directory or file cannot be created or opened.
    public init(directory: String, retention: RetentionPolicy = .default) throws(HearthError) {
        try DataDirectory.create(directory)
        let path = DataDirectory.file(Self.fileName, in: directory)
        let connection = try SQLiteConnection(path: path, role: "writer", create: true)
        try SQLiteSchema.prepare(writer: connection, path: path)
        let w = try SQLiteWriter(connection: connection, retention: retention)
        let r = try SQLiteReader(path: path)
        checkpointer = try SQLiteCheckpointer(path: path)
        checkpointer.attach(to: connection)
        databasePath = path
        self.retention = retention
        reader = Locked(r)
        writer = Locked(w)
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

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try read { r throws(HearthError) in try r.changes(after: after, limit: limit) }
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
        writer.withLock { w in if let w { SQLiteCheckpointer.detach(from: w.connection) } }
        checkpointer.close()
        reader.withLock { r in
            r?.close()
            r = nil
        }
        writer.withLock { w in
            w?.close()
            w = nil
        }
    }

    private func read<R>(_ body: (SQLiteReader) throws(HearthError) -> R) throws(HearthError) -> R {
        try reader.withLock { (r: inout SQLiteReader?) throws(HearthError) -> R in
            guard let r else { throw CommitValidation.closed }
            return try body(r)
        }
    }
}
