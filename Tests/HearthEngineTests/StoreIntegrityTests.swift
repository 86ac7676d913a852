@testable import HearthEngine
import HearthModel
import HearthStorage
import Synchronization
import Testing

/// A MemoryStore behind a door the tests control: it records every commit applied, can fail the next
/// `apply`, and answers reads that meet a "damaged" document (or a damaged change-log entry) with DATA_LOSS,
/// as the SQLite store does when a row fails its checksum.
final class DoorStore: DocumentStore {
    let inner = MemoryStore()
    private struct State {
        var applied: [CommitRecord] = []
        var failNextApply = false
        var damaged: Set<DocumentPath> = []
        var damagedLog: Set<DocumentPath> = []
    }
    private let state = Mutex(State())

    var applied: [CommitRecord] { state.withLock { $0.applied } }
    func failNextApply() { state.withLock { $0.failNextApply = true } }
    func damage(_ path: DocumentPath) { state.withLock { _ = $0.damaged.insert(path) } }
    func damageLog(_ path: DocumentPath) { state.withLock { _ = $0.damagedLog.insert(path) } }

    fileprivate func check(_ path: DocumentPath) throws(HearthError) {
        if state.withLock({ $0.damaged.contains(path) }) { throw StorageDamage.document(path.description, "checksum mismatch") }
    }

    /// A snapshot of the inner store behind the same door.
    func snapshot() throws(HearthError) -> any StoreSnapshot { DoorSnapshot(inner: try inner.snapshot(), door: self) }

    final class DoorSnapshot: StoreSnapshot {
        let inner: any StoreSnapshot
        let door: DoorStore
        init(inner: any StoreSnapshot, door: DoorStore) { self.inner = inner; self.door = door }
        var seq: UInt64 { inner.seq }
        func close() { inner.close() }
        func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
            try door.check(path)
            return try inner.get(path)
        }
        func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
            let hits = try inner.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
            for h in hits { try door.check(h.document.path) }
            return hits
        }
        func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int { try inner.countIndex(from: lower, to: upper) }
    }

    func lastSeq() throws(HearthError) -> UInt64 { try inner.lastSeq() }
    func historyID() throws(HearthError) -> UInt64 { try inner.historyID() }
    func oldestResumableSeq() throws(HearthError) -> UInt64 { try inner.oldestResumableSeq() }
    func indexCatalog() throws(HearthError) -> [UInt8]? { try inner.indexCatalog() }
    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int { try inner.countIndex(from: lower, to: upper) }
    func close() { inner.close() }

    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        try check(path)
        return try inner.get(path)
    }

    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        let docs = try inner.list(collection: collection, afterID: afterID, limit: limit)
        for d in docs { try check(d.path) }
        return docs
    }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        let hits = try inner.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
        for h in hits { try check(h.document.path) }
        return hits
    }

    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? { try inner.committedRequest(id) }

    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        let commits = try inner.changes(after: after, limit: limit)
        let damaged = state.withLock { $0.damagedLog }
        for c in commits ?? [] {
            for m in c.mutations where damaged.contains(m.path) {
                throw StorageDamage.change(seq: c.seq, path: m.path.description, "checksum mismatch")
            }
        }
        return commits
    }

    func apply(_ commits: [CommitRecord]) throws(HearthError) {
        let fail = state.withLock { s in
            defer { s.failNextApply = false }
            return s.failNextApply
        }
        if fail { throw HearthError(.unavailable, "storage: the disk is unplugged") }
        try inner.apply(commits)
        state.withLock { $0.applied += commits }
    }
}

/// An index catalog codec for engine tests: keeps catalogs in a table and stores their index (the engine must
/// never look inside the bytes).
final class TableCatalogCodec: IndexCatalogCodec {
    private let table = Mutex<[IndexCatalog]>([])

    func encode(_ catalog: IndexCatalog) -> [UInt8] {
        table.withLock { t in
            t.append(catalog)
            return [UInt8(t.count - 1)]
        }
    }

    func decode(_ data: [UInt8]) throws(HearthError) -> IndexCatalog {
        guard let i = data.first, data.count == 1 else { throw .invalid("not a catalog") }
        return table.withLock { $0[Int(i)] }
    }
}

/// The index catalog is stored with the commits that change it: a declaration in the same commit as the
/// entries it brings, ready only after the backfill is durable, a drop until its entries are gone, and a
/// change that failed to become durable carried again.
@Suite struct IndexCatalogEngineTests {
    static let fields: [IndexDefinition.Field] = [.init(fp("owner"), .ascending), .init(fp("t"), .descending)]

    static func catalog(_ store: DoorStore, _ codec: TableCatalogCodec) throws -> IndexCatalog? {
        try store.indexCatalog().map { try codec.decode($0) }
    }

    @Test func aDeclarationIsDurableWithTheEntriesItBrings() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        _ = h.commit([set("calls/durable", m(["owner": "a", "t": 1]))])
        // A write not yet durable when the index is declared: its entry comes with the declaration.
        try h.engine.commit([set("calls/pending", m(["owner": "b", "t": 2]))]) { _ in }
        var declared: Result<CommitOutcome, HearthError>?
        let (def, isNew) = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields) { declared = $0 }
        #expect(isNew && def.state == .building)
        #expect(try store.indexCatalog() == nil)      // nothing durable before the batch
        h.flush()
        guard case .success(let outcome) = declared else { Issue.record("the declaration did not become durable"); return }
        let carrier = try #require(store.applied.first { $0.seq == outcome.seq })
        #expect(carrier.mutations.isEmpty)
        let carried = try codec.decode(try #require(carrier.indexCatalog))
        #expect(carried.indexes.map(\.id) == [def.id] && carried.indexes[0].state == .building && carried.nextID == def.id + 1)
        let prefix = IndexAudit.compositePrefix(def.id)
        #expect(carrier.indexChanges.added.map(\.path) == [path("calls/pending")])
        #expect(carrier.indexChanges.added.allSatisfy { $0.key.starts(with: prefix) })
        // Only the declaration's commit and, after the backfill, the one saying it is ready carry the catalog.
        #expect(store.applied.filter { $0.indexCatalog != nil }.map(\.seq) == [outcome.seq])
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        #expect(h.engine.indexes.first?.state == .ready)
        let last = try #require(store.applied.last)
        #expect(last.indexCatalog != nil && last.mutations.isEmpty && last.indexChanges.isEmpty)
        #expect(try Self.catalog(store, codec)?.indexes.first?.state == .ready)
        // The backfill's entries are durable before the catalog says ready.
        #expect(try store.countIndex(from: prefix, to: IndexKey.prefixSuccessor(prefix) ?? []) == 2)
        let readyAt = store.applied.lastIndex { $0.indexCatalog != nil }!
        let backfilled = store.applied.firstIndex { $0.indexChanges.added.contains { $0.path == path("calls/durable") } }!
        #expect(backfilled < readyAt)

        // Declaring the same shape again changes nothing.
        let again = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields) { _ in
            Issue.record("no commit for an existing shape")
        }
        #expect(!again.isNew && again.index.id == def.id)
        #expect(h.engine.isIdle)
    }

    @Test func theCatalogIsRestoredFromTheStore() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        for i in 0..<3 { _ = h.commit([set("calls/c\(i)", m(["owner": "a", "t": .int(Int64(i))]))]) }
        let (ready, _) = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields)
        h.flush()
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        // A second index, declared and durable but not backfilled yet: a restart resumes its backfill.
        let (building, _) = try h.engine.createIndex(collectionID: "calls", scope: .collection,
                                                     fields: [.init(fp("t"), .ascending), .init(fp("owner"), .ascending)])
        h.flush()

        let restarted = try EngineHarness(store: store, codec: h.codec, indexCatalogCodec: codec)
        #expect(restarted.engine.loadedStoredCatalog)
        #expect(restarted.engine.indexes.map(\.id) == [ready.id, building.id])
        #expect(restarted.engine.indexes.map(\.state) == [.ready, .building])
        #expect(restarted.engine.nextIndexID == building.id + 1)
        #expect(restarted.engine.hasIndexWork)
        while restarted.engine.hasIndexWork { try restarted.engine.indexWorkStep(); restarted.flush() }
        restarted.flush()
        #expect(restarted.engine.indexes.map(\.state) == [.ready, .ready])
        // Without a codec, nothing is restored (and nothing stored).
        let plain = try EngineHarness(store: store, codec: h.codec)
        #expect(plain.engine.indexes.isEmpty && !plain.engine.loadedStoredCatalog)
    }

    /// A declaration whose commit fails is rolled back with it, as the documents are: the client was told it
    /// failed, so no later commit stores it. Declared again, it is built.
    @Test func aCatalogChangeThatFailsIsRolledBack() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        _ = h.commit([set("calls/a", m(["owner": "a", "t": 1]))])
        var events: [IndexEvent] = []
        h.engine.onIndexesChanged = { _, e in events.append(e) }
        var declared: Result<CommitOutcome, HearthError>?
        _ = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields) { declared = $0 }
        store.failNextApply()
        h.flush()
        guard case .failure = declared else { Issue.record("the declaration should have failed"); return }
        #expect(try store.indexCatalog() == nil)
        #expect(h.engine.indexes.isEmpty && !h.engine.hasIndexWork, "rolled back, its backfill with it")
        #expect(events == [.declared, .takenBack], "said, for the log")
        // The next commit, whatever it is, carries nothing of it.
        _ = h.commit([set("other/x", m(["n": 1]))])
        #expect(try store.indexCatalog() == nil)
        // Declared again, it is stored and built.
        let (def, isNew) = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields)
        #expect(isNew)
        h.flush()
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        #expect(try Self.catalog(store, codec)?.indexes.map(\.id) == [def.id])
        #expect(try Self.catalog(store, codec)?.indexes.first?.state == .ready)
        let prefix = IndexAudit.compositePrefix(def.id)
        #expect(try store.countIndex(from: prefix, to: IndexKey.prefixSuccessor(prefix) ?? []) == 1)
    }

    @Test func aDropStaysInTheCatalogUntilItsEntriesAreGone() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        var writes: [Write] = []
        for i in 0..<(Engine.backfillPage + 20) { writes.append(set("calls/c\(i)", m(["owner": "a", "t": .int(Int64(i))]))) }
        _ = h.commit(writes)
        let (def, _) = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: Self.fields)
        h.flush()
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        let prefix = IndexAudit.compositePrefix(def.id)
        let end = IndexKey.prefixSuccessor(prefix) ?? []
        #expect(try store.countIndex(from: prefix, to: end) == Engine.backfillPage + 20)

        var dropped: Result<CommitOutcome, HearthError>?
        try h.engine.dropIndex(id: def.id) { dropped = $0 }
        h.flush()
        guard case .success = dropped else { Issue.record("the drop did not become durable"); return }
        #expect(try Self.catalog(store, codec)?.dropping == [def.id])
        #expect(try Self.catalog(store, codec)?.indexes.isEmpty == true)
        // One page purged, then a restart: the purge resumes from the catalog.
        try h.engine.indexWorkStep()
        h.flush()
        #expect(try store.countIndex(from: prefix, to: end) == 20)
        let restarted = try EngineHarness(store: store, codec: h.codec, indexCatalogCodec: codec)
        #expect(restarted.engine.droppingIndexes == [def.id] && restarted.engine.hasIndexWork)
        while restarted.engine.hasIndexWork { try restarted.engine.indexWorkStep(); restarted.flush() }
        restarted.flush()
        #expect(try store.countIndex(from: prefix, to: end) == 0)
        let final = try Self.catalog(store, codec)
        #expect(final?.dropping == [] && final?.nextID == def.id + 1)
        // The purge's last page and the catalog without the drop are one commit.
        let last = try #require(store.applied.last { $0.indexCatalog != nil })
        #expect(last.indexChanges.removed.count == 20)
    }

    @Test func anImportedCatalogIsStoredWithACommit() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        _ = h.commit([set("calls/a", m(["owner": "a", "t": 1]))])
        let def = IndexDefinition(id: 4, collectionID: "calls", scope: .collection, fields: Self.fields, state: .building)
        var imported: Result<CommitOutcome, HearthError>?
        h.engine.importIndexCatalog(IndexCatalog(indexes: [def], nextID: 6, dropping: [5])) { imported = $0 }
        h.flush()
        guard case .success = imported else { Issue.record("the import did not become durable"); return }
        let stored = try Self.catalog(store, codec)
        #expect(stored?.indexes.map(\.id) == [4] && stored?.nextID == 6 && stored?.dropping == [5])
        while h.engine.hasIndexWork { try h.engine.indexWorkStep(); h.flush() }
        h.flush()
        #expect(try Self.catalog(store, codec)?.indexes.first?.state == .ready)
        #expect(try Self.catalog(store, codec)?.dropping == [])
        #expect(try h.engine.createIndex(collectionID: "calls", scope: .collectionGroup, fields: [.init(fp("t"), .ascending)]).index.id == 6)
    }

    /// The catalog of an `indexes.json` is durable in its file: an import whose commit fails is not rolled back
    /// (its ids are those of entries in the store), and the next commit carrying a catalog stores it whole.
    @Test func aFailedImportKeepsTheImportedCatalog() throws {
        let store = DoorStore(), codec = TableCatalogCodec()
        let h = try EngineHarness(store: store, indexCatalogCodec: codec)
        let old = IndexCatalog(indexes: [
            IndexDefinition(id: 1, collectionID: "calls", scope: .collection, fields: Self.fields, state: .ready),
        ], nextID: 2)
        var imported: Result<CommitOutcome, HearthError>?
        h.engine.importIndexCatalog(old) { imported = $0 }
        store.failNextApply()
        h.flush()
        guard case .failure = imported else { Issue.record("the import should have failed"); return }
        #expect(h.engine.indexes.map(\.id) == [1] && h.engine.nextIndexID == 2)
        let (def, _) = try h.engine.createIndex(collectionID: "other", scope: .collection, fields: Self.fields)
        h.flush()
        #expect(def.id == 2, "no id of the imported catalog is given again")
        #expect(try Self.catalog(store, codec)?.indexes.map(\.id) == [1, 2])
    }
}

/// Damaged stored data reaches no client: reads that meet it fail with DATA_LOSS naming the document, the
/// engine reports it, caches nothing of it, and listeners, resumes and index work survive it.
@Suite struct DataLossEngineTests {
    static func harness() throws -> (EngineHarness, DoorStore, Locked<[HearthError]>) {
        let store = DoorStore()
        let h = try EngineHarness(store: store)
        let reported = Locked<[HearthError]>([])
        h.engine.onDataLoss = { e in reported.withLock { $0.append(e) } }
        _ = h.commit([set("c/a", m(["n": 1])), set("c/b", m(["n": 2])), set("c/d", m(["n": 3]))])
        return (h, store, reported)
    }

    @Test func aDamagedDocumentIsNotServedAndTheOthersAre() throws {
        let (h, store, reported) = try Self.harness()
        let fresh = try EngineHarness(store: store, codec: h.codec)    // nothing cached
        fresh.engine.onDataLoss = { e in reported.withLock { $0.append(e) } }
        store.damage(path("c/b"))
        let get = thrownError { () throws(HearthError) in _ = try fresh.engine.get(path("c/b")) }
        #expect(get?.code == .dataLoss && get?.message.contains("c/b") == true)
        #expect(try fresh.engine.get(path("c/a")) != nil)
        #expect(try fresh.engine.get(path("c/d")) != nil)
        // A query that meets it fails, naming it; one that does not, succeeds.
        let all = try Query.collection(try CollectionPath(parsing: "c")).validated()
        let query = thrownError { () throws(HearthError) in _ = try fresh.engine.runQuery(all) }
        #expect(query?.code == .dataLoss && query?.message.contains("c/b") == true)
        var one = Query.collection(try CollectionPath(parsing: "c"))
        one.filter = .field(fp("n"), .equal, 3)
        #expect(try fresh.engine.runQuery(try one.validated()).documents.map(\.stored.path) == [path("c/d")])
        // A write to it fails too (it needs the old version), and writes elsewhere go on.
        #expect(thrownError { () throws(HearthError) in try fresh.engine.commit([set("c/b", m(["n": 9]))]) { _ in } }?.code == .dataLoss)
        guard case .success = fresh.commit([set("c/e", m(["n": 5]))]) else { Issue.record("a write elsewhere failed"); return }
        #expect(reported.withLock { $0.count } >= 3)
        #expect(reported.withLock { $0.allSatisfy { $0.code == .dataLoss && $0.message.contains("c/b") } })
    }

    @Test func bytesTheCodecRejectsAreDataLossToo() throws {
        let store = DoorStore()
        let codec = RejectingCodec()
        let engine = try Engine(store: store, codec: codec)
        var reported: [HearthError] = []
        engine.onDataLoss = { reported.append($0) }
        let good = StoredDocument(path: path("c/good"), data: [1], createTime: Timestamp(micros: 1), updateTime: Timestamp(micros: 1), seq: 1)
        let bad = StoredDocument(path: path("c/bad"), data: [0x8F], createTime: Timestamp(micros: 1), updateTime: Timestamp(micros: 1), seq: 1)
        // Rows written behind the engine's back (as a damaged store may hold them, checksums and all).
        try store.apply([CommitRecord(seq: 1, commitTime: Timestamp(micros: 1), mutations: [
            Mutation(path: good.path, before: nil, after: good), Mutation(path: bad.path, before: nil, after: bad)])])
        let fresh = try Engine(store: store, codec: codec)
        fresh.onDataLoss = { reported.append($0) }
        #expect(try fresh.get(good.path) == good)
        let error = thrownError { () throws(HearthError) in _ = try fresh.get(bad.path) }
        #expect(error?.code == .dataLoss && error?.message.contains("c/bad") == true)
        #expect(fresh.cacheCounters.entries == 1)     // the good one only
        #expect(reported.count == 1)
    }

    @Test func aResumeOverADamagedLogEntryIsAReset() throws {
        let (h, store, reported) = try Self.harness()
        _ = h.commit([set("c/b", m(["n": 20]))])
        store.damageLog(path("c/b"))
        let sink = ListenerWindowTests.Sink()
        let q = try Query.collection(try CollectionPath(parsing: "c")).validated()
        _ = try #require(try h.engine.listeners.add(.query(q), tag: "t", sink: sink, resumeAfter: 1, history: h.engine.historyID))
        guard case .query(2, false, true, 3, let changes) = sink.events.first?.event else {
            Issue.record("not a reset: \(String(describing: sink.events.first?.event))"); return
        }
        #expect(changes.count == 3)
        #expect(reported.withLock { $0.count } == 1)
        // The listener lives on: the next commit reaches it.
        _ = h.commit([set("c/e", m(["n": 5]))])
        #expect(sink.events.count == 2)
    }

    @Test func aWindowRefillThatMeetsADamagedDocumentFailsItsListenersOnly() throws {
        let (h, store, _) = try Self.harness()
        var window = Query.collection(try CollectionPath(parsing: "c"))
        window.orderBy = [.init(fp("n"))]
        window.limit = 1
        let sink = ListenerWindowTests.Sink(), other = ListenerWindowTests.Sink()
        _ = try #require(try h.engine.listeners.add(.query(try window.validated()), tag: "w", sink: sink, resumeAfter: nil))
        _ = try #require(try h.engine.listeners.add(.document(path("c/d")), tag: "d", sink: other, resumeAfter: nil))
        store.damage(path("c/b"))
        // c/a leaves the full window: refilling it reads the store and meets c/b.
        _ = h.commit([Write(kind: .delete, path: path("c/a"), operation: .delete)])
        guard case .error(let error) = sink.events.last?.event else { Issue.record("no error event: \(sink.events)"); return }
        #expect(error.code == .dataLoss && error.message.contains("c/b"))
        // Publication went on: the other listener gets its snapshots, and the hub keeps working.
        _ = h.commit([set("c/d", m(["n": 30]))])
        #expect(other.events.count == 2)
        #expect(h.engine.listeners.count == 1)
    }

    @Test func indexWorkStopsAtADamagedDocumentInsteadOfSpinning() throws {
        let (h, store, reported) = try Self.harness()
        store.damage(path("c/b"))
        let (def, _) = try h.engine.createIndex(collectionID: "c", scope: .collectionGroup, fields: [.init(fp("n"), .descending)])
        h.flush()
        #expect(h.engine.hasIndexWork)
        try h.engine.indexWorkStep()
        #expect(!h.engine.hasIndexWork)
        #expect(h.engine.indexes.first { $0.id == def.id }?.state == .building)
        #expect(reported.withLock { $0.last?.message.contains("c/b") } == true)
    }
}

/// Verifies by refusing data that starts with 0x8F; decodes everything else to an empty map.
struct RejectingCodec: DocumentCodec {
    func encode(_ fields: MapValue) -> [UInt8] { [1] }
    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue {
        try verify(data)
        return MapValue()
    }
    func verify(_ data: [UInt8]) throws(HearthError) {
        if data.first == 0x8F { throw .invalid("invalid UTF-8 at byte 0") }
    }
}

/// Runs `body` and returns the HearthError it threw, or nil.
func thrownError(_ body: () throws(HearthError) -> Void) -> HearthError? {
    do { try body() } catch { return error }
    return nil
}
