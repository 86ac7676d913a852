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

    /// A version published from a commit keeps the fields the commit built: the next writes of a cached
    /// document start from them without decoding its stored bytes, and stay exact.
    @Test func writesOfACachedDocumentStartFromTheFieldsItsLastCommitBuilt() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1, "s": "x"]))])
        _ = try h.engine.get(path("c/a"))                           // cached (read from the store: no fields)
        let inc = FieldTransform(field: fp("n"), transform: .increment(1))
        _ = h.commit([update("c/a", m([:]), mask: [], transforms: [inc])])   // decodes the stored version once
        var decodes = h.codec.decodes
        for _ in 0..<5 { _ = h.commit([update("c/a", m([:]), mask: [], transforms: [inc])]) }
        #expect(h.codec.decodes == decodes, "each write started from the kept fields")
        #expect(try h.fields("c/a") == m(["n": 7, "s": "x"]))    // a read decodes (the test's own)
        // Two commits of one batch write the document: the newest one's fields are kept.
        decodes = h.codec.decodes
        try h.engine.commit([update("c/a", m(["s": "y"]), mask: ["s"])]) { _ in }
        try h.engine.commit([update("c/a", m(["s": "z"]), mask: ["s"])]) { _ in }
        h.flush()
        _ = h.commit([update("c/a", m([:]), mask: [], transforms: [inc])])
        #expect(h.codec.decodes == decodes)
        #expect(try h.fields("c/a") == m(["n": 8, "s": "z"]))
        // A deleted document leaves the cache with its fields; written again, it is read from the store.
        _ = h.commit([delete("c/a")])
        _ = h.commit([set("c/a", m(["n": 1]))])
        #expect(try h.fields("c/a") == m(["n": 1]))
    }

    /// Decoded fields are counted in the cache's budget: a cache far smaller than the data, written and read at
    /// random, stays within its budget and consistent, and every write starts from the right version.
    @Test(arguments: 0..<3)
    func keptFieldsStayWithinTheBudgetAndExact(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 131 &+ 7)
        let h = try EngineHarness(cacheBytes: 1500)                // ~12 entries of the 30 documents: evictions
        var model: [String: Int64] = [:]
        let inc = FieldTransform(field: fp("n"), transform: .increment(1))
        for round in 0..<500 {
            let p = "c/d\(r.next() % 30)"
            switch r.next() % 4 {
            case 0:
                _ = h.commit([set(p, m(["n": 0, "pad": .string(String(repeating: "x", count: Int(r.next() % 150)))]))])
                model[p] = 0
            case 1:
                _ = try h.engine.get(path(p))
            default:
                if case .success = h.commit([update(p, m([:]), mask: [], transforms: [inc])]) { model[p, default: 0] += 1 }
            }
            #expect(h.engine.documentCache.inconsistencies().isEmpty, "round \(round)")
        }
        for (p, n) in model { #expect(try h.fields(p)?.value(at: fp("n")) == .int(n), "\(p)") }
    }

    /// A published version larger than the cached one, or a rendering offered with the version already cached,
    /// keeps the shard within its share: others are evicted for it, and a version grown past what is cached at
    /// all leaves the cache.
    @Test func versionsThatGrowKeepTheCacheWithinItsBudget() throws {
        var r = QueryOracleTests.RNG(state: 29)
        let cache = DocumentCache(capacityBytes: 4096, published: 0)
        var seq: UInt64 = 0
        func doc(_ p: String, _ size: Int) -> StoredDocument {
            StoredDocument(path: path(p), data: [UInt8](repeating: 1, count: size), createTime: Timestamp(micros: 1),
                           updateTime: Timestamp(micros: Int64(seq)), seq: seq)
        }
        for round in 0..<300 {
            let p = "c/d\(r.next() % 30)"
            if r.next() % 3 == 0 {
                cache.insert(doc(p, Int(r.next() % 200)))
            } else if r.next() % 2 == 0, let cached = cache.document(path(p), at: seq) {
                // The same version again, now with a rendering (what a reader offers after rendering it).
                cache.offer(cached, readAt: seq, rendering: DocumentRendering(bytes: Array(repeating: 7, count: Int(r.next() % 400)), headCount: 0))
            } else {
                seq += 1
                let grown = doc(p, Int(r.next() % 700))
                cache.publish([CommitRecord(seq: seq, commitTime: Timestamp(micros: Int64(seq)),
                                            mutations: [Mutation(path: path(p), before: nil, after: grown)], indexChanges: IndexChanges())],
                              through: seq)
            }
            #expect(cache.inconsistencies().isEmpty, "round \(round): \(cache.inconsistencies())")
        }
        #expect(cache.count > 3)
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

    /// A rendering belongs to the version it was made from: `read` hands it out only with that version (in
    /// its parts, around the version's data), a publication that changes the document drops it, and `attach`
    /// refuses a rendering of another version.
    @Test func aRenderingIsServedOnlyWithTheVersionItRendered() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])                      // seq 1
        let cache = h.engine.documentCache
        let key = DocumentCache.Key(path("c/a"))
        func rendering(_ text: String) -> DocumentRendering { DocumentRendering(bytes: Array("<\(text)>".utf8), headCount: text.utf8.count + 1) }
        func read(_ key: DocumentCache.Key = key, at seq: UInt64) -> (String, String?) {
            var copied: String?
            let found = cache.read(key, at: seq, room: .max) { p in copied = String(decoding: Array(p.head) + Array(p.data) + Array(p.tail), as: UTF8.self) }
            switch found {
            case .rendered: return ("rendered", copied)
            case .unrendered(let doc): return ("unrendered \(doc.seq)", copied)
            case .miss: return ("miss", copied)
            case .needsRoom(let n): return ("needs \(n)", copied)
            }
        }
        func data(_ p: String) throws -> String { String(decoding: try #require(try h.store.get(path(p))).data, as: UTF8.self) }
        #expect(read(at: 1).0 == "miss")
        _ = try h.engine.get(path("c/a"))                              // cached, not rendered
        #expect(read(at: 1).0 == "unrendered 1")
        cache.attach(rendering("v2"), to: key, version: 2)             // not the cached version: refused
        #expect(read(at: 1).0 == "unrendered 1")
        cache.attach(rendering("v1"), to: key, version: 1)
        #expect(read(at: 1) == ("rendered", "<v1\(try data("c/a"))>"))
        #expect(read(at: 0).0 == "miss")                               // not the version at seq 0
        // The loop's cached reads hand out the same rendering, and render (and keep) one when there is none.
        var renders = 0
        let loop = try #require(h.engine.cachedDocument(path("c/a"), render: { _ in renders += 1; return rendering("x") }))
        #expect(loop.rendering == rendering("v1") && renders == 0)
        _ = h.commit([set("c/a", m(["n": 2]))])                      // seq 2: refreshed, its rendering dropped
        #expect(read(at: 1).0 == "miss")
        #expect(read(at: 2).0 == "unrendered 2")
        let fresh = try #require(h.engine.cachedDocument(path("c/a"), render: { d in renders += 1; return rendering("r\(d.seq)") }))
        #expect(fresh.rendering == rendering("r2") && renders == 1)
        #expect(read(at: 2) == ("rendered", "<r2\(try data("c/a"))>"))
        // An offer brings its rendering along.
        _ = h.commit([set("c/b", m(["n": 1]))])                      // seq 3
        let b = try #require(try h.store.get(path("c/b")))
        cache.offer(b, readAt: 3, rendering: rendering("b3"))
        #expect(read(DocumentCache.Key(path("c/b")), at: 3) == ("rendered", "<b3\(try data("c/b"))>"))
        _ = h.commit([delete("c/a")])                                 // seq 4 drops it
        #expect(read(at: 4).0 == "miss")
    }

    /// A rendering larger than the room the reader has is not copied (`needsRoom` with its size): the reader
    /// grows its buffer outside the lock and reads again.
    @Test func aRenderingLargerThanTheRoomIsNotCopied() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])
        let doc = try #require(try h.store.get(path("c/a")))
        let cache = h.engine.documentCache
        let rendering = DocumentRendering(bytes: Array("<>".utf8), headCount: 1)
        cache.offer(doc, readAt: 1, rendering: rendering)
        let size = rendering.renderedCount(around: doc.data)
        var copies = 0
        guard case .needsRoom(let n) = cache.read(DocumentCache.Key(path("c/a")), at: 1, room: size - 1, { _ in copies += 1 }) else {
            Issue.record("a rendering larger than the room was handed out"); return
        }
        #expect(n == size && copies == 0)
        guard case .rendered = cache.read(DocumentCache.Key(path("c/a")), at: 1, room: size, { _ in copies += 1 }) else {
            Issue.record("a rendering that fits was not handed out"); return
        }
        #expect(copies == 1)
    }

    /// Two paths whose keys share a hash: the later one replaces the earlier one, lookups never confuse them,
    /// and the shard's slots and byte count stay consistent through inserts, renderings, publications and
    /// evictions.
    @Test func pathsWhoseHashesCollideAreNeverConfused() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1])), set("c/b", m(["n": 2]))])   // seq 1
        let cache = h.engine.documentCache
        let a = try #require(try h.store.get(path("c/a"))), b = try #require(try h.store.get(path("c/b")))
        let ka = DocumentCache.Key(bytes: DocumentCache.Key(path("c/a")).bytes, hash: 42)
        let kb = DocumentCache.Key(bytes: DocumentCache.Key(path("c/b")).bytes, hash: 42)
        func lookup(_ k: DocumentCache.Key) -> StoredDocument? {
            if case .unrendered(let d) = cache.read(k, at: 1, room: .max, { _ in }) { return d }
            return nil
        }
        cache.offer(a, key: ka, readAt: 1, rendering: nil)
        #expect(lookup(ka) == a && lookup(kb) == nil)
        cache.offer(b, key: kb, readAt: 1, rendering: nil)                     // replaces c/a
        #expect(lookup(kb) == b && lookup(ka) == nil)
        cache.attach(DocumentRendering(bytes: [1, 2], headCount: 1), to: ka, version: a.seq)   // not cached: refused
        #expect(lookup(kb) == b)
        #expect(cache.inconsistencies().isEmpty, "\(cache.inconsistencies())")
    }

    /// Random commits, reads, offers and renderings through a cache far smaller than the data: the shards'
    /// slots, entries and byte counts stay consistent, and renderings are kept when the cache is full.
    @Test func aFullCacheStaysConsistentAndKeepsRenderings() throws {
        var r = QueryOracleTests.RNG(state: 11)
        let h = try EngineHarness(cacheBytes: 8192)
        let cache = h.engine.documentCache
        var attached = 0, refused = 0
        for round in 0..<600 {
            let p = "c/d\(r.next() % 80)"
            if r.next() % 3 == 0 {
                _ = h.commit([r.next() % 6 == 0 ? delete(p) : set(p, m(["n": .int(Int64(round)), "pad": .string(String(repeating: "x", count: Int(r.next() % 300)))]))])
            }
            let seq = h.engine.lastDurableSeq
            let key = DocumentCache.Key(path(p))
            switch cache.read(key, at: seq, room: .max, { _ in }) {
            case .unrendered(let doc):
                cache.attach(DocumentRendering(bytes: Array(repeating: 7, count: 500), headCount: 20), to: key, version: doc.seq)
                if case .rendered = cache.read(key, at: seq, room: .max, { _ in }) { attached += 1 } else { refused += 1 }
            case .miss:
                if let doc = try h.store.get(path(p)) { cache.offer(doc, readAt: seq) }
            default:
                break
            }
            #expect(cache.inconsistencies().isEmpty, "round \(round): \(cache.inconsistencies())")
        }
        // A rendering of a cached version within the size limit is always kept: room is made for it, as for an
        // entry, by evicting others.
        #expect(attached > 100 && refused == 0, "renderings kept: \(attached), refused: \(refused)")
    }

    /// A key from an index entry's collection and ID is the key of the document's path; an ID holding a `/`
    /// (which no document has: a damaged entry) gives none, so it cannot stand for another path; a reused key
    /// is the key of its last path.
    @Test func keysFromIndexEntriesAreThePathsKeys() {
        func key(_ collection: String, _ id: String) -> DocumentCache.Key? {
            var k = DocumentCache.Key()
            let ok = Array(collection.utf8).withUnsafeBytes { c in Array(id.utf8).withUnsafeBytes { i in k.assign(collection: c, id: i) } }
            return ok ? k : nil
        }
        let long = String(repeating: "é", count: 200)
        for p in ["c/d", "a/b/c/d", "c/\(long)", "rooms/r1/messages/\(long)x", "c/é", "c/\u{0}"] {
            let segments = p.split(separator: "/", omittingEmptySubsequences: false)
            let fromEntry = key(segments.dropLast().joined(separator: "/"), String(segments.last!))
            #expect(fromEntry.map { $0.matches(DocumentCache.Key(path(p))) } == true, "\(p)")
            #expect(fromEntry?.hash == DocumentCache.Key(path(p)).hash)
        }
        #expect(key("a/b", "c/d") == nil)                             // would read as a/b/c/d
        #expect(!DocumentCache.Key(path("ab/c")).matches(DocumentCache.Key(path("a/bc"))))
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
        // A rendering that names its version, so a rendering served with the wrong version (or around the
        // wrong data) shows.
        let render: @Sendable (StoredDocument) -> DocumentRendering = { d in
            let head = Array("\(d.path)@\(d.seq):".utf8)
            return DocumentRendering(bytes: head + Array(";\(d.seq)".utf8), headCount: head.count)
        }
        let whole: @Sendable (StoredDocument) -> [UInt8] = { d in Array("\(d.path)@\(d.seq):".utf8) + d.data + Array(";\(d.seq)".utf8) }
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
                            switch cache.read(key, at: snap.seq, room: .max, { rendered = Array($0.head) + Array($0.data) + Array($0.tail) }) {
                            case .rendered:
                                let ok = truth.map(whole) == rendered
                                stats.withLock { s in s.hits += 1; s.checks += 1; if !ok { s.wrong.append("rendering of \(p) at \(snap.seq)") } }
                            case .unrendered(let doc):
                                let ok = doc == truth
                                cache.attach(render(doc), to: key, version: doc.seq)
                                stats.withLock { s in s.hits += 1; s.checks += 1; if !ok { s.wrong.append("\(p) at \(snap.seq)") } }
                            case .miss:
                                if let truth { cache.offer(truth, readAt: snap.seq, rendering: render(truth)) }
                                stats.withLock { $0.checks += 1 }
                            case .needsRoom:
                                stats.withLock { $0.wrong.append("no room with room for anything") }
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
