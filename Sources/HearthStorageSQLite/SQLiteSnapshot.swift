import HearthModel
import HearthStorage

/// A read transaction on a connection of the store's snapshot pool, merged with the groups the commit log had
/// acknowledged and SQLite did not hold yet when it began (`PendingCommits`): every read is exact at `seq`.
final class SQLiteSnapshot: StoreSnapshot, @unchecked Sendable {
    let seq: UInt64
    /// SQLite's own seq in this transaction.
    let baseSeq: UInt64
    /// The groups past `baseSeq` (empty: SQLite alone is the state at `seq`).
    let pending: PendingCommits
    private var reader: SQLiteReader?
    private let store: SQLiteStore

    init(reader: SQLiteReader, seq: UInt64, baseSeq: UInt64, pending: PendingCommits, store: SQLiteStore) {
        self.reader = reader
        self.seq = seq
        self.baseSeq = baseSeq
        self.pending = pending
        self.store = store
    }

    deinit { close() }

    func open() throws(HearthError) -> SQLiteReader {
        guard let reader else { throw HearthError(.internal, "storage: a snapshot was used after close") }
        return reader
    }

    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        if let doc = pending.document(path) { return doc }
        return try open().get(path)
    }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        let r = try open()
        if pending.isEmpty { return try r.index.scan(from: lower, to: upper, reverse: reverse, limit: limit) }
        return try pending.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit, base: r)
    }

    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        let r = try open()
        if pending.isEmpty { return try r.index.count(from: lower, to: upper) }
        return try pending.countIndex(from: lower, to: upper, base: r)
    }

    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        let r = try open()
        // The visitor runs while SQLite's statement steps, the merge with pending keys included: it may `get`
        // through this snapshot, never start another index scan on it (`StoreReads`).
        if pending.isEmpty { return try r.index.visit(from: lower, to: upper, reverse: reverse, limit: limit, visit) }
        try pending.visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit, base: r, visit)
    }

    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        let r = try open()
        if pending.isEmpty { return try r.documents(in: scope, after: after, limit: limit) }
        return try pending.documents(in: scope, after: after, limit: limit, base: r)
    }

    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        let r = try open()
        if pending.isEmpty { return try r.changes(after: after, limit: limit) }
        return try pending.changes(after: after, limit: limit, baseSeq: baseSeq, base: r)
    }

    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        let r = try open()
        if let found = pending.committedRequest(id) { return found }
        return try r.committedRequest(id)
    }

    func indexCatalog() throws(HearthError) -> [UInt8]? {
        let r = try open()
        if let catalog = pending.indexCatalog { return catalog }
        return try r.indexCatalog()
    }

    func close() {
        guard let r = reader else { return }
        reader = nil
        store.returnReader(r)
    }
}
