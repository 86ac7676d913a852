import CSQLite
import HearthModel
import HearthStorage

/// A read-only walk over every row of an open store, for a consistency check (`hearth check`, HearthCheck):
/// SQLite's own `integrity_check`, every document and change-log row against its checksum, and the index
/// entries. It has a connection of its own (`query_only`) and holds one read transaction from `open` to
/// `close`, so everything it reports is one consistent state even if the store takes commits meanwhile.
///
/// Rows are returned as read: a row that fails its checksum (or whose path does not parse) comes back as a
/// DATA_LOSS error naming it (`StorageDamage`), never as data.
public final class SQLiteInspection {
    private let connection: SQLiteConnection
    private let documentByKey: SQLiteStatement
    private let entryByKey: SQLiteStatement

    /// Opens the inspection of `store`'s database, once SQLite holds every commit the store acknowledged before
    /// the call (it walks SQLite's rows, not the groups only the commit log holds yet).
    public init(_ store: SQLiteStore) throws(HearthError) {
        try store.drainApplier()
        let c = try SQLiteConnection(path: store.databasePath, role: "check", create: false)
        try c.exec("PRAGMA query_only = 1; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536;", "setting pragmas")
        documentByKey = try c.prepare(
            "SELECT data, create_us, update_us, seq, checksum FROM documents WHERE collection = ?1 AND id = ?2",
            name: "check: get document")
        entryByKey = try c.prepare("SELECT collection, id FROM index_entries WHERE key = ?1", name: "check: get index entry")
        try c.exec("BEGIN", "starting the check's read transaction")
        // A statement makes the transaction take its snapshot now.
        _ = try c.queryInt("SELECT count(*) FROM meta")
        connection = c
    }

    deinit { close() }

    /// Ends the read transaction and closes the connection. Idempotent.
    public func close() {
        if connection.inTransaction { try? connection.exec("COMMIT", "ending the check's read transaction") }
        connection.close()
    }

    /// The problems `PRAGMA integrity_check` finds (b-tree structure, index/table agreement, NOT NULL, page
    /// accounting), at most `maxErrors`; empty when it answers "ok".
    public func integrityCheck(maxErrors: Int = 100) throws(HearthError) -> [String] {
        let lines = try connection.queryColumn("PRAGMA integrity_check(\(max(1, maxErrors)))")
        return lines == ["ok"] ? [] : lines
    }

    /// The number of rows of each table the check walks.
    public func counts() throws(HearthError) -> (documents: Int, changes: Int, indexEntries: Int) {
        (Int(try connection.queryInt("SELECT count(*) FROM documents")),
         Int(try connection.queryInt("SELECT count(*) FROM changes")),
         Int(try connection.queryInt("SELECT count(*) FROM index_entries")))
    }

    /// The schema version of the store (after the open's migration: the current one).
    public func schemaVersion() throws(HearthError) -> Int64 {
        try connection.queryInt("SELECT value FROM meta WHERE key = 'schema_version'")
    }

    /// The stored index catalog (checked against its checksum), or nil when none was stored.
    public func indexCatalog() throws(HearthError) -> [UInt8]? {
        let s = try connection.prepare("SELECT data, seq, checksum FROM index_catalog WHERE id = 1", name: "check: index catalog")
        defer { s.reset() }
        guard try s.step() else { return nil }
        let data = s.bytes(0)
        guard RowChecksum.catalog(data, seq: s.uint64(1)) == s.int64(2) else { throw StorageDamage.indexCatalog("checksum mismatch") }
        return data
    }

    /// Calls `body` with every document row (in rowid order, independent of `documents_by_key`): its path as
    /// stored (`collection/id`), and the document, or DATA_LOSS naming it when it fails its checksum or its
    /// path does not parse. `body` returns false to stop early.
    public func forEachDocument(_ body: (_ path: String, Result<StoredDocument, HearthError>) throws(HearthError) -> Bool) throws(HearthError) {
        let s = try connection.prepare(
            "SELECT collection, id, data, create_us, update_us, seq, checksum FROM documents", name: "check: documents")
        defer { s.reset() }
        while try s.step() {
            let collection = s.text(0), id = s.text(1)
            let name = collection + "/" + id
            var sum = RowChecksum()
            sum.columns(s, 0..<6)
            let row: Result<StoredDocument, HearthError>
            if sum.value != s.int64(6) {
                row = .failure(StorageDamage.document(name, "checksum mismatch"))
            } else {
                do {
                    let path = try DocumentPath(ResourcePath(segments: Self.segments(collection) + [id]))
                    row = .success(StoredDocument(path: path, data: s.bytes(2), createTime: Timestamp(micros: s.int64(3)),
                                                  updateTime: Timestamp(micros: s.int64(4)), seq: s.uint64(5)))
                } catch {
                    row = .failure(StorageDamage.document(name, "invalid path: \(error.message)"))
                }
            }
            guard try body(name, row) else { return }
        }
    }

    /// Calls `body` with every change-log row, ascending (by id: seq, then place in the commit): the commit
    /// seq, the path as stored, and the mutation, or DATA_LOSS naming the seq and path when it fails its
    /// checksum, its id is not of its seq (`SQLiteSchema.changeID`) or its path does not parse.
    public func forEachChange(_ body: (_ seq: UInt64, _ path: String, Result<Mutation, HearthError>) throws(HearthError) -> Bool) throws(HearthError) {
        let s = try connection.prepare("""
            SELECT seq, path, before_data, before_create_us, before_update_us, before_seq,
                   after_data, after_create_us, after_update_us, after_seq, checksum, id
            FROM changes ORDER BY id
            """, name: "check: changes")
        defer { s.reset() }
        while try s.step() {
            let seq = s.uint64(0), text = s.text(1)
            var sum = RowChecksum()
            sum.columns(s, 0..<10)
            let row: Result<Mutation, HearthError>
            if sum.value != s.int64(10) {
                row = .failure(StorageDamage.change(seq: seq, path: text, "checksum mismatch"))
            } else if let damage = SQLiteSchema.changeIDDamage(id: s.int64(11), seq: seq, path: text) {
                row = .failure(damage)
            } else {
                do {
                    let path = try DocumentPath(ResourcePath(segments: Self.segments(text)))
                    row = .success(Mutation(path: path, before: Self.image(s, path, at: 2), after: Self.image(s, path, at: 6)))
                } catch {
                    row = .failure(StorageDamage.change(seq: seq, path: text, "invalid path: \(error.message)"))
                }
            }
            guard try body(seq, text, row) else { return }
        }
    }

    /// Calls `body` with every index entry in key order: its key and the `collection` and `id` it points at
    /// (as stored: the check decides what they mean). `body` returns false to stop early.
    public func forEachIndexEntry(_ body: (_ key: [UInt8], _ collection: String, _ id: String) throws(HearthError) -> Bool) throws(HearthError) {
        let s = try connection.prepare("SELECT key, collection, id FROM index_entries ORDER BY key", name: "check: index entries")
        defer { s.reset() }
        while try s.step() {
            guard try body(s.bytes(0), s.text(1), s.text(2)) else { return }
        }
    }

    /// The `(collection, id)` the entry with `key` points at, or nil when there is no such entry.
    public func indexEntry(_ key: [UInt8]) throws(HearthError) -> (collection: String, id: String)? {
        let s = entryByKey
        defer { s.reset() }
        try s.bind(1, blob: key)
        guard try s.step() else { return nil }
        return (s.text(0), s.text(1))
    }

    /// The document row `(collection, id)`: nil when absent, DATA_LOSS naming it when it fails its checksum.
    public func document(collection: String, id: String) throws(HearthError) -> Result<StoredDocument, HearthError>? {
        let s = documentByKey
        defer { s.reset() }
        try s.bind(1, collection)
        try s.bind(2, id)
        guard try s.step() else { return nil }
        var sum = RowChecksum()
        sum.text(collection)
        sum.text(id)
        sum.columns(s, 0..<4)
        let name = collection + "/" + id
        guard sum.value == s.int64(4) else { return .failure(StorageDamage.document(name, "checksum mismatch")) }
        do {
            let path = try DocumentPath(ResourcePath(segments: Self.segments(collection) + [id]))
            return .success(StoredDocument(path: path, data: s.bytes(0), createTime: Timestamp(micros: s.int64(1)),
                                           updateTime: Timestamp(micros: s.int64(2)), seq: s.uint64(3)))
        } catch {
            return .failure(StorageDamage.document(name, "invalid path: \(error.message)"))
        }
    }

    private static func segments(_ path: String) -> [String] {
        path.utf8.split(separator: 47, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func image(_ s: SQLiteStatement, _ path: DocumentPath, at c: Int32) -> StoredDocument? {
        if s.isNull(c + 3) { return nil }
        return StoredDocument(path: path, data: s.bytes(c), createTime: Timestamp(micros: s.int64(c + 1)),
                              updateTime: Timestamp(micros: s.int64(c + 2)), seq: s.uint64(c + 3))
    }
}
