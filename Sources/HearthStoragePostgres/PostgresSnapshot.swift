import HearthModel
import HearthStorage

/// A read transaction at one seq: REPEATABLE READ READ ONLY on a connection of its own, whose first
/// statement read `last_seq`. PostgreSQL keeps every later statement in the same snapshot, so all reads are
/// the state after commit `seq`. Used by one thread at a time.
final class PostgresSnapshot: StoreSnapshot, @unchecked Sendable {
    let seq: UInt64
    private var connection: PGConnection?
    private let store: PostgresStore

    init(connection: PGConnection, seq: UInt64, store: PostgresStore) {
        self.connection = connection
        self.seq = seq
        self.store = store
    }

    deinit { close() }

    private func reads() throws(HearthError) -> PostgresReads {
        guard let connection else { throw HearthError(.internal, "storage: a snapshot was used after close") }
        return PostgresReads(connection: connection)
    }

    /// Calls `body` with the snapshot's reads (for the store's own multi-statement reads).
    func withReads<R>(_ body: (PostgresReads) throws(HearthError) -> R) throws(HearthError) -> R { try body(try reads()) }

    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? { try reads().get(path) }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try reads().scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
    }

    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try reads().countIndex(from: lower, to: upper)
    }

    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        // The rows are all fetched before the first visit, so `visit` may read through `self` meanwhile.
        try reads().visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit, visit)
    }

    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        try reads().documents(in: scope, after: after, limit: limit)
    }

    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try reads().changes(after: after, limit: limit)
    }

    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? { try reads().committedRequest(id) }

    func indexCatalog() throws(HearthError) -> [UInt8]? { try reads().indexCatalog() }

    func close() {
        guard let c = connection else { return }
        connection = nil
        do { try c.exec("COMMIT", "ending a snapshot") } catch { c.rollBack() }
        c.unpin()
        store.release(c)
    }
}
