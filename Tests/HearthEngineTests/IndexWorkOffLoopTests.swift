@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// Index backfills with each page scanned off the loop (`Engine.indexWorkRead`, a reader's snapshot,
/// `indexWorkStep(_:_:)`), while commits change the collection between the scan and the step: the composite
/// index must end exactly as the documents say, as with pages scanned on the loop.
@Suite struct IndexWorkOffLoopTests {
    @Test(arguments: 0..<4)
    func aBackfillScannedOffTheLoopEndsExact(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 7_477 &+ 1)
        let h = try EngineHarness()
        _ = h.commit((0..<1_200).map { set("calls/c\($0)", m(["owner": .int(Int64(r.next() % 5)), "t": .int(Int64($0))])) })
        let (def, _) = try h.engine.createIndex(collectionID: "calls", scope: .collection, fields: IndexCatalogEngineTests.fields)
        h.flush()
        var pages = 0, learnedOnly = 0
        while h.engine.hasIndexWork {
            guard let page = h.engine.indexWorkRead() else { continue }
            let snapshot = try h.store.snapshot()
            let hits = Result<[IndexHit], HearthError> { () throws(HearthError) in try page.read(on: snapshot) }
            snapshot.close()
            // Commits between the scan and the step: moved, deleted, created documents.
            var writes: [Write] = []
            for _ in 0..<(Int(r.next() % 6)) {
                let i = Int(r.next() % 1_300)
                switch r.next() % 3 {
                case 0: writes.append(delete("calls/c\(i)"))
                default: writes.append(set("calls/c\(i)", m(["owner": .int(Int64(r.next() % 5)), "t": .int(Int64(r.next() % 2_000))])))
                }
            }
            if !writes.isEmpty { _ = h.commit(writes) } else { learnedOnly += 1 }
            try h.engine.indexWorkStep(page, hits)
            h.flush()
            pages += 1
        }
        h.flush()
        #expect(h.engine.indexes.first { $0.id == def.id }?.state == .ready)
        #expect(pages >= 3)
        // Every composite entry is a document's, and every document has its entries.
        let prefix = IndexAudit.compositePrefix(def.id)
        let entries = try h.store.scanIndex(from: prefix, to: IndexKey.prefixSuccessor(prefix) ?? [], reverse: false, limit: 100_000)
        var expected = Set<[UInt8]>()
        for doc in try h.store.list(collection: CollectionPath(parsing: "calls"), afterID: nil, limit: 100_000) {
            let fields = try h.codec.decode(doc.data)
            for k in IndexAudit.keys(doc.path, fields, composites: [def]) where k.starts(with: prefix) { expected.insert(k) }
        }
        let keys: Set<[UInt8]> = Set(entries.map { $0.key })
        let missing = expected.subtracting(keys).count, extra = keys.subtracting(expected).count
        #expect(missing == 0 && extra == 0 && entries.count == expected.count, "\(missing) missing, \(extra) extra, \(entries.count) entries")
        _ = learnedOnly
    }
}
