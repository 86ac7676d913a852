import HearthModel
import HearthStorage

/// Encodes the index catalog for the store (the server injects the JSON form, as it does the document codec):
/// the engine never looks at the bytes it stores.
public protocol IndexCatalogCodec: Sendable {
    func encode(_ catalog: IndexCatalog) -> [UInt8]
    func decode(_ data: [UInt8]) throws(HearthError) -> IndexCatalog
}

/// Declared composite indexes: creation (built online by backfill steps queued like commits, so writes
/// never wait), listing, and dropping (entries removed the same way). One page of work per step.
///
/// The catalog (declarations, the next id, the drops still being purged) is stored with the commits: every
/// change of it marks it dirty, and the next commit the engine queues carries it (`CommitRecord.indexCatalog`),
/// so a declaration is durable in the same transaction as the entries it brings (the entries of documents
/// still waiting for durability). A change that did not become durable (a failed batch) is rolled back with
/// the documents (`rollBackCatalog`): its request was answered with the failure.
extension Engine {
    /// Documents (or entries) one backfill step handles.
    static let backfillPage = 500

    /// The catalog as it is in memory (what the next commit carrying it stores).
    public var indexCatalog: IndexCatalog {
        IndexCatalog(indexes: indexes, nextID: nextIndexID, dropping: droppingIndexes, ttl: ttlPolicies)
    }

    /// Sets the TTL policy of a collection group (replacing its previous one); `completion` runs once the
    /// catalog change is durable. Returns false (and `completion` never runs) when that policy is already set.
    @discardableResult
    public func setTTL(_ policy: TTLPolicy, completion: @escaping (Result<CommitOutcome, HearthError>) -> Void = { _ in }) throws(HearthError) -> Bool {
        if let problem = ResourcePath.problem(withID: policy.collectionGroup) {
            throw .invalid("collection group \"\(policy.collectionGroup.prefix(64))\" is not a collection ID: \(problem)")
        }
        guard !policy.field.isDocumentID else { throw .invalid("the TTL field cannot be __name__") }
        if ttlPolicies.contains(policy) { return false }
        ttlPolicies.removeAll { $0.collectionGroup == policy.collectionGroup }
        ttlPolicies.append(policy)
        ttlPolicies.sort { $0.collectionGroup.utf8.lexicographicallyPrecedes($1.collectionGroup.utf8) }
        catalogDirty = true
        commitIndexChanges(IndexChanges(), completion: completion)
        return true
    }

    /// Removes the TTL policy of a collection group; NOT_FOUND when it has none.
    public func removeTTL(collectionGroup: String, completion: @escaping (Result<CommitOutcome, HearthError>) -> Void = { _ in }) throws(HearthError) {
        guard ttlPolicies.contains(where: { $0.collectionGroup == collectionGroup }) else {
            throw HearthError(.notFound, "no TTL policy for collection group \"\(collectionGroup.prefix(64))\"")
        }
        ttlPolicies.removeAll { $0.collectionGroup == collectionGroup }
        catalogDirty = true
        commitIndexChanges(IndexChanges(), completion: completion)
    }

    /// Declares an index; it is maintained by every commit from now on and becomes `.ready` (usable by
    /// queries) once the backfill of existing documents is durable. Declaring an existing shape returns it
    /// (`isNew` false, and `completion` is never called). Otherwise the declaration is queued as a commit with
    /// the entries of the collection's documents not yet durable, and `completion` runs once that commit is
    /// durable (or failed).
    @discardableResult
    public func createIndex(collectionID: String, scope: IndexDefinition.Scope, fields: [IndexDefinition.Field],
                            completion: @escaping (Result<CommitOutcome, HearthError>) -> Void = { _ in })
        throws(HearthError) -> (index: IndexDefinition, isNew: Bool) {
        var def = IndexDefinition(id: nextIndexID, collectionID: collectionID, scope: scope, fields: fields, state: .building)
        try def.validate()
        if let existing = indexes.first(where: { $0.sameShape(as: def) }) { return (existing, false) }
        if diskFull != nil { try refuseForFullDisk() }   // its backfill would store entries
        nextIndexID += 1
        indexes.append(def)
        // Pending documents of the collection are covered now; durable ones page by page.
        var changes = IndexChanges()
        for (path, fields) in pendingDocuments(collectionID: collectionID) {
            guard let fields else { continue }
            for k in IndexMaintainer.compositeKeys(def, path, fields) { changes.added.append(IndexEntry(key: k, path: path)) }
        }
        catalogDirty = true
        commitIndexChanges(changes, completion: completion)
        startBackfill(def.id)
        def.state = .building
        onIndexesChanged?(def, .declared)
        return (def, true)
    }

    /// Drops an index: queries and writes stop using it at once; its entries are removed in the background
    /// (the drop is recorded in the catalog until they are, so the removal resumes after a restart).
    /// `completion` runs once the catalog change is durable.
    public func dropIndex(id: Int64, completion: @escaping (Result<CommitOutcome, HearthError>) -> Void = { _ in }) throws(HearthError) {
        guard let i = indexes.firstIndex(where: { $0.id == id }) else { throw HearthError(.notFound, "no index with id \(id)") }
        let dropped = indexes.remove(at: i)
        indexWork.removeAll { if case .backfill(let b, _, _) = $0 { return b == id } else { return false } }
        droppingIndexes.append(id)
        catalogDirty = true
        commitIndexChanges(IndexChanges(), completion: completion)
        indexWork.append(.purge(id: id, after: nil))
        onIndexesChanged?(dropped, .dropped)
    }

    /// Restores the catalog read from the store (at init): building indexes restart their backfill, drops
    /// their purge.
    func restore(_ catalog: IndexCatalog) {
        indexes = catalog.indexes
        droppingIndexes = catalog.dropping
        ttlPolicies = catalog.ttl
        nextIndexID = max(catalog.nextID, ((catalog.indexes.map(\.id) + catalog.dropping).max() ?? 0) + 1)
        for d in indexes where d.state == .building { startBackfill(d.id) }
        for id in droppingIndexes { indexWork.append(.purge(id: id, after: nil)) }
    }

    /// Adopts a catalog kept outside the store by an older Hearth (`indexes.json`): it replaces the
    /// in-memory catalog and is queued as a commit; `completion` runs once it is durable. For a store that
    /// has no catalog of its own (`loadedStoredCatalog` false), before any index is declared.
    /// The file is durable already: the catalog is the one a failed batch rolls back to (its ids are those of
    /// the entries in the store), and a later commit carrying a catalog stores it if the import's own fails.
    public func importIndexCatalog(_ catalog: IndexCatalog, completion: @escaping (Result<CommitOutcome, HearthError>) -> Void) {
        precondition(indexCatalogCodec != nil, "importing an index catalog needs a catalog codec")
        indexWork.removeAll()
        restore(catalog)
        durableCatalog = catalog
        catalogDirty = true
        commitIndexChanges(IndexChanges(), completion: completion)
    }

    /// The catalog, and its encoding, when it changed since a commit last carried it (then it is carried by
    /// the commit being built), else nil.
    func takeDirtyCatalog() -> (data: [UInt8], catalog: IndexCatalog)? {
        guard catalogDirty, let codec = indexCatalogCodec else { return nil }
        catalogDirty = false
        let catalog = indexCatalog
        return (codec.encode(catalog), catalog)
    }

    /// `afterPending` for an answer judged against the index catalog in memory (an index that exists, a TTL
    /// policy in force, a listing), which can be ahead of the durable one: `body` runs once the newest commit
    /// carrying a change of it has its outcome, with whether the catalog the answer describes is durable (a
    /// failed batch rolls the catalog back, `rollBackCatalog`). False when it already is.
    public func afterCatalogDurable(_ body: @escaping (Bool) -> Void) -> Bool {
        // Every change of the catalog is queued in a commit at once (`commitIndexChanges` takes it), and a
        // failed one is rolled back: the catalog in memory is the durable one or that of a pending commit.
        assert(!catalogDirty || indexCatalogCodec == nil, "a change of the index catalog that no commit carries")
        // Once the newest commit carrying the catalog is published, so is every change of the catalog before
        // it; commits that carry none (a later write that fails) do not decide the answer.
        return afterNewestPending(where: { $0.catalog != nil }, body)
    }

    /// Pending (not yet durable) versions of documents whose collection ID is `collectionID`.
    func pendingDocuments(collectionID: String) -> [(DocumentPath, MapValue?)] {
        overlay.compactMap { (path, e) in
            guard path.collectionID == collectionID else { return nil }
            if let f = e.fields { return (path, f) }
            if let d = e.doc { return (path, try? codec.decode(d.data)) }
            return (path, nil)
        }
    }

    /// A batch failed, and with it every commit pending (`finish`): the catalog goes back to the durable one, as
    /// the documents do, so a declaration, drop or policy whose commit failed (and was answered so) is not
    /// stored by a later commit. Backfills and purges start over from it, as after a restart.
    func rollBackCatalog() {
        guard let durable = durableCatalog, durable != indexCatalog || catalogDirty else { return }
        let changed = indexes.filter { d in !durable.indexes.contains { $0.id == d.id } }
            + durable.indexes.filter { d in !indexes.contains { $0.id == d.id } }
        indexWork.removeAll()
        restore(durable)
        catalogDirty = false
        for d in changed { onIndexesChanged?(d, .takenBack) }
    }

    public var hasIndexWork: Bool { !indexWork.isEmpty }

    /// Queues (again) the whole backfill of index `id`: a new generation, so completions of the pages of an
    /// earlier one (a page that failed to become durable restarts it) cannot mark it ready.
    private func startBackfill(_ id: Int64) {
        indexWork.removeAll { if case .backfill(let b, _, _) = $0 { return b == id } else { return false } }
        backfillGeneration += 1
        indexWork.append(.backfill(id: id, after: nil, generation: backfillGeneration))
    }

    /// Whether a backfill of `generation` is still the current one for index `id`.
    private func isCurrentBackfill(_ id: Int64, _ generation: Int) -> Bool {
        indexWork.contains { if case .backfill(id, _, generation) = $0 { return true } else { return false } }
            || !indexWork.contains { if case .backfill(id, _, _) = $0 { return true } else { return false } }
    }

    /// Does one page of index work (called once per loop turn while `hasIndexWork`). A page that meets a
    /// damaged document (DATA_LOSS) stops that work: the index stays building (or its drop pending) until a
    /// restart after the damage is repaired, and the error is reported through `onDataLoss`.
    public func indexWorkStep() throws(HearthError) {
        guard let work = indexWork.first else { return }
        do {
            try step(work)
        } catch where error.code == .dataLoss {
            indexWork.removeFirst()
            onDataLoss?(HearthError(.dataLoss, "index work on #\(work.indexID) stopped: \(error.message)"))
        }
    }

    /// The index range the next page of `work` scans; nil (and the work dropped) when its index is gone.
    private func pageRange(_ work: IndexWork) -> (lower: [UInt8], upper: [UInt8])? {
        switch work {
        case .backfill(let id, let after, _):
            guard let def = indexes.first(where: { $0.id == id }) else {
                indexWork.removeFirst()
                return nil
            }
            let prefix = IndexLayout.groupPrefix(def.collectionID)
            return (after.map(IndexKey.immediateSuccessor) ?? prefix, IndexKey.prefixSuccessor(prefix) ?? [])
        case .purge(let id, let after):
            var prefix: [UInt8] = [IndexLayout.composite]
            IndexKey.encode(.int(id), into: &prefix)
            return (after.map(IndexKey.immediateSuccessor) ?? prefix, IndexKey.prefixSuccessor(prefix) ?? [])
        }
    }

    private func step(_ work: IndexWork) throws(HearthError) {
        guard let range = pageRange(work) else { return }
        let hits = try storeRead { store throws(HearthError) in
            try store.scanIndex(from: range.lower, to: range.upper, reverse: false, limit: Engine.backfillPage)
        }
        try apply(work, hits)
    }

    /// The next page of index work, the scan of its range read off the loop (a store across the network): run
    /// `read(on:)` on a reader's snapshot, then give the result to `indexWorkStep(_:_:)`. Nil when there is no
    /// work. One at a time.
    public func indexWorkRead() -> IndexWorkPage? {
        thread.check("Engine.indexWorkRead")
        guard let work = indexWork.first, let range = pageRange(work) else { return nil }
        writeReads.startScan()
        return IndexWorkPage(work: work, lower: range.lower, upper: range.upper)
    }

    /// Does the page `indexWorkRead` asked for with what a reader scanned. A document a commit published since
    /// the page was asked for changed is not taken from the scan (its version is read as a write reads it); a
    /// page of work that moved on meanwhile (a drop, a restarted backfill) is dropped.
    public func indexWorkStep(_ page: IndexWorkPage, _ scanned: Result<[IndexHit], HearthError>) throws(HearthError) {
        thread.check("Engine.indexWorkStep")
        let changed = writeReads.endScan()
        guard let work = indexWork.first, work == page.work else { return }
        do {
            let hits = try scanned.get()
            if case .backfill = work, let changed {
                for hit in hits where !changed.contains(hit.document.path) { writeReads.learn(hit.document, at: hit.document.path, published: false) }
            }
            defer { forgetLearned() }
            try apply(work, hits)
        } catch where error.code == .dataLoss {
            indexWork.removeFirst()
            onDataLoss?(HearthError(.dataLoss, "index work on #\(work.indexID) stopped: \(error.message)"))
        }
    }

    private func apply(_ work: IndexWork, _ hits: [IndexHit]) throws(HearthError) {
        switch work {
        case .backfill(let id, _, let generation):
            guard let def = indexes.first(where: { $0.id == id }) else {
                indexWork.removeFirst()
                return
            }
            var changes = IndexChanges()
            for hit in hits {
                let path = hit.document.path
                guard let fields = try latestFields(path) else { continue }
                for k in IndexMaintainer.compositeKeys(def, path, fields) { changes.added.append(IndexEntry(key: k, path: path)) }
            }
            // A page that does not become durable restarts the backfill (its entries would be missing).
            let restartOnFailure: (Result<CommitOutcome, HearthError>) -> Void = { [weak self] result in
                guard let self, case .failure = result, self.isCurrentBackfill(id, generation),
                      self.indexes.contains(where: { $0.id == id }) else { return }
                self.startBackfill(id)
            }
            if hits.count == Engine.backfillPage, let last = hits.last {
                indexWork[0] = .backfill(id: id, after: last.key, generation: generation)
                if !changes.isEmpty { commitIndexChanges(changes, completion: restartOnFailure) }
            } else {
                indexWork.removeFirst()
                commitIndexChanges(changes) { [weak self] result in
                    guard let self else { return }
                    guard case .success = result else { return restartOnFailure(result) }
                    guard self.isCurrentBackfill(id, generation), let i = self.indexes.firstIndex(where: { $0.id == id }) else { return }
                    // Ready once every entry is durable; the catalog saying so is carried by a commit of its own.
                    self.indexes[i].state = .ready
                    self.catalogDirty = true
                    self.commitIndexChanges(IndexChanges()) { _ in }
                    self.onIndexesChanged?(self.indexes[i], .ready)
                }
            }
        case .purge(let id, _):
            let changes = IndexChanges(removed: hits.map { IndexEntry(key: $0.key, path: $0.document.path) })
            let restartOnFailure: (Result<CommitOutcome, HearthError>) -> Void = { [weak self] result in
                guard let self, case .failure = result, self.droppingIndexes.contains(id) else { return }
                self.indexWork.removeAll { if case .purge(id, _) = $0 { return true } else { return false } }
                self.indexWork.append(.purge(id: id, after: nil))
            }
            if hits.count == Engine.backfillPage, let last = hits.last {
                indexWork[0] = .purge(id: id, after: last.key)
                if !changes.isEmpty { commitIndexChanges(changes, completion: restartOnFailure) }
            } else {
                indexWork.removeFirst()
                // The last page and the catalog without the drop, in one commit: once it is durable, nothing
                // of the index is left and nothing says so.
                droppingIndexes.removeAll { $0 == id }
                catalogDirty = true
                commitIndexChanges(changes) { result in
                    // Not durable: the catalog was rolled back to the durable one, which still lists the drop,
                    // and its purge starts over.
                    restartOnFailure(result)
                }
            }
        }
    }
}

/// A page of index work to scan off the loop (`Engine.indexWorkRead`).
public struct IndexWorkPage: Sendable {
    let work: IndexWork
    let lower: [UInt8]
    let upper: [UInt8]

    /// Scans the page on `snapshot` (any thread).
    public func read(on snapshot: any StoreSnapshot) throws(HearthError) -> [IndexHit] {
        try snapshot.scanIndex(from: lower, to: upper, reverse: false, limit: Engine.backfillPage)
    }
}

/// Background index work, one page at a time.
enum IndexWork: Sendable, Equatable {
    case backfill(id: Int64, after: [UInt8]?, generation: Int)
    case purge(id: Int64, after: [UInt8]?)

    var indexID: Int64 {
        switch self {
        case .backfill(let id, _, _), .purge(let id, _): return id
        }
    }
}
