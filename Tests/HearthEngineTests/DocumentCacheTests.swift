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

    /// A rendering belongs to the version it was made from: `read` hands it out only with that version, a
    /// publication that changes the document drops it, and `attach` refuses a rendering of another version.
    @Test func aRenderingIsServedOnlyWithTheVersionItRendered() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])                      // seq 1
        let cache = h.engine.documentCache
        let key = DocumentCache.Key(path("c/a"))
        func read(at seq: UInt64) -> (String, [UInt8]?) {
            var copied: [UInt8]?
            switch cache.read(key, at: seq, { copied = Array($0) }) {
            case .rendered: return ("rendered", copied)
            case .unrendered(let doc): return ("unrendered \(doc.seq)", copied)
            case .miss: return ("miss", copied)
            }
        }
        #expect(read(at: 1).0 == "miss")
        _ = try h.engine.get(path("c/a"))                              // cached, not rendered
        #expect(read(at: 1).0 == "unrendered 1")
        cache.attach(Array("v2".utf8), to: key, version: 2)            // not the cached version: refused
        #expect(read(at: 1).0 == "unrendered 1")
        cache.attach(Array("v1".utf8), to: key, version: 1)
        #expect(read(at: 1) == ("rendered", Array("v1".utf8)))
        #expect(read(at: 0).0 == "miss")                               // not the version at seq 0
        // The loop's cached reads hand out the same rendering, and render (and keep) one when there is none.
        var renders = 0
        let loop = try #require(h.engine.cachedDocument(path("c/a"), render: { _ in renders += 1; return [] }))
        #expect(loop.rendering == Array("v1".utf8) && renders == 0)
        _ = h.commit([set("c/a", m(["n": 2]))])                      // seq 2: refreshed, its rendering dropped
        #expect(read(at: 1).0 == "miss")
        #expect(read(at: 2).0 == "unrendered 2")
        let fresh = try #require(h.engine.cachedDocument(path("c/a"), render: { d in renders += 1; return Array("r\(d.seq)".utf8) }))
        #expect(fresh.rendering == Array("r2".utf8) && renders == 1)
        #expect(read(at: 2) == ("rendered", Array("r2".utf8)))
        // An offer brings its rendering along.
        _ = h.commit([set("c/b", m(["n": 1]))])                      // seq 3
        let b = try #require(try h.store.get(path("c/b")))
        cache.offer(b, readAt: 3, rendering: Array("b3".utf8))
        var copied: [UInt8] = []
        if case .rendered = cache.read(DocumentCache.Key(path("c/b")), at: 3, { copied = Array($0) }) {} else { Issue.record("c/b not rendered") }
        #expect(copied == Array("b3".utf8))
        _ = h.commit([delete("c/a")])                                 // seq 4 drops it
        #expect(read(at: 4).0 == "miss")
    }

    /// A key is the path's segments each after its length, so paths whose joined text is equal are told apart.
    @Test func keysTellSegmentsApart() {
        #expect(!DocumentCache.Key(path("ab/c")).matches(DocumentCache.Key(path("a/bc"))))
        #expect(DocumentCache.Key(path("a/bc")).matches(DocumentCache.Key(path("a/bc"))))
        let long = String(repeating: "é", count: 200)                  // a length above 127 takes two bytes
        #expect(!DocumentCache.Key(path("c/\(long)")).matches(DocumentCache.Key(path("c/\(long)x"))))
        var reused = DocumentCache.Key(path("c/\(long)"))
        reused.assign(path("c/d"))
        #expect(reused.matches(DocumentCache.Key(path("c/d"))) && reused.hash == DocumentCache.Key(path("c/d")).hash)
    }

    /// Reader threads read through the cache at their snapshots' seqs while the loop commits and publishes:
    /// every document the cache gives a reader is exactly the one its snapshot holds.
    @Test func concurrentReadersNeverGetAStaleVersion() throws {
        let h = try EngineHarness(cacheBytes: 1 << 20)
        let cache = h.engine.documentCache
        let store = h.store
        let paths = (0..<40).map { path("c/d\($0)") }
        for p in paths { _ = h.commit([set(p.description, m(["n": 0]))]) }
        // A rendering that names its version, so a rendering served with the wrong version shows.
        let render: @Sendable (StoredDocument) -> [UInt8] = { d in Array("\(d.path)@\(d.seq):".utf8) + d.data }
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
                        if r.next() % 2 == 0 {
                            // Through renderings: a rendering must be the one made from the version at the seq.
                            var rendered: [UInt8]?
                            let key = DocumentCache.Key(p)
                            switch cache.read(key, at: snap.seq, { rendered = Array($0) }) {
                            case .rendered:
                                let ok = truth.map(render) == rendered
                                stats.withLock { s in s.hits += 1; s.checks += 1; if !ok { s.wrong.append("rendering of \(p) at \(snap.seq)") } }
                            case .unrendered(let doc):
                                let ok = doc == truth
                                cache.attach(render(doc), to: key, version: doc.seq)
                                stats.withLock { s in s.hits += 1; s.checks += 1; if !ok { s.wrong.append("\(p) at \(snap.seq)") } }
                            case .miss:
                                if let truth { cache.offer(truth, readAt: snap.seq, rendering: render(truth)) }
                                stats.withLock { $0.checks += 1 }
                            }
                        } else if let hit = cache.document(p, at: snap.seq) {
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
