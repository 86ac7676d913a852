import HearthModel
import HearthStorage

/// The composite indexes as reader threads see them: the engine publishes its catalog here each time it
/// changes (loop thread), and a reader plans its query with the catalog that was current while it opened its
/// snapshot (`open`).
///
/// Why that catalog is valid at the snapshot's seq: an index becomes `.ready` in the engine only after its
/// backfill is durable, and a drop removes it from the engine before any of its entries is purged. So a
/// catalog read before the snapshot opened lists as ready only indexes whose entries the snapshot holds, and
/// a catalog still current after it opened lists no index whose purge the snapshot could include. `open`
/// reads the version before and after opening the snapshot and tries again in the rare case that it moved.
public final class IndexCatalogView: Sendable {
    private let state = Locked<(version: UInt64, indexes: [IndexDefinition])>((0, []))

    public init() {}

    /// Replaces the catalog (the engine, whenever its `indexes` change).
    func publish(_ indexes: [IndexDefinition]) {
        state.withLock { s in
            s.version &+= 1
            s.indexes = indexes
        }
    }

    /// The current catalog and its version.
    public var current: (version: UInt64, indexes: [IndexDefinition]) { state.withLock { ($0.version, $0.indexes) } }

    /// Opens a snapshot with `openSnapshot` and returns it with the catalog valid at its seq (any thread).
    public func open(_ openSnapshot: () throws(HearthError) -> any StoreSnapshot) throws(HearthError) -> (snapshot: any StoreSnapshot, indexes: [IndexDefinition]) {
        var attempts = 0
        while true {
            let before = current
            let snapshot = try openSnapshot()
            if state.withLock({ $0.version }) == before.version { return (snapshot, before.indexes) }
            snapshot.close()
            attempts += 1
            // A catalog changes a few times a second at most (declarations, drops, backfills finishing).
            guard attempts < 100 else { throw HearthError(.unavailable, "the index catalog kept changing while the read began; retry") }
        }
    }
}
