import HearthModel

/// The coordination role of the storage protocol: a store that several daemons share (PostgreSQL), where
/// exactly one of them, the committer, writes at a time (docs/architecture.md, "Nodes over PostgreSQL").
///
/// The committer holds the store's writer lock for as long as its session lives, and a lease it renews;
/// the others (followers) read the lease to learn where to send writes, and publish the committer's commits
/// from the store's `CommitFeed`. A committer that stops renewing (frozen, cut off) is deposed once its lease
/// has run out: a follower ends its session, which releases the lock, and takes the lock itself. A deposed
/// committer's groups fail (its session is gone, and the fence on the stored `last_seq` refuses a group built
/// on a history that moved on).
///
/// Every method blocks on the database: call them off the loop thread, from one thread at a time.
public protocol ClusterStore: DocumentStore {
    /// One round of the election for `node`: a committer whose lease ran out is deposed, and the writer lock
    /// is taken when free. Returns who the committer is now; when it is `node`, the store accepts `apply`
    /// from now on and `term` and `lastSeq` say where the new term begins.
    func campaign(_ node: ClusterNode, leaseMs: Int) throws(HearthError) -> CommitterLease

    /// Renews the lease of the committer's `term`; false when this node is no longer the committer (its
    /// session was ended, or another node took the lock), after which `apply` refuses every group.
    func renewLease(term: UInt64, leaseMs: Int) throws(HearthError) -> Bool

    /// Gives the writer lock and the lease up at once (a clean stop), so another node takes over without
    /// waiting for the lease to run out.
    func resign(term: UInt64)

    /// A commit feed on a connection of its own, looking for commits on its own every `recheck` seconds.
    func feed(recheck: Double) throws(HearthError) -> any CommitFeed
}

/// How a node names itself to the others.
public struct ClusterNode: Sendable, Equatable {
    /// The node's name in logs and in the lease (`--node-name`).
    public var name: String
    /// Where the other nodes reach it to forward writes (`--advertise HOST:PORT`); nil: it cannot be reached,
    /// so while it is the committer the others answer writes with UNAVAILABLE.
    public var address: String?

    public init(name: String, address: String?) {
        self.name = name
        self.address = address
    }
}

/// The committer as the store's lease row says, after one round of the election.
public struct CommitterLease: Sendable, Equatable {
    /// The committer's name and address, when one holds an unexpired lease (or has just been elected).
    public var committer: ClusterNode?
    /// The term of that lease: every election adds one.
    public var term: UInt64
    /// True when the asking node is the committer (it holds the writer lock).
    public var isMine: Bool
    /// The stored `last_seq` as this round read it: when `isMine`, where the term begins (the node publishes
    /// up to it before it commits); else how far the database is, to tell how far behind the node is.
    public var lastSeq: UInt64

    public init(committer: ClusterNode?, term: UInt64, isMine: Bool, lastSeq: UInt64) {
        self.committer = committer
        self.term = term
        self.isMine = isMine
        self.lastSeq = lastSeq
    }
}
