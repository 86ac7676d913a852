import HearthModel

/// The commit feed role of the storage protocol: every commit after a seq, in seq order, as the store holds
/// it, for a node that publishes commits it did not make (several daemons over one PostgreSQL schema). A
/// feed waits for new commits without polling the database in a loop: the store wakes it when a commit lands
/// (PostgreSQL's NOTIFY), and it also looks on its own every `recheck` seconds, so a lost wake-up costs at
/// most that long.
///
/// Used by one thread at a time. Read it or `close()` it: an open feed that is never read may hold back what
/// the store keeps for it (PostgreSQL queues notifications until every listener has read them, and a full
/// queue fails commits). After `close()`, `next` throws UNAVAILABLE. A feed follows the store's history as
/// it is: commits the database lost (a failover to an asynchronous standby that lacked them) and whose seqs
/// were then taken again are not detected by the feed; the writer refuses to continue such a history.
public protocol CommitFeed: AnyObject {
    /// The commits after `after`, ascending, at most `limit`, each as `DocumentStore.changes` returns it;
    /// waits up to `timeout` seconds for the first one when there is none yet, then returns what there is
    /// (empty on timeout). Nil when the log no longer holds every commit after `after` (retention pruned
    /// them): the caller resets, as a stale resume does. UNAVAILABLE while the store cannot be reached; the
    /// next call tries again.
    func next(after: UInt64, limit: Int, timeout: Double) throws(HearthError) -> [CommitRecord]?

    func close()
}
