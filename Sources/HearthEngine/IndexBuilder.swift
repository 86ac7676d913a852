import HearthModel
import HearthStorage

/// Declared composite indexes: creation (built online by backfill steps queued like commits, so writes
/// never wait), listing, and dropping (entries removed the same way). One page of work per step.
extension Engine {
    /// Documents (or entries) one backfill step handles.
    static let backfillPage = 500

    /// Declares an index; it is maintained by every commit from now on and becomes `.ready` (usable by
    /// queries) once the backfill of existing documents is durable. Declaring an existing shape returns it.
    public func createIndex(collectionID: String, scope: IndexDefinition.Scope,
                            fields: [IndexDefinition.Field]) throws(HearthError) -> IndexDefinition {
        var def = IndexDefinition(id: nextIndexID, collectionID: collectionID, scope: scope, fields: fields, state: .building)
        try def.validate()
        if let existing = indexes.first(where: { $0.sameShape(as: def) }) { return existing }
        if diskFull != nil { try refuseForFullDisk() }   // its backfill would store entries
        nextIndexID += 1
        indexes.append(def)
        // Pending documents of the collection are covered now; durable ones page by page.
        var changes = IndexChanges()
        for (path, fields) in pendingDocuments(collectionID: collectionID) {
            guard let fields else { continue }
            for k in IndexMaintainer.compositeKeys(def, path, fields) { changes.added.append(IndexEntry(key: k, path: path)) }
        }
        if !changes.isEmpty { commitIndexChanges(changes) { _ in } }
        indexWork.append(.backfill(id: def.id, after: nil))
        def.state = .building
        onIndexesChanged?(def, .declared)
        return def
    }

    /// Drops an index: queries and writes stop using it at once; its entries are removed in the background.
    public func dropIndex(id: Int64) throws(HearthError) {
        guard let i = indexes.firstIndex(where: { $0.id == id }) else { throw HearthError(.notFound, "no index with id \(id)") }
        let dropped = indexes.remove(at: i)
        indexWork.removeAll { if case .backfill(let b, _) = $0 { return b == id } else { return false } }
        indexWork.append(.purge(id: id, after: nil))
        onIndexesChanged?(dropped, .dropped)
    }

    /// Restores indexes declared earlier (from the server's index file); building ones restart their backfill.
    public func restoreIndexes(_ defs: [IndexDefinition], nextID: Int64) {
        indexes = defs
        nextIndexID = max(nextID, (defs.map(\.id).max() ?? 0) + 1)
        for d in defs where d.state == .building { indexWork.append(.backfill(id: d.id, after: nil)) }
    }

    public var hasIndexWork: Bool { !indexWork.isEmpty }

    /// Does one page of index work (called once per loop turn while `hasIndexWork`).
    public func indexWorkStep() throws(HearthError) {
        guard let work = indexWork.first else { return }
        switch work {
        case .backfill(let id, let after):
            guard let def = indexes.first(where: { $0.id == id }) else { indexWork.removeFirst(); return }
            let prefix = IndexLayout.groupPrefix(def.collectionID)
            let lower = after.map(IndexKey.immediateSuccessor) ?? prefix
            let hits = try store.scanIndex(from: lower, to: IndexKey.prefixSuccessor(prefix) ?? [], reverse: false,
                                           limit: Engine.backfillPage)
            var changes = IndexChanges()
            for hit in hits {
                let path = hit.document.path
                guard let fields = try latestFields(path) else { continue }
                for k in IndexMaintainer.compositeKeys(def, path, fields) { changes.added.append(IndexEntry(key: k, path: path)) }
            }
            if hits.count == Engine.backfillPage, let last = hits.last {
                indexWork[0] = .backfill(id: id, after: last.key)
                if !changes.isEmpty { commitIndexChanges(changes) { _ in } }
            } else {
                indexWork.removeFirst()
                commitIndexChanges(changes) { [weak self] result in
                    guard let self, case .success = result, let i = self.indexes.firstIndex(where: { $0.id == id }) else { return }
                    self.indexes[i].state = .ready
                    self.onIndexesChanged?(self.indexes[i], .ready)
                }
            }
        case .purge(let id, let after):
            var prefix: [UInt8] = [IndexLayout.composite]
            IndexKey.encode(.int(id), into: &prefix)
            let lower = after.map(IndexKey.immediateSuccessor) ?? prefix
            let hits = try store.scanIndex(from: lower, to: IndexKey.prefixSuccessor(prefix) ?? [], reverse: false,
                                           limit: Engine.backfillPage)
            let changes = IndexChanges(removed: hits.map { IndexEntry(key: $0.key, path: $0.document.path) })
            if !changes.isEmpty { commitIndexChanges(changes) { _ in } }
            if hits.count == Engine.backfillPage, let last = hits.last {
                indexWork[0] = .purge(id: id, after: last.key)
            } else {
                indexWork.removeFirst()
            }
        }
    }
}

/// Background index work, one page at a time.
enum IndexWork {
    case backfill(id: Int64, after: [UInt8]?)
    case purge(id: Int64, after: [UInt8]?)
}
