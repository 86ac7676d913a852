import HearthModel
import HearthStorage

/// The composite indexes as reader threads see them: the engine publishes its catalog here each time it
/// changes (loop thread), and a reader plans its query with the catalog that was current while it opened its
/// snapshot (`open`).
///
/// Why that catalog is valid at the snapshot's seq on the node that commits: an index becomes `.ready` in the
/// engine only after its backfill is durable, and a drop removes it from the engine before any of its entries
/// is purged. So a catalog read before the snapshot opened lists as ready only indexes whose entries the
/// snapshot holds, and a catalog still current after it opened lists no index whose purge the snapshot could
/// include. `open` reads the version before and after opening the snapshot and tries again in the rare case
/// that it moved.
///
/// On a node that follows another's commits (`Engine.storeMayLead`) that argument does not hold: its catalog
/// is the one of its published seq, and the store may already hold a drop and the purge of the dropped
/// index's entries that it has not published. So when a snapshot is ahead of the seq the catalog is known
/// valid at (`publishedThrough`), `open` takes the catalog the snapshot itself holds (one more read of it, on
/// the reader thread), which is valid at the snapshot's seq by the same argument on the committer's side.
public final class IndexCatalogView: Sendable {
    private struct State {
        var version: UInt64 = 0
        var indexes: [IndexDefinition] = []
        /// The store may lead this node: the seq the catalog is valid at (nil: the store never leads).
        var publishedThrough: UInt64?
    }
    private let state = Locked(State())
    private let codec: (any IndexCatalogCodec)?

    public init(codec: (any IndexCatalogCodec)? = nil) { self.codec = codec }

    /// Replaces the catalog (the engine, whenever its `indexes` change).
    func publish(_ indexes: [IndexDefinition]) {
        state.withLock { s in
            s.version &+= 1
            s.indexes = indexes
        }
    }

    /// On a node the store may lead: the seq it has published (the catalog is valid there); nil once the
    /// store does not lead it (it commits).
    func publishedThrough(_ seq: UInt64?) {
        state.withLock { $0.publishedThrough = seq }
    }

    /// The current catalog and its version.
    public var current: (version: UInt64, indexes: [IndexDefinition]) { state.withLock { ($0.version, $0.indexes) } }

    /// Opens a snapshot with `openSnapshot` and returns it with the catalog valid at its seq (any thread).
    public func open(_ openSnapshot: () throws(HearthError) -> any StoreSnapshot) throws(HearthError) -> (snapshot: any StoreSnapshot, indexes: [IndexDefinition]) {
        var attempts = 0
        while true {
            let before = state.withLock { $0 }
            let snapshot = try openSnapshot()
            // The seq the catalog is valid at as it is now (a node that stopped committing meanwhile has one).
            let after = state.withLock { ($0.version, $0.publishedThrough) }
            if after.0 == before.version {
                guard let valid = after.1, snapshot.seq > valid, let codec else { return (snapshot, before.indexes) }
                do throws(HearthError) {
                    guard let data = try snapshot.indexCatalog() else { return (snapshot, []) }
                    let catalog: IndexCatalog
                    do { catalog = try codec.decode(data) } catch {
                        throw StorageDamage.indexCatalog("the catalog at seq \(snapshot.seq) does not decode: \(error.message)")
                    }
                    return (snapshot, catalog.indexes)
                } catch {
                    snapshot.close()
                    throw error
                }
            }
            snapshot.close()
            attempts += 1
            // A catalog changes a few times a second at most (declarations, drops, backfills finishing).
            guard attempts < 100 else { throw HearthError(.unavailable, "the index catalog kept changing while the read began; retry") }
        }
    }
}
