@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// The cache of recently read documents is never stale: reads through it always equal the store's durable
/// state once a batch is published, it holds the published version while a batch is in flight, and it stays
/// within its budget.
@Suite struct DocumentCacheTests {
    @Test func committedChangesRefreshOrDropCachedDocuments() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1])), set("c/b", m(["n": 1]))])
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 1]))
        #expect(try h.engine.get(path("c/a")) != nil)
        #expect(h.engine.cacheCounters.hits == 1)
        _ = h.commit([set("c/a", m(["n": 2]))])
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 2]))
        _ = h.commit([delete("c/a")])
        #expect(try h.engine.get(path("c/a")) == nil)
        // A write reads through the cache: increments on a cached document stay exact.
        _ = try h.engine.get(path("c/b"))
        let inc = FieldTransform(field: fp("n"), transform: .increment(1))
        for _ in 0..<5 { _ = h.commit([update("c/b", m([:]), mask: [], transforms: [inc])]) }
        #expect(try h.fields("c/b") == m(["n": 6]))
        #expect(try h.engine.get(path("c/b")).map { try h.engine.fields(of: $0) } == m(["n": 6]))
    }

    @Test func aBatchInFlightIsSeenOnlyOncePublished() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])
        _ = try h.engine.get(path("c/a"))                           // cached at n = 1
        try h.engine.commit([set("c/a", m(["n": 2]))]) { _ in }
        let batch = try #require(h.engine.takeBatch())
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 1]))
        let error = Engine.makeDurable(batch, in: h.store)          // in the store, not yet published
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 1]))
        h.engine.finish(batch, error: error)
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 2]))
        // A batch that fails changes nothing, in the store or the cache.
        try h.engine.commit([set("c/a", m(["n": 3]))]) { _ in }
        let failing = try #require(h.engine.takeBatch())
        h.engine.finish(failing, error: HearthError(.unavailable, "disk gone"))
        #expect(try h.engine.get(path("c/a")).map { try h.engine.fields(of: $0) } == m(["n": 2]))
    }

    /// Random commits and reads through a cache far smaller than the data: every read equals the store.
    @Test(arguments: 0..<4)
    func readsThroughASmallCacheEqualTheStore(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 31 &+ 5)
        let h = try EngineHarness(cacheBytes: 4096)
        for _ in 0..<400 {
            var writes: [Write] = []
            for _ in 0..<(1 + Int(r.next() % 3)) {
                let p = "c/d\(r.next() % 60)"
                writes.append(r.next() % 5 == 0 ? delete(p) : set(p, m(["n": .int(Int64(r.next() % 1000)), "pad": .string(String(repeating: "x", count: Int(r.next() % 200)))])))
            }
            if r.next() % 3 == 0 {
                _ = try? h.engine.commit(writes) { _ in }            // left queued: reads see durable state only
            } else {
                _ = h.commit(writes)
            }
            for _ in 0..<4 {
                let p = path("c/d\(r.next() % 60)")
                #expect(try h.engine.get(p) == (try h.store.get(p)), "\(p)")
            }
            #expect(h.engine.cacheCounters.bytes <= 4096)
        }
        h.flush()
        for i in 0..<60 { #expect(try h.engine.get(path("c/d\(i)")) == (try h.store.get(path("c/d\(i)")))) }
        #expect(h.engine.cacheCounters.hits > 0)
    }
}
