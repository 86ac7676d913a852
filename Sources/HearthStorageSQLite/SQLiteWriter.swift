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

/// The writer connection and its statements: `apply` (documents, change log, index entries through
/// `SQLiteIndexWriter`), retention pruning, and recovery from the commit log at open. Used only by the
/// store's writer lock holder (`CommitPipeline`'s applier thread, or the writer thread of a store without a
/// log).
final class SQLiteWriter {
    let connection: SQLiteConnection
    private let retention: RetentionPolicy
    /// Whether a commit log makes groups durable before SQLite commits them without syncing (`CommitPipeline`);
    /// false for a store opened without the directory's lock (tests only), whose commits SQLite syncs itself
    /// (`synchronous = FULL`).
    let logged: Bool
    /// The store's history ID, stamped on every log frame.
    let history: UInt64
    /// The last seq committed to SQLite through this writer.
    private(set) var appliedSeq: UInt64
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    private let readMeta: SQLiteStatement
    private let writeMeta: SQLiteStatement
    private let insertCommit: SQLiteStatement
    private let insertChange: SQLiteStatement
    private let upsertDocument: SQLiteStatement
    private let deleteDocument: SQLiteStatement
    private let oldestCommits: SQLiteStatement
    private let pruneChanges: SQLiteStatement
    private let pruneCommits: SQLiteStatement
    private let putCatalog: SQLiteStatement
    private let currentDocument: SQLiteStatement
    private let index: SQLiteIndexWriter

    /// The counters kept in `meta`, read and written inside each `apply` transaction (so they are right even
    /// if another connection wrote in between).
    private struct Meta {
        var lastSeq: UInt64 = 0
        var prunedThrough: UInt64 = 0
        var logBytes: Int64 = 0
    }

    /// Takes over `connection`, already set up by `SQLiteSchema.prepare(writer:path:)` (when `logged`, call
    /// `recover(from:directory:)` before the first `apply`).
    init(connection c: SQLiteConnection, retention: RetentionPolicy, logged: Bool) throws(HearthError) {
        connection = c
        self.retention = retention
        self.logged = logged
        history = UInt64(bitPattern: try c.queryInt("SELECT value FROM meta WHERE key = 'history_id'"))
        appliedSeq = try Self.storedLastSeq(c)
        if !logged { try c.exec("PRAGMA synchronous = FULL", "setting pragmas") }
        begin = try c.prepare("BEGIN IMMEDIATE", name: "begin apply")
        commit = try c.prepare("COMMIT", name: "commit apply")
        rollback = try c.prepare("ROLLBACK", name: "roll back apply")
        readMeta = try c.prepare("SELECT key, value FROM meta", name: "read meta")
        writeMeta = try c.prepare("UPDATE meta SET value = ?2 WHERE key = ?1", name: "write meta")
        insertCommit = try c.prepare("INSERT INTO commits (seq, commit_us, bytes, request_id, request_answer) VALUES (?1, ?2, ?3, ?4, ?5)",
                                     name: "insert commit")
        insertChange = try c.prepare("""
            INSERT INTO changes (seq, path, before_data, before_create_us, before_update_us, before_seq,
                                 after_data, after_create_us, after_update_us, after_seq, checksum, id)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """, name: "insert change")
        upsertDocument = try c.prepare("""
            INSERT INTO documents (collection, id, data, create_us, update_us, seq, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (collection, id) DO UPDATE SET
                data = excluded.data, create_us = excluded.create_us, update_us = excluded.update_us, seq = excluded.seq,
                checksum = excluded.checksum
            """, name: "put document")
        deleteDocument = try c.prepare("DELETE FROM documents WHERE collection = ?1 AND id = ?2", name: "delete document")
        oldestCommits = try c.prepare("SELECT seq, commit_us, bytes FROM commits ORDER BY seq", name: "scan oldest commits")
        pruneChanges = try c.prepare("DELETE FROM changes WHERE id < ?1", name: "prune changes")
        pruneCommits = try c.prepare("DELETE FROM commits WHERE seq <= ?1", name: "prune commits")
        putCatalog = try c.prepare("INSERT OR REPLACE INTO index_catalog (id, data, seq, checksum) VALUES (1, ?1, ?2, ?3)",
                                   name: "put index catalog")
        currentDocument = try c.prepare("SELECT data, create_us, update_us, seq, checksum FROM documents WHERE collection = ?1 AND id = ?2",
                                        name: "read the document a logged commit replaced")
        index = try SQLiteIndexWriter(connection: c)
    }

    func close() { connection.close() }

    /// Commits the group to SQLite in one transaction: synced (`synchronous = FULL`) for a store without a
    /// commit log, not synced otherwise (`CommitPipeline`'s applier: the log made the group durable). On any
    /// failure the transaction is rolled back and the connection stays usable, except that a COMMIT that
    /// reported an error yet committed (SQLite's `last_seq` shows the group) counts as applied when the log
    /// holds the group.
    func apply(_ commits: [CommitRecord]) throws(HearthError) {
        var commits = commits
        if logged && lastApplyFailed {
            // A retry after a failure whose COMMIT may have committed after all: skip what SQLite holds.
            let stored = try Self.storedLastSeq(connection)
            if let first = commits.first, first.seq <= stored { commits.removeAll { $0.seq <= stored } }
        }
        guard let newest = commits.last else { lastApplyFailed = false; return }
        do { try commitToSQLite(commits) } catch {
            if logged, let stored = try? Self.storedLastSeq(connection), stored == newest.seq {
                appliedSeq = newest.seq
                lastApplyFailed = false
                return
            }
            lastApplyFailed = true
            throw error
        }
        appliedSeq = newest.seq
        lastApplyFailed = false
    }

    /// The last `apply` failed: the next one first checks what SQLite holds.
    private var lastApplyFailed = false

    /// `meta.last_seq` as the database holds it now, outside any transaction of this writer.
    private static func storedLastSeq(_ c: SQLiteConnection) throws(HearthError) -> UInt64 {
        UInt64(bitPattern: try c.queryInt("SELECT value FROM meta WHERE key = 'last_seq'"))
    }

    /// Run once at open, before any `apply`: applies to SQLite every group of the log past SQLite's last seq
    /// (SQLite lost its unsynced tail in a power loss, or the process died between the two), in order, then
    /// syncs SQLite's files and the data directory (so a new store's schema and history ID, written without
    /// syncing, are durable before any frame names that history) and empties the log. A torn last frame (a
    /// crash during its append, so its group was never acknowledged) is dropped. Throws DATA_LOSS when the log
    /// is damaged before its end or does not continue from SQLite's last seq, and INTERNAL when it belongs to
    /// another store.
    func recover(from log: CommitLog, directory: String) throws(HearthError) -> CommitLogRecovery {
        // A segment the log was rotated out of comes first (`CommitLog.retiredName`).
        let retiredPath = DataDirectory.file(CommitLog.retiredName, in: directory)
        var st = stat()
        let hasRetired = stat(retiredPath, &st) == 0
        var segments: [(path: String, bytes: [UInt8])] = []
        if hasRetired {
            let retired = try CommitLog(directory: directory, name: CommitLog.retiredName)
            defer { retired.close() }
            segments.append((retiredPath, try retired.readAll()))
        }
        segments.append((log.path, try log.readAll()))
        var frames: [(frame: CommitLog.Frame, path: String)] = []
        var tear: CommitLog.Tear?
        var tornPath = log.path
        for segment in segments {
            let parsed = try CommitLog.parse(segment.bytes, path: segment.path, history: history, storeSeq: appliedSeq)
            frames += parsed.frames.map { ($0, segment.path) }
            if let t = parsed.tear {
                tear = t
                tornPath = segment.path
            }
        }
        var recovery = CommitLogRecovery(path: tornPath, storeSeq: appliedSeq, tear: tear)
        for (f, path) in frames {   // all of this store's history (`parse` refuses another's)
            guard f.lastSeq > appliedSeq else { continue }
            guard f.prevSeq == appliedSeq else {
                throw HearthError(.dataLoss, "storage: \(path): the group of seq \(f.firstSeq)...\(f.lastSeq) was appended after seq \(f.prevSeq) but the store ends at seq \(appliedSeq): the commits in between are lost")
            }
            let (commits, includingBefore) = try CommitRecordCodec.decode(f.payload)
            guard commits.first?.seq == f.firstSeq, commits.last?.seq == f.lastSeq else {
                throw HearthError(.dataLoss, "storage: \(path): the group at offset \(f.offset) holds seqs other than its header's \(f.firstSeq)...\(f.lastSeq)")
            }
            try commitToSQLite(commits, readingBefore: !includingBefore)
            appliedSeq = f.lastSeq
            recovery.groups += 1
            recovery.commits += commits.count
        }
        recovery.recoveredSeq = appliedSeq
        try connection.syncFiles()
        try DataDirectory.sync(directory)
        if !frames.isEmpty || tear != nil { try log.reset() }
        // SQLite's synced files hold every frame of the retired segment now; one that cannot be removed is
        // read again (and skipped) by the next open, and replaced by the next rotation.
        if hasRetired, unlink(retiredPath) == 0 { try DataDirectory.sync(directory) }
        return recovery
    }

    /// One BEGIN IMMEDIATE … COMMIT for the whole group, not synced (the log made it durable). Change and
    /// commit rows are appended commit by commit; document rows and index entries are gathered and written at
    /// the end, in key order, each once (`TransactionWrites`). With `readingBefore`, each mutation's before
    /// image is the document as the commits before it in the group leave it (a group from the log, whose frames
    /// leave before images out). On any failure the transaction is rolled back and the connection stays usable.
    private func commitToSQLite(_ commits: [CommitRecord], readingBefore: Bool = false) throws(HearthError) {
        guard let newest = commits.last else { return }
        try begin.run()
        do {
            var meta = try loadMeta()
            try CommitValidation.check(commits, after: meta.lastSeq)
            try SQLiteSchema.checkKeyable(commits)
            var writes = TransactionWrites(tracksVersions: readingBefore)
            for c in commits { meta.logBytes += try insert(c, readingBefore: readingBefore, into: &writes) }
            try writes.forEachDocumentInKeyOrder { (d) throws(HearthError) in
                if let doc = d.version { try put(doc, collection: d.collection) } else { try delete(d.path, collection: d.collection) }
            }
            try index.apply(writes)
            meta.lastSeq = newest.seq
            let prunedBefore = meta.prunedThrough
            try prune(&meta, cutoff: retention.ageCutoff(newest: newest.commitTime))
            try store("last_seq", Int64(bitPattern: meta.lastSeq))
            try store("log_bytes", meta.logBytes)
            if meta.prunedThrough != prunedBefore { try store("pruned_through", Int64(bitPattern: meta.prunedThrough)) }
            try commit.run()
        } catch {
            if connection.inTransaction { try? rollback.run() }
            throw error
        }
    }

    // MARK: - Steps of apply

    /// The document at `path` as the commits gathered so far in `writes` leave it, or else as SQLite holds it
    /// (checked against its row checksum): the before image of a commit from the log.
    private func storedVersion(_ path: DocumentPath, _ writes: TransactionWrites) throws(HearthError) -> StoredDocument? {
        if let gathered = writes.version(of: path) { return gathered }
        let s = currentDocument
        defer { s.reset() }
        let collection = path.collectionDescription
        try s.bind(1, collection)
        try s.bind(2, path.id)
        guard try s.step() else { return nil }
        return try RowChecksum.verifiedDocument(s, path: path, collection: collection)
    }

    private func loadMeta() throws(HearthError) -> Meta {
        defer { readMeta.reset() }
        var meta = Meta()
        var found = 0
        while try readMeta.step() {
            switch readMeta.text(0) {
            case "last_seq": meta.lastSeq = readMeta.uint64(1); found += 1
            case "pruned_through": meta.prunedThrough = readMeta.uint64(1); found += 1
            case "log_bytes": meta.logBytes = readMeta.int64(1); found += 1
            default: break
            }
        }
        guard found == 3 else { throw SQLiteFailure.corrupt("meta lacks last_seq, pruned_through or log_bytes") }
        return meta
    }

    private func store(_ key: String, _ value: Int64) throws(HearthError) {
        try writeMeta.bind(1, key)
        try writeMeta.bind(2, value)
        try writeMeta.run()
    }

    /// Writes one commit's log rows and the index catalog when it carries one, and gathers its documents and
    /// index entries into `writes`; returns its image bytes. Index changes and the catalog are not logged:
    /// `changes(after:)` rebuilds records without them. Every document and change row is written with its
    /// checksum (`RowChecksum`). With `readingBefore`, each mutation's before image is the document as the
    /// transaction leaves it so far (a commit from the log).
    private func insert(_ c: CommitRecord, readingBefore: Bool, into writes: inout TransactionWrites) throws(HearthError) -> Int64 {
        var bytes: Int64 = 0
        for (order, var m) in c.mutations.enumerated() {
            if readingBefore { m.before = try storedVersion(m.path, writes) }
            bytes += Int64(m.before?.data.count ?? 0) + Int64(m.after?.data.count ?? 0)
            try log(m, seq: c.seq, order: order)
            writes.write(m.path, m.after)
        }
        // `bytes` is `c.imageBytes` with the before images as written.
        try insertCommit.bind(1, c.seq)
        try insertCommit.bind(2, c.commitTime.micros)
        try insertCommit.bind(3, bytes)
        if let r = c.request {
            try insertCommit.bind(4, r.id)
            try insertCommit.bind(5, blob: r.answer)
        } else {
            try insertCommit.bindNull(4)
            try insertCommit.bindNull(5)
        }
        try insertCommit.run()
        writes.index(c.indexChanges)
        if let catalog = c.indexCatalog {
            let s = putCatalog
            defer { s.reset() }
            try s.bind(1, blob: catalog)
            try s.bind(2, c.seq)
            try s.bind(3, RowChecksum.catalog(catalog, seq: c.seq))
            _ = try s.step()
        }
        return bytes
    }

    /// Appends one row to the change log, keyed by its seq and place in the commit (`SQLiteSchema.changeID`);
    /// the images' bytes are bound in place (no copy) for the insert.
    private func log(_ m: Mutation, seq: UInt64, order: Int) throws(HearthError) {
        let s = insertChange
        defer { s.reset() }
        try s.bind(1, seq)
        try s.bind(12, SQLiteSchema.changeID(seq: seq, order: order))
        let path = m.path.description
        try s.bind(2, path)
        try bindImage(m.before, at: 3)
        try bindImage(m.after, at: 7)
        try s.bind(11, RowChecksum.change(seq: seq, path: path, before: m.before, after: m.after))
        try withBytes(m.before) { (before) throws(HearthError) in
            try withBytes(m.after) { (after) throws(HearthError) in
                if let before { try s.bindStatic(3, before) }
                if let after { try s.bindStatic(7, after) }
                _ = try s.step()
            }
        }
    }

    /// Binds an image's times and seq at `c + 1 ... c + 3`, or NULL in all four columns when absent (the data
    /// column `c` is bound in place by the caller when present).
    private func bindImage(_ doc: StoredDocument?, at c: Int32) throws(HearthError) {
        guard let doc else {
            for i in c...(c + 3) { try insertChange.bindNull(i) }
            return
        }
        try insertChange.bind(c + 1, doc.createTime.micros)
        try insertChange.bind(c + 2, doc.updateTime.micros)
        try insertChange.bind(c + 3, doc.seq)
    }

    private func put(_ doc: StoredDocument, collection: String) throws(HearthError) {
        let s = upsertDocument
        defer { s.reset() }
        try s.bind(1, collection)
        try s.bind(2, doc.path.id)
        try s.bind(4, doc.createTime.micros)
        try s.bind(5, doc.updateTime.micros)
        try s.bind(6, doc.seq)
        try s.bind(7, RowChecksum.document(collection: collection, id: doc.path.id, doc))
        try withBytes(doc) { (data) throws(HearthError) in
            try s.bindStatic(3, data!)
            _ = try s.step()
        }
    }

    private func delete(_ path: DocumentPath, collection: String) throws(HearthError) {
        try deleteDocument.bind(1, collection)
        try deleteDocument.bind(2, path.id)
        try deleteDocument.run()
    }

    /// Removes the oldest whole commits while retention says so (see `RetentionPolicy.prunesOldest`).
    private func prune(_ meta: inout Meta, cutoff: Int64) throws(HearthError) {
        var through = meta.prunedThrough
        do {
            defer { oldestCommits.reset() }
            while try oldestCommits.step() {
                let commitMicros = oldestCommits.int64(1)
                guard retention.prunesOldest(commitMicros: commitMicros, logBytes: meta.logBytes, cutoff: cutoff) else { break }
                meta.logBytes -= oldestCommits.int64(2)
                through = oldestCommits.uint64(0)
            }
        }
        guard through != meta.prunedThrough else { return }
        meta.prunedThrough = through
        try pruneChanges.bind(1, SQLiteSchema.changeIDs(after: through))
        try pruneChanges.run()
        try pruneCommits.bind(1, through)
        try pruneCommits.run()
    }

    /// Lends `doc`'s data bytes (nil when there is no document) for the duration of `body`.
    private func withBytes<R>(_ doc: StoredDocument?, _ body: (UnsafeRawBufferPointer?) throws(HearthError) -> R) throws(HearthError) -> R {
        guard let doc else { return try body(nil) }
        // Array.withUnsafeBytes only rethrows untyped errors; carry the typed one out in a Result.
        let result = doc.data.withUnsafeBytes { bytes in
            Result { () throws(HearthError) -> R in try body(bytes) }
        }
        return try result.get()
    }
}

/// What `SQLiteWriter.recover()` found in the commit log at open, for the daemon's log.
public struct CommitLogRecovery: Sendable, Equatable {
    public var path: String
    /// SQLite's last seq before recovery.
    public var storeSeq: UInt64
    /// Groups and commits applied from the log.
    public var groups = 0
    public var commits = 0
    /// The last seq after recovery.
    public var recoveredSeq: UInt64 = 0
    /// The bytes at the end of the log that were not a whole frame (dropped).
    public var tearDescription: String?
    public var tearOffset: Int?

    init(path: String, storeSeq: UInt64, tear: CommitLog.Tear?) {
        self.path = path
        self.storeSeq = storeSeq
        self.recoveredSeq = storeSeq
        tearDescription = tear?.description
        tearOffset = tear?.offset
    }

    /// One line for the daemon's log; nil when there was nothing to recover.
    public var summary: String? {
        guard groups > 0 || tearDescription != nil else { return nil }
        var s = "commit log \(path): "
        if groups > 0 {
            s += "applied \(groups) group\(groups == 1 ? "" : "s") (\(commits) commit\(commits == 1 ? "" : "s")) the store lacked, seq \(storeSeq + 1)...\(recoveredSeq)"
        } else {
            s += "the store already held every group (through seq \(recoveredSeq))"
        }
        if let tearDescription {
            s += "; dropped a torn last frame, \(tearDescription): a crash during an append leaves one, and its commits were not acknowledged"
        }
        return s
    }
}
