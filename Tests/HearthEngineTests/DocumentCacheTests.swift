import Foundation
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

    /// The rule for reader threads: an entry answers a read at S only when S is at most the published seq and
    /// the entry's version is at most S; a reader's document is cached only when read at the published seq.
    @Test func readersGetAVersionOnlyWhenItIsTheOneAtTheirSeq() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])                      // seq 1
        _ = h.commit([set("c/b", m(["n": 1]))])                      // seq 2
        let cache = h.engine.documentCache
        let a1 = try #require(try h.engine.get(path("c/a")))          // cached, version seq 1
        #expect(cache.document(path("c/a"), at: 2) == a1)
        #expect(cache.document(path("c/a"), at: 1) == a1)
        #expect(cache.document(path("c/a"), at: 0) == nil)            // not yet created at seq 0
        #expect(cache.document(path("c/a"), at: 3) == nil)            // a snapshot ahead of the published seq
        _ = h.commit([set("c/a", m(["n": 2]))])                      // seq 3 refreshes the entry
        #expect(cache.document(path("c/a"), at: 2) == nil)            // the entry is newer than seq 2
        #expect(try cache.document(path("c/a"), at: 3).map { try h.engine.fields(of: $0) } == m(["n": 2]))
        // Offers: only a version read at the published seq is cached, never over a newer one.
        let b = try #require(try h.store.get(path("c/b")))
        cache.offer(b, readAt: 2)                                     // read at an older seq: not cached
        #expect(cache.document(path("c/b"), at: 3) == nil)
        cache.offer(b, readAt: 3)
        #expect(cache.document(path("c/b"), at: 3) == b)
        cache.offer(a1, readAt: 3)                                    // an older version: ignored
        #expect(try cache.document(path("c/a"), at: 3).map { try h.engine.fields(of: $0) } == m(["n": 2]))
        _ = h.commit([delete("c/a")])                                 // seq 4 drops it
        #expect(cache.document(path("c/a"), at: 4) == nil)
    }

    /// Reader threads read through the cache at their snapshots' seqs while the loop commits and publishes:
    /// every document the cache gives a reader is exactly the one its snapshot holds.
    @Test func concurrentReadersNeverGetAStaleVersion() throws {
        let h = try EngineHarness(cacheBytes: 1 << 20)
        let cache = h.engine.documentCache
        let store = h.store
        let paths = (0..<40).map { path("c/d\($0)") }
        for p in paths { _ = h.commit([set(p.description, m(["n": 0]))]) }
        let stop = Locked(false)
        let stats = Locked((hits: 0, checks: 0, wrong: [String]()))
        let readers = DispatchGroup()
        for t in 0..<3 {
            readers.enter()
            Thread.detachNewThread {
                defer { readers.leave() }
                var r = QueryOracleTests.RNG(state: UInt64(t) &+ 99)
                while !stop.withLock({ $0 }) {
                    guard let snap = try? store.snapshot() else { continue }
                    defer { snap.close() }
                    for _ in 0..<20 {
                        let p = paths[Int(r.next() % UInt64(paths.count))]
                        let truth = try? snap.get(p)
                        if let hit = cache.document(p, at: snap.seq) {
                            let ok = hit == truth
                            stats.withLock { s in s.hits += 1; s.checks += 1; if !ok { s.wrong.append("\(p) at \(snap.seq)") } }
                        } else if let truth {
                            cache.offer(truth, readAt: snap.seq)
                            stats.withLock { $0.checks += 1 }
                        }
                    }
                }
            }
        }
        var r = QueryOracleTests.RNG(state: 7)
        var rounds = 0
        // Commit until the readers have had many hits (and at least 2,000 commits), so reads overlap publications.
        while rounds < 2000 || (stats.withLock({ $0.hits }) < 5000 && rounds < 200_000) {
            rounds += 1
            let p = paths[Int(r.next() % UInt64(paths.count))]
            _ = h.commit([r.next() % 7 == 0 ? delete(p.description) : set(p.description, m(["n": .int(Int64(rounds))]))])
            if r.next() % 4 == 0 { _ = try h.engine.get(paths[Int(r.next() % UInt64(paths.count))]) }
        }
        stop.withLock { $0 = true }
        readers.wait()
        let result = stats.withLock { $0 }
        #expect(result.wrong.isEmpty, "stale versions: \(result.wrong.prefix(5))")
        #expect(result.hits > 1000, "the readers hit the cache \(result.hits) times")
    }
}
