import CSQLite
import HearthModel
import HearthStorage

/// The writer connection and its statements: `apply` (documents, change log, index entries through
/// `SQLiteIndexWriter`) and retention pruning. Used only by the store's writer lock holder (the writer thread).
final class SQLiteWriter {
    let connection: SQLiteConnection
    private let retention: RetentionPolicy
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
    private let index: SQLiteIndexWriter

    /// The counters kept in `meta`, read and written inside each `apply` transaction (so they are right even
    /// if another connection wrote in between).
    private struct Meta {
        var lastSeq: UInt64 = 0
        var prunedThrough: UInt64 = 0
        var logBytes: Int64 = 0
    }

    /// Takes over `connection`, already set up by `SQLiteSchema.prepare(writer:path:)`.
    init(connection c: SQLiteConnection, retention: RetentionPolicy) throws(HearthError) {
        connection = c
        self.retention = retention
        begin = try c.prepare("BEGIN IMMEDIATE", name: "begin apply")
        commit = try c.prepare("COMMIT", name: "commit apply")
        rollback = try c.prepare("ROLLBACK", name: "roll back apply")
        readMeta = try c.prepare("SELECT key, value FROM meta", name: "read meta")
        writeMeta = try c.prepare("UPDATE meta SET value = ?2 WHERE key = ?1", name: "write meta")
        insertCommit = try c.prepare("INSERT INTO commits (seq, commit_us, bytes) VALUES (?1, ?2, ?3)", name: "insert commit")
        insertChange = try c.prepare("""
            INSERT INTO changes (seq, path, before_data, before_create_us, before_update_us, before_seq,
                                 after_data, after_create_us, after_update_us, after_seq, checksum)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            """, name: "insert change")
        upsertDocument = try c.prepare("""
            INSERT INTO documents (collection, id, data, create_us, update_us, seq, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (collection, id) DO UPDATE SET
                data = excluded.data, create_us = excluded.create_us, update_us = excluded.update_us, seq = excluded.seq,
                checksum = excluded.checksum
            """, name: "put document")
        deleteDocument = try c.prepare("DELETE FROM documents WHERE collection = ?1 AND id = ?2", name: "delete document")
        oldestCommits = try c.prepare("SELECT seq, commit_us, bytes FROM commits ORDER BY seq", name: "scan oldest commits")
        pruneChanges = try c.prepare("DELETE FROM changes WHERE seq <= ?1", name: "prune changes")
        pruneCommits = try c.prepare("DELETE FROM commits WHERE seq <= ?1", name: "prune commits")
        putCatalog = try c.prepare("INSERT OR REPLACE INTO index_catalog (id, data, seq, checksum) VALUES (1, ?1, ?2, ?3)",
                                   name: "put index catalog")
        index = try SQLiteIndexWriter(connection: c)
    }

    func close() { connection.close() }

    /// One BEGIN IMMEDIATE … COMMIT for the whole group; with synchronous=FULL the COMMIT returns once the WAL
    /// is fsynced. On any failure the transaction is rolled back and the connection stays usable.
    func apply(_ commits: [CommitRecord]) throws(HearthError) {
        guard let newest = commits.last else { return }
        try begin.run()
        do {
            var meta = try loadMeta()
            try CommitValidation.check(commits, after: meta.lastSeq)
            for c in commits { meta.logBytes += try insert(c) }
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

    /// Writes one commit (log rows, documents, index entries, the index catalog when it carries one); returns
    /// its image bytes. Index changes and the catalog are not logged: `changes(after:)` rebuilds records
    /// without them. Every document and change row is written with its checksum (`RowChecksum`).
    private func insert(_ c: CommitRecord) throws(HearthError) -> Int64 {
        let bytes = c.imageBytes
        try insertCommit.bind(1, c.seq)
        try insertCommit.bind(2, c.commitTime.micros)
        try insertCommit.bind(3, bytes)
        try insertCommit.run()
        for m in c.mutations {
            try log(m, seq: c.seq)
            if let doc = m.after { try put(doc) } else { try delete(m.path) }
        }
        try index.apply(c.indexChanges)
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

    /// Appends one row to the change log; the images' bytes are bound in place (no copy) for the insert.
    private func log(_ m: Mutation, seq: UInt64) throws(HearthError) {
        let s = insertChange
        defer { s.reset() }
        try s.bind(1, seq)
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

    private func put(_ doc: StoredDocument) throws(HearthError) {
        let s = upsertDocument
        defer { s.reset() }
        let collection = doc.path.collection.description
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

    private func delete(_ path: DocumentPath) throws(HearthError) {
        try deleteDocument.bind(1, path.collection.description)
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
        try pruneChanges.bind(1, through)
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
