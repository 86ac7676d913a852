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
/// Durability: `apply` appends the group to `<directory>/commit.log` and fdatasyncs it, makes it readable, and
/// returns; SQLite gets it later from the applier thread, in bounded transactions of the oldest groups, without
/// syncing (`CommitPipeline`). Every read merges the groups SQLite does not hold yet (`PendingCommits`), so it
/// sees every group `apply` returned for. A group `apply` returned for survives a process crash or power loss:
/// the next open applies again whatever the log holds past SQLite. The log rotates every
/// `defaultLogResetBytes`; SQLite's files are synced before a rotated segment is removed, and at close. WAL frames are copied into hearth.db by
/// `SQLiteCheckpointer` on another connection and thread. The reasons behind each setting are in
/// docs/storage.md.
///
/// Errors: every SQLite failure becomes a `HearthError` (UNAVAILABLE for busy/I/O/full-disk trouble, INTERNAL
/// otherwise) naming the operation and SQLite's message. A group the log refuses leaves nothing behind; one
/// SQLite refuses after the log took it stays readable, and later groups are refused with the cause until it
/// applies (`CommitPipeline`). Calls after `close()` throw UNAVAILABLE.
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
    private let snapshotReaders = Locked(ConnectionPool())

    /// The snapshot connections kept for reuse, and the connections to hearth.db lent out (snapshots and
    /// backups), which may outlive `close()`: the write-back pacer's descriptor of hearth.db is closed only once
    /// the store's own connections and every lent one have closed (closing it drops the process's POSIX locks
    /// on the file, SQLite's included).
    private struct ConnectionPool {
        var idle: [SQLiteReader] = []
        var closed = false
        var lent = 0
        /// `close()` has closed the store's own connections.
        var ownClosed = false
        /// Nothing holds hearth.db open but the pacer: the moment to close its descriptor.
        var drained: Bool { ownClosed && lent == 0 }
    }
    private static let maxIdleSnapshotReaders = 8
    let writer: Locked<SQLiteWriter?>
    private let checkpointer: SQLiteCheckpointer
    /// Paces the applier's and the checkpointer's writes out to the disk (`SQLiteWriteback`); nil without a
    /// commit log.
    let writeback: SQLiteWriteback?

    /// Opens the store in `directory`, creating the directory and the database when missing, and locks the
    /// directory for as long as the store is open.
    ///
    /// A store of an older schema version is migrated in place (version 1 gains `index_entries`), in the open
    /// transaction. Throws INTERNAL when the file is not a Hearth store or was written by a newer schema
    /// version, and UNAVAILABLE when the directory or file cannot be created or opened (the message says why:
    /// not a directory, read-only, permission denied), or when another store holds the directory's lock (the
    /// message names the holder's pid); in that last case nothing in the directory is changed.
    ///
    /// A new store is created only in a directory that never held one: when the database holds no schema but
    /// the directory has a commit log (which every open leaves behind, `CommitPipeline.close`), the database
    /// lost its contents (truncated, deleted, or a WAL damaged before its commits), and the open throws
    /// DATA_LOSS without writing anything. With `creating: false` (`hearth check`) a database without a
    /// schema is refused in any directory.
    public convenience init(directory: String, retention: RetentionPolicy = .default, creating: Bool = true) throws(HearthError) {
        try self.init(directory: directory, retention: retention, lockingDirectory: true, creating: creating)
    }

    /// `lockingDirectory: false` opens without the lock, as a second connection set on the same files (for the
    /// storage tests that check what another process would see; never for serving).
    package init(directory: String, retention: RetentionPolicy = .default, lockingDirectory: Bool, creating: Bool = true,
                 logResetBytes: Int = SQLiteStore.defaultLogResetBytes) throws(HearthError) {
        try DataDirectory.create(directory)
        let lock = lockingDirectory ? try DataDirectoryLock(directory: directory) : nil
        let path = DataDirectory.file(Self.fileName, in: directory)
        let refusingEmpty = Self.refusalOfANewStore(path, in: directory, creating: creating)
        // Decided on the file when it cannot hold a database (missing, or shorter than SQLite's header):
        // SQLite itself would delete a WAL beside an empty file at its first read, and the WAL may be all
        // that is left of the data.
        if let refusingEmpty, Self.fileSize(path).map({ $0 < 100 }) ?? true { throw refusingEmpty }
        let newStore = !Self.hasCommitLog(in: directory)
        try Self.createDatabaseFile(path, in: directory)
        let connection = try SQLiteConnection(path: path, role: "writer", create: true)
        if connection.isReadOnly {
            connection.close()
            throw HearthError(.unavailable, "storage: \(path) is read-only (permission denied for writing)")
        }
        do {
            try SQLiteSchema.prepare(writer: connection, path: path, refusingEmpty: refusingEmpty)
        } catch {
            // Refused: the files stay exactly as found (no checkpoint of, nor removal of, a WAL that may be all
            // that is left of the data).
            connection.closeLeavingFiles()
            throw error
        }
        // The log marks the directory as a store's from now on: the schema it marks is synced first, so a
        // power loss cannot leave a log beside a database without one.
        if newStore && lockingDirectory { try connection.syncFiles() }
        let log = lockingDirectory ? try CommitLog(directory: directory) : nil
        let w = try SQLiteWriter(connection: connection, retention: retention, logged: log != nil)
        recovery = try log.map { (l) throws(HearthError) in try w.recover(from: l, directory: directory) }
        let r = try SQLiteReader(path: path)
        // Only a store whose commits SQLite does not sync (the commit log's) leaves SQLite's writes to pile up.
        let writeback = log != nil ? try SQLiteWriteback(path: path) : nil
        self.writeback = writeback
        do { checkpointer = try SQLiteCheckpointer(path: path, writeback: writeback) } catch {
            // SQLite's connections first: the pacer's close drops the process's POSIX locks on hearth.db.
            r.close()
            w.close()
            writeback?.close()
            throw error
        }
        checkpointer.attach(to: connection)
        databasePath = path
        self.retention = retention
        self.lock = lock
        reader = Locked(r)
        let writer = Locked<SQLiteWriter?>(w)
        self.writer = writer
        if let log {
            do {
                pipeline = try CommitPipeline(log: log, directory: directory, writer: writer, writeback: writeback,
                                              history: w.history, loggedSeq: w.appliedSeq, resetBytes: logResetBytes)
            } catch {
                SQLiteCheckpointer.detach(from: connection)
                checkpointer.close()
                r.close()
                w.close()
                writeback?.close()
                throw error
            }
        } else {
            pipeline = nil
        }
    }

    /// Where groups become durable and readable before SQLite holds them; nil for a store opened without the
    /// directory's lock (tests only), whose `apply` commits to SQLite with a sync.
    let pipeline: CommitPipeline?

    /// The commit log rotates once it holds this many bytes (`CommitPipeline`); a start after a power loss
    /// applies again at most the retired segment and the active log past SQLite, normally about twice this,
    /// and never more than `2 * CommitPipeline.hardLimitFactor` times it and a frame each (either segment stops
    /// at the hard limit: a log due to rotate behind a retired segment the applier has not finished grows
    /// until the applier, which then applies at once, lets it rotate).
    package static let defaultLogResetBytes = 8 << 20

    /// What the open found in the commit log (`CommitLogRecovery.summary` is the line to log); nil for a store
    /// opened without the directory's lock, which leaves the log alone.
    public let recovery: CommitLogRecovery?

    /// The directory's lock, released by `close()`.
    private let lock: DataDirectoryLock?

    /// Whether `directory` holds a commit log (which every open leaves behind: the directory held a store).
    private static func hasCommitLog(in directory: String) -> Bool { committedLog(in: directory) != nil }

    private static func committedLog(in directory: String) -> String? {
        [CommitLog.fileName, CommitLog.retiredName].map { DataDirectory.file($0, in: directory) }.first { access($0, F_OK) == 0 }
    }

    private static func fileSize(_ path: String) -> Int? {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    /// Why a database without a schema must not become a new store in `directory`, or nil when it may: DATA_LOSS
    /// when the directory held a store, NOT_FOUND when it did not and `creating` is false (`hearth check`).
    package static func refusalOfANewStore(_ path: String, in directory: String, creating: Bool) -> HearthError? {
        if let log = committedLog(in: directory) {
            return HearthError(.dataLoss, """
                storage: \(path) is missing or holds no store, but \(log) shows that this data directory held one: the database \
                lost its contents (hearth.db truncated or deleted, or hearth.db-wal damaged before its commits). \
                Nothing was changed. Restore the newest backup into a new data directory (docs/operations.md, \
                "Backup and restore"); to start an empty store here instead, remove \(directory) first
                """)
        }
        return creating ? nil : HearthError(.notFound, "storage: \(path) holds no Hearth store (no schema)")
    }

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
        let pending = pipeline?.pending.lastSeq ?? 0
        return max(pending, try read { r throws(HearthError) in try r.meta("last_seq") })
    }

    public func oldestResumableSeq() throws(HearthError) -> UInt64 {
        try read { r throws(HearthError) in try r.meta("pruned_through") }
    }

    public func historyID() throws(HearthError) -> UInt64 {
        try read { r throws(HearthError) in try r.meta("history_id") }
    }

    public func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        if let found = pipeline?.pending.committedRequest(id) { return found }
        return try read { r throws(HearthError) in try r.committedRequest(id) }
    }

    public func indexCatalog() throws(HearthError) -> [UInt8]? {
        if let catalog = pipeline?.pending.indexCatalog { return catalog }
        return try read { r throws(HearthError) in try r.indexCatalog() }
    }

    public func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        if let pipeline, let doc = pipeline.pending.document(path) { return doc }
        return try read { r throws(HearthError) in try r.get(path) }
    }

    public func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        try readMerged { (r, p, _) throws(HearthError) in
            guard let p else { return try r.list(collection: collection, afterID: afterID, limit: limit) }
            return try p.list(collection: collection, afterID: afterID, limit: limit, base: r)
        }
    }

    public func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try readMerged { (r, p, _) throws(HearthError) in
            guard let p else { return try r.index.scan(from: lower, to: upper, reverse: reverse, limit: limit) }
            return try p.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit, base: r)
        }
    }

    public func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try readMerged { (r, p, _) throws(HearthError) in
            guard let p else { return try r.index.count(from: lower, to: upper) }
            return try p.countIndex(from: lower, to: upper, base: r)
        }
    }

    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        // Built on the reader connection, visited after it is returned (the visitor may read the store).
        let entries = try readMerged { (r, p, _) throws(HearthError) in
            if let p { return try p.indexEntries(from: lower, to: upper, reverse: reverse, limit: limit, base: r) }
            return try r.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit)
        }
        for e in entries { guard try e.withView(visit) else { return } }
    }

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try readMerged { (r, p, baseSeq) throws(HearthError) in
            guard let p else { return try r.changes(after: after, limit: limit) }
            return try p.changes(after: after, limit: limit, baseSeq: baseSeq, base: r)
        }
    }

    /// A read transaction on a connection of its own (reused once closed).
    public func snapshot() throws(HearthError) -> any StoreSnapshot {
        let pooled: SQLiteReader? = try snapshotReaders.withLock { (p: inout ConnectionPool) throws(HearthError) in
            guard !p.closed else { throw CommitValidation.closed }
            p.lent += 1
            return p.idle.popLast()
        }
        let r: SQLiteReader
        if let pooled { r = pooled } else {
            do throws(HearthError) { r = try SQLiteReader(path: databasePath) } catch {
                connectionReturned()
                throw error
            }
        }
        // The pending groups first, then SQLite's state: the applier can only have moved SQLite past some of
        // them meanwhile (`PendingCommits`).
        let pending = pipeline?.pending ?? PendingCommits()
        let baseSeq: UInt64
        do throws(HearthError) { baseSeq = try r.beginSnapshot() } catch {
            r.close()
            connectionReturned()
            throw error
        }
        let unapplied = pending.after(baseSeq)
        return SQLiteSnapshot(reader: r, seq: max(baseSeq, unapplied.lastSeq ?? 0), baseSeq: baseSeq,
                              pending: unapplied, store: self)
    }

    /// Takes back a snapshot's connection, its transaction ended.
    func returnReader(_ r: SQLiteReader) {
        r.endSnapshot()
        let keep = snapshotReaders.withLock { p in
            guard !p.closed, p.idle.count < Self.maxIdleSnapshotReaders else { return false }
            p.idle.append(r)
            p.lent -= 1
            return true
        }
        if !keep {
            r.close()
            connectionReturned()
        }
    }

    /// A connection lent out has closed; the last one after `close()` closes the write-back pacer.
    private func connectionReturned() {
        let drained = snapshotReaders.withLock { p in
            p.lent -= 1
            return p.drained
        }
        if drained { writeback?.close() }
    }

    /// `SQLiteBackup`, on a connection of its own; stops early once the store closes.
    public func backup(to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult {
        let isClosed = { self.snapshotReaders.withLock { $0.closed } }
        try snapshotReaders.withLock { (p: inout ConnectionPool) throws(HearthError) in
            guard !p.closed else { throw CommitValidation.closed }
            p.lent += 1   // the backup's source connection
        }
        defer { connectionReturned() }
        // The copy is of SQLite's files: every commit acknowledged before the backup goes into them first.
        try pipeline?.drain()
        return try SQLiteBackup.run(source: databasePath, to: directory) { p in !isClosed() && progress(p) }
    }

    public func apply(_ commits: [CommitRecord]) throws(HearthError) {
        if let pipeline { return try pipeline.append(commits) }   // it refuses groups once closed
        try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
            guard let w else { throw CommitValidation.closed }
            try CommitValidation.check(commits, after: w.appliedSeq)
            try w.apply(commits)
        }
    }

    /// Tests: keeps the newest `groups` acknowledged groups out of SQLite (0: none), so that reads merge them.
    package func holdApplier(_ groups: Int) { pipeline?.hold(groups) }
    /// Tests: the applier's rate the commit log's pace assumes, as if measured over a whole window
    /// (`CommitPipeline.assumeApplierRate`).
    package func assumeApplierRate(_ bytesPerSecond: Double) { pipeline?.assumeApplierRate(bytesPerSecond) }
    /// Tests: waits until the commit log's writer waits for the pace (`CommitPipeline.waitUntilPaced`).
    package func waitUntilPaced(within seconds: Double) -> Bool { pipeline?.waitUntilPaced(within: seconds) ?? false }
    /// Tests: coalesces the backlog's groups now, the held ones included (`CommitPipeline.coalesceNow`).
    package func coalesceBacklog() { pipeline?.coalesceNow() }
    /// Tests: how long the applier lets a backlog gather (`CommitPipeline.setBatchInterval`).
    package func setApplierInterval(seconds: Double) { pipeline?.setBatchInterval(Int(seconds * 1e9)) }
    /// Tests: waits until the applier has coalesced what it would (`CommitPipeline.waitUntilCoalesced`).
    package func waitForCoalescing(within seconds: Double) -> Bool { pipeline?.waitUntilCoalesced(within: seconds) ?? true }

    /// Tests: `body` runs on the applier thread after each of its transactions (nil: nothing).
    package func afterEachApplierTransaction(_ body: (@Sendable () -> Void)?) { pipeline?.afterEachTransaction(body) }

    /// Tests: how many times the commit log was retired (renamed `commit.log.1`) since the store opened.
    package var logRotations: Int { pipeline?.rotations ?? 0 }

    /// The background applier's counters (nil: a store without a commit log).
    public var applier: ApplierStatus? {
        guard var status = pipeline?.counters else { return nil }
        if let w = writeback {
            let state = w.state
            status.writebacks = state.syncs
            status.writebackFailures = state.failures
            status.writebackFailure = w.failure?.message
        }
        return status
    }

    /// Waits until SQLite holds every commit acknowledged before the call.
    package func drainApplier() throws(HearthError) { try pipeline?.drain() }

    /// Checkpoints the background checkpointer has completed since the store opened, and whether it is idle
    /// (none running or asked for).
    package var backgroundCheckpoints: (completed: Int, idle: Bool) { checkpointer.state }
    /// The write-back pacer's passes, files synced, failed passes, and whether it is idle (nil without a commit
    /// log).
    package var writebackState: (passes: Int, syncs: Int, failures: Int, idle: Bool)? { writeback?.state }
    /// Whether the write-back pacer still holds its descriptors (nil without a commit log).
    package var writebackIsOpen: Bool? { writeback?.isOpen }
    /// Waits up to `seconds` until the write-back pacer has nothing owed (tests: a barrier after the applier
    /// drained); false if it still had.
    package func waitForWritebackIdle(within seconds: Double = 30) -> Bool { writeback?.waitUntilIdle(within: seconds) ?? true }
    /// The WAL size, in pages, that wakes the background checkpointer.
    package static var checkpointThresholdPages: Int { Int(SQLiteCheckpointer.thresholdPages) }

    /// Closes the connections (waiting for a running `apply` and checkpoint to finish). The writer closes last
    /// so that it checkpoints the WAL into hearth.db and removes the -wal and -shm files. Idempotent.
    public func close() {
        // The backlog goes into SQLite, whose files are synced, and the log is emptied (one that cannot be
        // applied stays in the log for the next open).
        pipeline?.close()
        writer.withLock { w in
            guard let w else { return }
            SQLiteCheckpointer.detach(from: w.connection)
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
        // After SQLite's last connection: closing its descriptor of hearth.db drops the process's POSIX locks.
        // A snapshot or a backup still open closes it when it ends (`connectionReturned`).
        let drained = snapshotReaders.withLock { p in
            p.ownClosed = true
            return p.drained
        }
        if drained { writeback?.close() }
        lock?.release()
    }

    /// A read on the reader connection merged with the pending groups: `body` gets the groups SQLite does not
    /// hold yet (nil when there are none: SQLite alone is the latest state) and SQLite's seq, inside one read
    /// transaction when there are.
    func readMerged<R>(_ body: (SQLiteReader, PendingCommits?, UInt64) throws(HearthError) -> R) throws(HearthError) -> R {
        let pending = pipeline?.pending ?? PendingCommits()
        return try read { (r) throws(HearthError) -> R in
            if pending.isEmpty { return try body(r, nil, 0) }
            let baseSeq = try r.beginSnapshot()
            defer { r.endSnapshot() }
            let unapplied = pending.after(baseSeq)
            return try body(r, unapplied.isEmpty ? nil : unapplied, baseSeq)
        }
    }

    func read<R>(_ body: (SQLiteReader) throws(HearthError) -> R) throws(HearthError) -> R {
        try reader.withLock { (r: inout SQLiteReader?) throws(HearthError) -> R in
            guard let r else { throw CommitValidation.closed }
            return try body(r)
        }
    }
}
