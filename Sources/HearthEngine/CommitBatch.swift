import HearthModel
import HearthStorage

/// Commits handed to the store as one durable transaction (group commit). Created on the loop thread by
/// `Engine.takeBatch()`, applied on the writer thread, finished on the loop thread by `Engine.finish`.
public final class CommitBatch: @unchecked Sendable {
    /// The records to apply, ascending seq. Immutable once the batch exists.
    public let records: [CommitRecord]
    /// Loop-thread only: completions, in the same order as `records`.
    let pending: [PendingCommit]

    /// Set on the writer thread once the store holds the batch (read by the snapshot gate on the loop).
    private let landed = Locked(false)

    init(pending: [PendingCommit]) {
        self.pending = pending
        self.records = pending.map(\.record)
    }

    /// True once the store has committed the batch (it may not be published yet).
    var hasLanded: Bool { landed.withLock { $0 } }

    func markLanded() { landed.withLock { $0 = true } }
}

/// What a client gets back for a durable commit.
public struct CommitOutcome: Sendable {
    public var seq: UInt64
    public var commitTime: Timestamp
    public var results: [WriteResult]
    /// True when this is the answer of an earlier commit with the same request ID (a retry, not applied again).
    public var duplicate = false
}

/// A commit applied in memory (visible to later writes) and waiting to be durable.
final class PendingCommit {
    let record: CommitRecord
    let results: [WriteResult]
    let completion: (Result<CommitOutcome, HearthError>) -> Void
    /// Retries of the same request ID that arrived while this commit was pending: answered with its outcome.
    var retries: [(Result<CommitOutcome, HearthError>) -> Void] = []
    /// Run once this commit has its outcome, after its completion, with whether it was published
    /// (`Engine.afterPending`).
    var settled: [(Bool) -> Void] = []
    /// The index catalog `record.indexCatalog` encodes: the durable one once this commit is published.
    let catalog: IndexCatalog?

    init(record: CommitRecord, results: [WriteResult], catalog: IndexCatalog? = nil,
         completion: @escaping (Result<CommitOutcome, HearthError>) -> Void) {
        self.record = record
        self.results = results
        self.catalog = catalog
        self.completion = completion
    }
}
