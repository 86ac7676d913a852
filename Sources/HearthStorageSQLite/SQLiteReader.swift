import CSQLite
import HearthModel
import HearthStorage

/// The reader connection and its statements: `get`, `list`, `changes`, the meta reads, the index catalog, and
/// the index reads (`SQLiteIndexReader`). Used only by the store's reader lock holder (the loop thread). Each
/// single-statement read sees one committed state (WAL snapshot); `changes` spans several statements, so it runs
/// them in one read transaction. Every row is checked against its checksum before it is returned; a row that
/// fails is never returned: the read throws DATA_LOSS naming it (`StorageDamage`).
final class SQLiteReader {
    let connection: SQLiteConnection
    private let getDocument: SQLiteStatement
    private let listDocuments: SQLiteStatement
    private let metaValue: SQLiteStatement
    private let commitsAfter: SQLiteStatement
    private let changesIn: SQLiteStatement
    private let catalog: SQLiteStatement
    private let request: SQLiteStatement
    private let allDocuments: SQLiteStatement
    private let groupDocuments: SQLiteStatement
    private let begin: SQLiteStatement
    private let end: SQLiteStatement
    /// `scanIndex` and `countIndex`.
    let index: SQLiteIndexReader

    init(path: String) throws(HearthError) {
        let c = try SQLiteConnection(path: path, role: "reader", create: false)
        try SQLiteSchema.prepare(reader: c)
        connection = c
        getDocument = try c.prepare(
            "SELECT data, create_us, update_us, seq, checksum FROM documents WHERE collection = ?1 AND id = ?2",
            name: "get")
        listDocuments = try c.prepare(
            "SELECT id, data, create_us, update_us, seq, checksum FROM documents WHERE collection = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
            name: "list")
        metaValue = try c.prepare("SELECT value FROM meta WHERE key = ?1", name: "read meta")
        commitsAfter = try c.prepare(
            "SELECT seq, commit_us FROM commits WHERE seq > ?1 ORDER BY seq LIMIT ?2", name: "read commits")
        changesIn = try c.prepare("""
            SELECT seq, path, before_data, before_create_us, before_update_us, before_seq,
                   after_data, after_create_us, after_update_us, after_seq, checksum, id
            FROM changes WHERE id >= ?1 AND id < ?2 ORDER BY id
            """, name: "read changes")
        catalog = try c.prepare("SELECT data, seq, checksum FROM index_catalog WHERE id = 1", name: "read index catalog")
        request = try c.prepare("SELECT seq, request_answer FROM commits WHERE request_id = ?1 ORDER BY seq LIMIT 1",
                                name: "find a request")
        // Exports: the (collection, id) row value walks documents_by_key from the cursor on.
        allDocuments = try c.prepare("""
            SELECT collection, id, data, create_us, update_us, seq, checksum FROM documents
            WHERE (collection, id) > (?1, ?2) ORDER BY collection, id LIMIT ?3
            """, name: "export documents")
        groupDocuments = try c.prepare("""
            SELECT collection, id, data, create_us, update_us, seq, checksum FROM documents
            WHERE (collection, id) > (?1, ?2) AND (collection = ?4 OR substr(collection, -length(?4) - 1) = '/' || ?4)
            ORDER BY collection, id LIMIT ?3
            """, name: "export collection group")
        begin = try c.prepare("BEGIN", name: "begin read")
        end = try c.prepare("COMMIT", name: "end read")
        index = try SQLiteIndexReader(connection: c)
    }

    func close() { connection.close() }

    func meta(_ key: String) throws(HearthError) -> UInt64 {
        defer { metaValue.reset() }
        try metaValue.bind(1, key)
        guard try metaValue.step() else { throw SQLiteFailure.corrupt("meta has no \(key)") }
        return metaValue.uint64(0)
    }

    /// The commit that carried request `id`, while the change log holds it.
    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        let s = request
        defer { s.reset() }
        try s.bind(1, id)
        guard try s.step() else { return nil }
        return CommittedRequest(seq: s.uint64(0), answer: s.bytes(1))
    }

    func indexCatalog() throws(HearthError) -> [UInt8]? {
        let s = catalog
        defer { s.reset() }
        guard try s.step() else { return nil }
        let data = s.bytes(0)
        guard RowChecksum.catalog(data, seq: s.uint64(1)) == s.int64(2) else {
            throw StorageDamage.indexCatalog("checksum mismatch")
        }
        return data
    }

    /// The document at `path`, checked against the checksum of its row, computed with the path asked for (the
    /// one served).
    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        let s = getDocument
        defer { s.reset() }
        let collection = path.collectionDescription
        try s.bind(1, collection)
        try s.bind(2, path.id)
        do {
            guard try s.step() else { return nil }
        } catch {
            throw error.code == .dataLoss ? StorageDamage.document(path.description, error.message) : error
        }
        return try RowChecksum.verifiedDocument(s, path: path, collection: collection)
    }

    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        let s = listDocuments
        defer { s.reset() }
        try s.bind(1, collection.description)
        try s.bind(2, afterID ?? "")  // every ID is non-empty, so > '' means "from the first"
        try s.bind(3, Int64(clamping: limit))
        var docs: [StoredDocument] = []
        let parent = collection.path.segments
        let collectionText = collection.description
        while try s.step() {
            let id = s.text(0)
            var sum = RowChecksum()
            sum.text(collectionText)
            sum.columns(s, 0..<5)
            guard sum.value == s.int64(5) else { throw StorageDamage.document("\(collectionText)/\(id)", "checksum mismatch") }
            let path: DocumentPath
            do { path = try DocumentPath(ResourcePath(segments: parent + [id])) } catch {
                throw StorageDamage.document("\(collectionText)/\(id)", "invalid path: \(error.message)")
            }
            docs.append(StoredDocument(path: path, data: s.bytes(1), createTime: Timestamp(micros: s.int64(2)),
                                       updateTime: Timestamp(micros: s.int64(3)), seq: s.uint64(4)))
        }
        return docs
    }

    /// `StoreSnapshot.documents`: every row checked against its checksum, as `list` does.
    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        let s: SQLiteStatement
        switch scope {
        case .collection(let c):
            guard let after, after.collection != c else { return try list(collection: c, afterID: after?.id, limit: limit) }
            // A cursor in another collection: all of `c` when the cursor sorts before it, nothing after it.
            let before = Array(after.collectionDescription.utf8).lexicographicallyPrecedes(Array(c.description.utf8))
            return before ? try list(collection: c, afterID: nil, limit: limit) : []
        case .all: s = allDocuments
        case .collectionGroup(let id):
            s = groupDocuments
            try s.bind(4, id)
        }
        defer { s.reset() }
        try s.bind(1, after?.collectionDescription ?? "")
        try s.bind(2, after?.id ?? "")
        try s.bind(3, Int64(clamping: limit))
        var docs: [StoredDocument] = []
        while try s.step() {
            let collection = s.text(0), id = s.text(1)
            var sum = RowChecksum()
            sum.columns(s, 0..<6)
            guard sum.value == s.int64(6) else { throw StorageDamage.document("\(collection)/\(id)", "checksum mismatch") }
            let path: DocumentPath
            do { path = try DocumentPath(parsing: "\(collection)/\(id)") } catch {
                throw StorageDamage.document("\(collection)/\(id)", "invalid path: \(error.message)")
            }
            docs.append(StoredDocument(path: path, data: s.bytes(2), createTime: Timestamp(micros: s.int64(3)),
                                       updateTime: Timestamp(micros: s.int64(4)), seq: s.uint64(5)))
        }
        return docs
    }

    /// Starts a read transaction and returns the seq it holds: every read until `endSnapshot()` sees that
    /// one committed state (WAL), whatever the writer commits meanwhile.
    func beginSnapshot() throws(HearthError) -> UInt64 {
        try begin.run()
        do {
            return try meta("last_seq")     // the first read fixes the snapshot
        } catch {
            endSnapshot()
            throw error
        }
    }

    /// Ends the read transaction of `beginSnapshot()`.
    func endSnapshot() {
        if connection.inTransaction { try? end.run() }
    }

    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        // Its own read transaction, unless it runs inside one already (a snapshot, a merged read).
        let own = !connection.inTransaction
        if own { try begin.run() }
        defer { if own && connection.inTransaction { try? end.run() } }
        guard after >= (try meta("pruned_through")) else { return nil }
        // Stored seqs fit in an Int64 (apply checks), so nothing lies beyond; binding a larger `after` would wrap.
        guard limit > 0, after < UInt64(Int64.max) else { return [] }
        var commits = try readCommits(after: after, limit: limit)
        guard let last = commits.last?.seq else { return [] }
        try readMutations(into: &commits, after: after, through: last)
        return commits
    }

    private func readCommits(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord] {
        let s = commitsAfter
        defer { s.reset() }
        try s.bind(1, after)
        try s.bind(2, Int64(clamping: limit))
        var commits: [CommitRecord] = []
        while try s.step() {
            commits.append(CommitRecord(seq: s.uint64(0), commitTime: Timestamp(micros: s.int64(1)), mutations: []))
        }
        return commits
    }

    /// Fills in the mutations of `commits` (ascending, seqs in (after, through]) from the changes table.
    private func readMutations(into commits: inout [CommitRecord], after: UInt64, through: UInt64) throws(HearthError) {
        let s = changesIn
        defer { s.reset() }
        try s.bind(1, SQLiteSchema.changeIDs(after: after))
        try s.bind(2, SQLiteSchema.changeIDs(after: through))
        var i = 0
        while try s.step() {
            let seq = s.uint64(0)
            // The id is not under the checksum: a row is taken only when its id names its (checked) seq.
            if let damage = SQLiteSchema.changeIDDamage(id: s.int64(11), seq: seq, path: s.text(1)) { throw damage }
            while i < commits.count && commits[i].seq < seq { i += 1 }
            guard i < commits.count, commits[i].seq == seq else {
                throw SQLiteFailure.corrupt("change of seq \(seq) has no commit row")
            }
            let text = s.text(1)
            var sum = RowChecksum()
            sum.columns(s, 0..<10)
            guard sum.value == s.int64(10) else { throw StorageDamage.change(seq: seq, path: text, "checksum mismatch") }
            let path: DocumentPath
            let segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            do { path = try DocumentPath(ResourcePath(segments: segments)) } catch {
                throw StorageDamage.change(seq: seq, path: text, "invalid path: \(error.message)")
            }
            commits[i].mutations.append(Mutation(path: path, before: image(s, path, at: 2), after: image(s, path, at: 6)))
        }
    }

    /// The document image stored in columns `at` ..< `at + 4` (data, create_us, update_us, seq), or nil.
    private func image(_ s: SQLiteStatement, _ path: DocumentPath, at c: Int32) -> StoredDocument? {
        if s.isNull(c + 3) { return nil }
        return StoredDocument(path: path, data: s.bytes(c), createTime: Timestamp(micros: s.int64(c + 1)),
                              updateTime: Timestamp(micros: s.int64(c + 2)), seq: s.uint64(c + 3))
    }
}

/// The reader as the base state `PendingCommits` merges with.
extension SQLiteReader: PendingBase {
    func scanIndexRows(from lower: [UInt8], to upper: [UInt8], reverse: Bool,
                       limit: Int) throws(HearthError) -> [(key: [UInt8], path: DocumentPath, document: StoredDocument?)] {
        try index.scanRows(from: lower, to: upper, reverse: reverse, limit: limit)
    }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try index.scan(from: lower, to: upper, reverse: reverse, limit: limit)
    }

    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try index.count(from: lower, to: upper)
    }

    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        try index.visit(from: lower, to: upper, reverse: reverse, limit: limit, visit)
    }
}
