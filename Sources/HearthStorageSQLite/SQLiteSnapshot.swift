import HearthModel
import HearthStorage

/// A read transaction on a reader connection of its own: every read sees the state after commit `seq`.
/// Used by one thread at a time; `close()` ends the transaction and gives the connection back to the store.
final class SQLiteSnapshot: StoreSnapshot, @unchecked Sendable {
    let seq: UInt64
    private var reader: SQLiteReader?
    private let store: SQLiteStore

    init(reader: SQLiteReader, seq: UInt64, store: SQLiteStore) {
        self.reader = reader
        self.seq = seq
        self.store = store
    }

    deinit { close() }

    func open() throws(HearthError) -> SQLiteReader {
        guard let reader else { throw HearthError(.internal, "storage: a snapshot was used after close") }
        return reader
    }

    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? { try open().get(path) }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try open().index.scan(from: lower, to: upper, reverse: reverse, limit: limit)
    }

    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try open().index.count(from: lower, to: upper)
    }

    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        try open().index.visit(from: lower, to: upper, reverse: reverse, limit: limit, visit)
    }

    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        try open().documents(in: scope, after: after, limit: limit)
    }

    func close() {
        guard let r = reader else { return }
        reader = nil
        store.returnReader(r)
    }
}
