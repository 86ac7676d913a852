import HearthModel
import HearthStorage

/// A node of several over one shared store (docs/architecture.md, "Nodes over PostgreSQL"): one node, the
/// committer, commits; the others follow it, publishing its commits from the store's commit feed through the
/// same publication as their own (`adopt`), and reading the store as it was at their published seq
/// (`publishedReads`), since the committer moves the store ahead of them at any time.
extension Engine {
    /// The most commits a read on the loop rolls back to see the published state (a node further behind
    /// answers UNAVAILABLE until it has caught up).
    public static let maxRollbackCommits = 10_000

    /// Publishes commits another node made, in seq order, continuing exactly from the published seq (commits
    /// at or below it are skipped; a gap is the caller's bug). The same order as `finish`: the engine moves to
    /// the last seq (document cache, index catalog when one of them carries it), the listeners apply them,
    /// `onCommitted` runs (it must not run requests), and the snapshot gate wakes the reads waiting for
    /// this publication. Only while no commit of this node is queued or in flight.
    public func adopt(_ records: [CommitRecord]) {
        thread.check("Engine.adopt")
        precondition(isIdle, "commits from the feed are published only while this node has none pending")
        let fresh = records.drop { $0.seq <= lastDurableSeq }
        guard let last = fresh.last else { return }
        // Ascending; seqs may skip (a store whose earlier writer lost a group keeps the gap), never repeat.
        precondition(zip(fresh, fresh.dropFirst()).allSatisfy { $0.seq < $1.seq }, "adopted commits must ascend")
        let batch = Array(fresh)
        gate.adoptionStarted()
        if let carrier = batch.last(where: { $0.indexCatalog != nil }) { adoptCatalog(carrier.indexCatalog!, storedBy: "seq \(carrier.seq)") }
        cache.publish(batch, through: last.seq)
        writeReads.published(batch)
        lastDurableSeq = last.seq
        lastAssignedSeq = last.seq
        lastCommitMicros = max(lastCommitMicros, last.commitTime.micros)
        if storeMayLead { catalogView.publishedThrough(last.seq) }
        willPublish?(batch)
        listeners.publish(batch)
        onCommitted?(batch)
        gate.publicationFinished()
    }

    /// Where a node that fell behind what the store's change log still holds (retention pruned commits it
    /// never published) moves to: the store's seq, its index catalog there, and that commit's time. Read on
    /// any thread, from one snapshot, so that the loop waits for no store read (`reset(to:)`).
    public struct ResetPoint: Sendable {
        public let seq: UInt64
        let catalog: [UInt8]?
        let commitMicros: Int64?

        public static func read(from store: any DocumentStore) throws(HearthError) -> ResetPoint {
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let seq = snapshot.seq
            var micros: Int64?
            if seq > 0, let newest = try? snapshot.changes(after: seq - 1, limit: 1)?.first, newest.seq == seq {
                micros = newest.commitTime.micros
            }
            return ResetPoint(seq: seq, catalog: try snapshot.indexCatalog(), commitMicros: micros)
        }
    }

    /// Moves a node that fell behind retention to `point` without the commits before it: the document cache is
    /// emptied, the index catalog taken from the point, and every listener is read again, as a resume from a
    /// seq of another history is, so that it gets a reset (its whole result at the new seq). Those reads are
    /// returned, not made: hand each to a reader thread and its result to `ListenerHub.complete`. Only while
    /// nothing of this node is pending; nothing when the point is not ahead of the published seq.
    @discardableResult
    public func reset(to point: ResetPoint) -> [(Listener, FirstSnapshotRead)] {
        thread.check("Engine.reset")
        precondition(isIdle, "a node resets only while it has nothing pending")
        let seq = point.seq
        guard seq > lastDurableSeq else { return [] }
        gate.adoptionStarted()
        defer { gate.publicationFinished() }
        cache.reset(published: seq)
        writeReads.invalidateAll(at: seq)
        lastDurableSeq = seq
        lastAssignedSeq = seq
        if let micros = point.commitMicros { lastCommitMicros = max(lastCommitMicros, micros) }
        if indexCatalogCodec != nil, let data = point.catalog { adoptCatalog(data, storedBy: "the store") }
        if storeMayLead { catalogView.publishedThrough(seq) }
        return listeners.resetAll()
    }

    /// Takes the index catalog another node's commit stored. Backfills and purges it lists are queued as on
    /// a restart, and run only once this node commits.
    private func adoptCatalog(_ data: [UInt8], storedBy: String) {
        guard let codec = indexCatalogCodec else { return }
        do {
            let catalog = try codec.decode(data)
            indexWork.removeAll()
            restore(catalog)
            durableCatalog = catalog
            catalogDirty = false
        } catch {
            onDataLoss?(StorageDamage.indexCatalog("the catalog stored by \(storedBy) does not decode: \(error.message)"))
        }
    }

    /// Runs `body` with reads of the store exactly at the published seq, and the versions to take instead of
    /// the stored ones (nil: absent) for documents changed after it.
    ///
    /// A single daemon's store is at the published seq but for a batch landing (the snapshot gate confirms
    /// such reads): `body` gets the store and no versions. On a node whose store others commit to
    /// (`storeMayLead`), `body` gets a snapshot at the store's seq and, for every document the commits after
    /// the published seq changed, its version before them, read from the snapshot's change log: exact
    /// without waiting, and nothing the gate needs to confirm.
    func publishedReads<R>(_ body: (any StoreReads, [DocumentPath: StoredDocument?]) throws(HearthError) -> R) throws(HearthError) -> R {
        guard storeMayLead else { return try storeRead { (s) throws(HearthError) in try body(s, [:]) } }
        do throws(HearthError) {
            loopStoreReads &+= 1
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            let published = lastDurableSeq
            guard snapshot.seq >= published else {
                throw HearthError(.unavailable, "the store is at seq \(snapshot.seq), behind this node's published seq \(published) (the database lost commits?)")
            }
            var ahead: [DocumentPath: StoredDocument?] = [:]
            if snapshot.seq > published {
                // Every commit in (published, snapshot.seq]: the log's last one is the snapshot's (seqs may skip).
                guard let later = try snapshot.changes(after: published, limit: Self.maxRollbackCommits + 1),
                      later.count <= Self.maxRollbackCommits, later.last?.seq == snapshot.seq else {
                    throw HearthError(.unavailable, "this node has published seq \(published) and the store is at \(snapshot.seq): too far behind to read at its seq; try again once it has caught up")
                }
                ahead = ListenerHub.stateBefore(later[...])
            }
            return try body(snapshot, ahead)
        } catch {
            if error.code == .dataLoss { onDataLoss?(error) }
            throw error
        }
    }
}

extension Engine {
    /// A node elected committer continues the seq it has published (seqs a failed batch of an earlier term
    /// took are given again). Only while nothing is pending.
    public func continueFromPublished() {
        thread.check("Engine.continueFromPublished")
        precondition(isIdle, "the committer's term starts with nothing pending")
        lastAssignedSeq = lastDurableSeq
    }
}
