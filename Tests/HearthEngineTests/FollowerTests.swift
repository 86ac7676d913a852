@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// An engine that follows another one over the same store (a node of a cluster): it publishes the other's
/// commits from the change log (`adopt`), in chunks that leave the store ahead of it, and meanwhile reads
/// exactly at its own published seq (`publishedReads`). Its listeners' snapshots equal, seq for seq and change
/// for change, those of the same listeners on the committing engine, limit windows (refilled from the store
/// while it is ahead) included.
@Suite struct FollowerTests {
    /// A leader that committed 30 documents `w/d0`...`w/d29` with random `v`, and a follower over its store.
    static func leaderAndFollower(_ r: inout QueryOracleTests.RNG) throws -> (MemoryStore, EngineHarness, EngineHarness) {
        let store = MemoryStore()
        let leader = try EngineHarness(store: store)
        _ = leader.commit((0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100))])) })
        return (store, leader, try EngineHarness.follower(over: store, codec: leader.codec))
    }

    @Test(arguments: 0..<6)
    func aFollowerPublishesTheSameSnapshotsAndReadsAtItsSeq(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 6_007 &+ 11)
        let (store, leader, follower) = try FollowerTests.leaderAndFollower(&r)
        #expect(follower.engine.lastDurableSeq == 1)

        let window = ListenerWindowTests()
        let qs = try ListenerWindowTests.queries()
        let leaderSink = ListenerWindowTests.Sink(), followerSink = ListenerWindowTests.Sink()
        for (tag, q) in qs {
            _ = try leader.engine.listeners.add(.query(q), tag: tag, sink: leaderSink, resumeAfter: nil)
            _ = try follower.engine.listeners.add(.query(q), tag: tag, sink: followerSink, resumeAfter: nil)
        }
        // The committing engine's results after each seq: what the follower must read at that seq.
        var resultsAt: [UInt64: [String: [DocumentPath]]] = [:]
        func results(_ e: Engine) throws -> [String: [DocumentPath]] {
            var out: [String: [DocumentPath]] = [:]
            for (tag, q) in qs { out[tag] = try e.runQuery(q).documents.map(\.stored.path) }
            return out
        }
        resultsAt[1] = try results(leader.engine)
        var adopted = 0
        for _ in 0..<80 {
            for _ in 0..<(1 + Int(r.next() % 4)) {
                guard case .success(let o) = leader.commit(window.randomCommit(&r)) else { continue }
                resultsAt[o.seq] = try results(leader.engine)
            }
            // The follower takes part of what is stored: the store stays ahead of it.
            let published = follower.engine.lastDurableSeq
            let pending = try store.changes(after: published, limit: 100) ?? []
            let take = pending.isEmpty ? 0 : Int(r.next() % UInt64(pending.count + 1))
            if take > 0 { follower.engine.adopt(Array(pending.prefix(take))); adopted += take }
            let at = follower.engine.lastDurableSeq
            let expected = resultsAt.filter { $0.key <= at }.max { $0.key < $1.key }!.value
            let storeSeq = try store.lastSeq()
            let read = try results(follower.engine)
            #expect(read == expected, "the follower reads at seq \(at), the store is at \(storeSeq)")
            let d7 = try follower.engine.get(path("w/d7"))?.seq ?? 0
            #expect(d7 <= at)
        }
        follower.engine.adopt(try store.changes(after: follower.engine.lastDurableSeq, limit: 10_000) ?? [])
        #expect(follower.engine.lastDurableSeq == leader.engine.lastDurableSeq)
        #expect(adopted > 50)
        let refused = thrownError { () throws(HearthError) in _ = try follower.engine.commit([delete("w/d1")]) { _ in } }
        #expect(refused?.message == "a follower")

        // Seq for seq, change for change.
        func stream(_ sink: ListenerWindowTests.Sink, _ tag: String) -> [String] {
            sink.events.filter { $0.tag == tag }.map { e -> String in
                guard case .query(let seq, let initial, _, _, let changes) = e.event else { return "\(e.event)" }
                return "\(seq) \(initial) " + changes.map { "\($0.kind) \($0.document.stored.path) \($0.oldIndex) \($0.newIndex) \($0.document.stored.updateTime)" }.joined(separator: ",")
            }
        }
        for (tag, _) in qs {
            #expect(stream(followerSink, tag) == stream(leaderSink, tag), "\(tag)")
        }
    }

    /// A log whose seqs skip (a writer that lost a group before the cluster kept seqs contiguous) is followed
    /// as it is: the follower publishes every commit, and reads at its seq across the gap.
    @Test func aGapInTheLogIsFollowed() throws {
        let store = MemoryStore()
        let codec = TableCodec()
        let leader = try EngineHarness(store: store, codec: codec)
        _ = leader.commit([set("g/a", m(["v": .int(1)]))])
        let follower = try EngineHarness(store: store, codec: codec)
        follower.engine.storeMayLead = true
        // Seqs 2 and 3 never made it; 4 and 5 follow.
        let doc = StoredDocument(path: path("g/a"), data: codec.encode(m(["v": .int(4)])), createTime: Timestamp(micros: 1),
                                 updateTime: Timestamp(micros: 4), seq: 4)
        let before = try store.get(path("g/a"))
        try store.apply([CommitRecord(seq: 4, commitTime: Timestamp(micros: 4), mutations: [Mutation(path: path("g/a"), before: before, after: doc)])])
        let fifth = StoredDocument(path: path("g/b"), data: codec.encode(m(["v": .int(5)])), createTime: Timestamp(micros: 5),
                                   updateTime: Timestamp(micros: 5), seq: 5)
        try store.apply([CommitRecord(seq: 5, commitTime: Timestamp(micros: 5), mutations: [Mutation(path: path("g/b"), before: nil, after: fifth)])])
        #expect(try follower.fields("g/a")?["v"] == .int(1), "read at seq 1 across the gap")
        let pending = try store.changes(after: 1, limit: 10) ?? []
        #expect(pending.map(\.seq) == [4, 5])
        follower.engine.adopt(Array(pending.prefix(1)))
        #expect(follower.engine.lastDurableSeq == 4)
        #expect(try follower.fields("g/a")?["v"] == .int(4))
        #expect(try follower.fields("g/b") == nil, "seq 5 is not published yet")
        follower.engine.adopt(pending)
        #expect(try follower.fields("g/b")?["v"] == .int(5))
    }
}

/// A follower that fell behind retention moves to the store's seq without the commits between
/// (`Engine.reset(to:)`), reading nothing on its loop: where it moves to is read from a snapshot
/// (`Engine.ResetPoint`), and every listener goes back to pending with a read to make off the loop. Commits
/// published while those reads run reach the listeners through their backlog; once complete, each listener's
/// state (its events applied as a client applies them, the reset replacing what it had) is the query's result
/// at the published seq, and it follows later commits as before.
@Suite struct FollowerResetTests {
    @Test(arguments: 0..<4)
    func aResetReadsEveryListenerOffTheLoopAndStaysExact(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 7_919 &+ 3)
        let (store, leader, follower) = try FollowerTests.leaderAndFollower(&r)
        let window = ListenerWindowTests()
        // Two listeners per query (a shared view) and a document listener.
        var qs = try ListenerWindowTests.queries()
        qs += qs.map { ($0.0 + "'", $0.1) }
        let sink = ListenerWindowTests.Sink()
        for (tag, q) in qs { _ = try follower.engine.listeners.add(.query(q), tag: tag, sink: sink, resumeAfter: nil) }
        _ = try follower.engine.listeners.add(.document(path("w/d7")), tag: "doc", sink: sink, resumeAfter: nil)
        var rows: [String: [DocumentPath]] = [:]
        var doc: StoredDocument??
        func take() {
            for (tag, event) in sink.events {
                switch event {
                case .query(_, _, let reset, _, let changes):
                    if reset { rows[tag] = [] }
                    window.apply(changes, to: &rows[tag, default: []])
                case .document(_, _, _, let d): doc = .some(d)
                case .error(let e): Issue.record("\(tag): \(e)")
                }
            }
            sink.events.removeAll()
        }
        take()
        // The leader commits while the follower is stalled; retention would have pruned them.
        for _ in 0..<20 { _ = leader.commit(window.randomCommit(&r)) }
        let point = try Engine.ResetPoint.read(from: store)
        let before = follower.engine.loopStoreReads
        let reads = follower.engine.reset(to: point)
        #expect(follower.engine.lastDurableSeq == point.seq)
        #expect(reads.count == qs.count + 1 && follower.engine.listeners.pending.count == qs.count + 1)
        // The reads run on a snapshot taken now; the leader commits more, which the follower publishes before
        // the reads complete.
        let snapshot = try store.snapshot()
        var firsts: [(Listener, FirstSnapshot)] = []
        for (l, read) in reads {
            firsts.append((l, try read.read(on: snapshot, indexes: follower.engine.indexes, codec: follower.codec, cache: nil)))
        }
        snapshot.close()
        for _ in 0..<5 { _ = leader.commit(window.randomCommit(&r)) }
        follower.engine.adopt(try store.changes(after: follower.engine.lastDurableSeq, limit: 1000) ?? [])
        #expect(sink.events.isEmpty, "nothing is sent before a listener's reset")
        // A window that lost a row to the backlog is read again (as the daemon does, on a reader).
        for (l, first) in firsts {
            var outcome = follower.engine.listeners.complete(l, with: first)
            for _ in 0..<5 {
                guard case .again(let read) = outcome else { break }
                let again = try store.snapshot()
                defer { again.close() }
                outcome = follower.engine.listeners.complete(l, with: try read.read(on: again, indexes: follower.engine.indexes, codec: follower.codec, cache: nil))
            }
            guard case .registered = outcome else {
                Issue.record("\(l.tag) did not register: \(outcome)")
                continue
            }
        }
        #expect(follower.engine.loopStoreReads == before, "the reset read nothing on the loop")
        let resets = sink.events.filter { e in
            switch e.event {
            case .query(_, let initial, let reset, _, _): return reset && !initial
            case .document(_, let initial, let reset, _): return reset && !initial
            default: return false
            }
        }
        #expect(resets.count == qs.count + 1)
        take()
        func check() throws {
            for (tag, q) in qs {
                #expect(rows[tag] == (try leader.engine.runQuery(q).documents.map(\.stored.path)), "\(tag) at seq \(follower.engine.lastDurableSeq)")
            }
            #expect(doc == .some(try leader.engine.get(path("w/d7"))))
        }
        try check()
        for _ in 0..<10 { _ = leader.commit(window.randomCommit(&r)) }
        follower.engine.adopt(try store.changes(after: follower.engine.lastDurableSeq, limit: 1000) ?? [])
        take()
        try check()
    }
}

/// A follower's readers plan with the catalog valid at their snapshot's seq: when the store holds a drop and
/// the purge of an index the follower has not published yet, a reader whose snapshot is that far ahead takes
/// the snapshot's own catalog (`IndexCatalogView.open`), so it never plans with an index whose entries its
/// snapshot no longer holds.
@Suite struct FollowerCatalogTests {
    @Test func aReaderAheadOfTheFollowerPlansWithTheSnapshotsCatalog() throws {
        let store = MemoryStore(), catalogCodec = TableCatalogCodec()
        let leader = try EngineHarness(store: store, indexCatalogCodec: catalogCodec)
        _ = leader.commit((0..<20).map { set("calls/r\($0)", m(["customerId": .string("c\($0 % 4)"), "callDate": .int(Int64($0))])) })
        let fields: [IndexDefinition.Field] = [.init(fp("customerId"), .ascending), .init(fp("callDate"), .descending)]
        let (def, _) = try leader.engine.createIndex(collectionID: "calls", scope: .collection, fields: fields)
        while leader.engine.hasIndexWork { try leader.engine.indexWorkStep(); leader.flush() }
        leader.flush()
        let follower = try EngineHarness.follower(over: store, codec: leader.codec, indexCatalogCodec: catalogCodec)
        var q = Query.collection(try CollectionPath(parsing: "calls"))
        q.filter = .field(fp("customerId"), .equal, "c1")
        q.orderBy = [Query.Order(fp("callDate"), .descending)]
        let valid = try q.validated()
        func readerResult() throws -> Result<[String], HearthError> {
            let (snapshot, indexes) = try follower.engine.catalogView.open { () throws(HearthError) in try store.snapshot() }
            defer { snapshot.close() }
            do {
                let first = try FirstSnapshotRead(target: .query(valid), diffFrom: nil, maxResumeCommits: 100)
                    .read(on: snapshot, indexes: indexes, codec: follower.codec, cache: nil)
                return .success(first.rows.map(\.stored.path.id))
            } catch {
                return .failure(error)
            }
        }
        #expect(try readerResult().get() == ["r17", "r13", "r9", "r5", "r1"])
        // The leader drops the index and purges its entries; the follower has published none of it.
        try leader.engine.dropIndex(id: def.id)
        while leader.engine.hasIndexWork { try leader.engine.indexWorkStep(); leader.flush() }
        leader.flush()
        #expect(follower.engine.indexes.contains { $0.id == def.id }, "the follower still has the index")
        // A reader at the store's seq must not plan with it: no index serves the query there.
        switch try readerResult() {
        case .success(let rows): Issue.record("planned with a purged index: \(rows)")
        case .failure(let e): #expect(e.code == .failedPrecondition, "\(e)")
        }
    }
}
