@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// Listeners whose first snapshot is read off the loop (`ListenerHub.begin`, a snapshot read as a reader
/// thread reads it, `complete`), with commits published between each step: every first snapshot must be the
/// query's result at the seq it carries (the published seq when it completes), a resume's changes must lead
/// from the result at its resume point to that result, and every later snapshot must keep the listener equal
/// to the re-run query.
@Suite struct PendingListenTests {
    typealias Sink = ListenerWindowTests.Sink

    /// Commits `w/d0`…`w/d<n-1>` with `v` = their number, and returns the window of the three lowest `v`.
    static func firstThree(_ h: EngineHarness, of n: Int) throws -> ValidQuery {
        _ = h.commit((0..<n).map { set("w/d\($0)", m(["v": .int(Int64($0))])) })
        var query = Query.collection(try CollectionPath(parsing: "w"))
        query.orderBy = [.init(fp("v"))]
        query.limit = 3
        return try query.validated()
    }

    /// One pending registration in the test: its listener, the read to run, the snapshot read so far.
    final class Attempt {
        let tag: String
        let listener: Listener
        var read: FirstSnapshotRead
        var first: FirstSnapshot?
        let resumeAfter: UInt64?
        init(tag: String, listener: Listener, read: FirstSnapshotRead, resumeAfter: UInt64?) {
            self.tag = tag
            self.listener = listener
            self.read = read
            self.resumeAfter = resumeAfter
        }
    }

    @Test(arguments: 0..<16)
    func firstSnapshotsReadOffTheLoopAreExactAtTheirSeq(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 6_151 &+ 11)
        let h = try EngineHarness()
        let window = ListenerWindowTests()
        _ = h.commit((0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100)), "k": 0])) })
        let queries = try ListenerWindowTests.queries() + [("all", try Query.collection(CollectionPath(parsing: "w")).validated())]
        // Each query's result (paths) after every seq, to check resumes against.
        var history: [String: [UInt64: [DocumentPath]]] = [:]
        func record() throws {
            for (name, q) in queries { history[name, default: [:]][h.engine.lastDurableSeq] = try h.engine.runQuery(q).documents.map(\.stored.path) }
        }
        try record()
        let sink = Sink()
        var pending: [Attempt] = []
        var registered: [String: (query: String, rows: [DocumentPath])] = [:]
        var nextTag = 0, resumed = 0

        func check(_ tag: String, _ event: ListenerEvent) throws {
            guard case .query(let seq, let initial, let reset, _, let changes) = event else {
                Issue.record("\(tag): \(event)")
                return
            }
            if var state = registered[tag] {
                #expect(!initial && !reset, "\(tag): a later snapshot")
                window.apply(changes, to: &state.rows)
                registered[tag] = state
                return
            }
            // The first snapshot of a pending listener that just completed.
            let attempt = try #require(pending.first { $0.tag == tag })
            #expect(seq == h.engine.lastDurableSeq, "\(tag): registered at the published seq")
            let name = String(tag.split(separator: ":")[0])
            var rows: [DocumentPath] = []
            if attempt.resumeAfter == nil {
                #expect(initial && !reset)
            } else if !reset {
                resumed += 1
                rows = try #require(history[name]?[attempt.resumeAfter!], "\(tag): the result at its resume point")
            }
            window.apply(changes, to: &rows)
            #expect(rows == history[name]?[seq], "\(tag): first snapshot at seq \(seq)")
            registered[tag] = (name, rows)
        }

        for step in 0..<600 {
            switch r.next() % 8 {
            case 0:
                let (name, q) = queries[Int(r.next() % UInt64(queries.count))]
                let published = h.engine.lastDurableSeq
                let resume: UInt64? = r.next() % 3 == 0 ? published - min(published - 1, r.next() % 12) : nil
                let tag = "\(name):\(nextTag)"
                nextTag += 1
                let (l, read) = try h.engine.listeners.begin(.query(q), tag: tag, sink: sink, resumeAfter: resume)
                #expect(l.isPending)
                pending.append(Attempt(tag: tag, listener: l, read: read, resumeAfter: resume))
            case 1, 2:
                // A reader reads one not yet read, at the store's current seq.
                guard let a = pending.first(where: { $0.first == nil }) else { continue }
                let snapshot = try h.store.snapshot()
                defer { snapshot.close() }
                a.first = try a.read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: h.engine.documentCache)
            case 3:
                guard let i = pending.firstIndex(where: { $0.first != nil }) else { continue }
                let a = pending[i]
                sink.events.removeAll()
                switch h.engine.listeners.complete(a.listener, with: a.first!) {
                case .again(let read):
                    #expect(sink.events.isEmpty)
                    a.read = read
                    a.first = nil
                case .failed(let e):
                    Issue.record("\(a.tag): \(e)")
                case .registered:
                    #expect(sink.events.count == 1)
                    for (tag, e) in sink.events { try check(tag, e) }
                    pending.remove(at: i)
                }
                sink.events.removeAll()
            case 4 where step % 5 == 0:
                // A connection closes while its listener is pending.
                guard let a = pending.popLast() else { continue }
                h.engine.listeners.remove(a.listener)
            default:
                guard case .success = h.commit(window.randomCommit(&r)) else { continue }
                try record()
                for (tag, e) in sink.events { try check(tag, e) }
                sink.events.removeAll()
            }
        }
        for (tag, state) in registered {
            let q = try #require(queries.first { $0.0 == state.query }?.1)
            #expect(state.rows == (try h.engine.runQuery(q).documents.map(\.stored.path)), "\(tag)")
        }
        #expect(h.engine.listeners.count == registered.count)
        #expect(h.engine.listeners.pending.count == pending.count)
        for a in pending { h.engine.listeners.remove(a.listener) }
        #expect(h.engine.listeners.pending.isEmpty && h.engine.listeners.index.values.allSatisfy { $0.allSatisfy { $0.isRegistered } })
        #expect(registered.count > 10 && resumed > 0, "\(registered.count) registered, \(resumed) resumed")
    }

    /// A full window that loses a row only the store can replace while its snapshot is read starts over from
    /// the current seq instead of reading on the loop.
    @Test func aWindowThatLosesARowWhilePendingIsReadAgain() throws {
        let h = try EngineHarness()
        let q = try Self.firstThree(h, of: 10)
        let sink = Sink()
        let (l, read) = try h.engine.listeners.begin(.query(q), tag: "t", sink: sink, resumeAfter: nil)
        let snapshot = try h.store.snapshot()
        let first = try read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)
        snapshot.close()
        _ = h.commit([delete("w/d0")])
        guard case .again(let again) = h.engine.listeners.complete(l, with: first) else {
            Issue.record("a window that lost a row must be read again")
            return
        }
        #expect(l.isPending && l.seq == 2 && sink.events.isEmpty)
        let second = try h.store.snapshot()
        let retry = try again.read(on: second, indexes: h.engine.indexes, codec: h.codec, cache: nil)
        second.close()
        guard case .registered = h.engine.listeners.complete(l, with: retry) else {
            Issue.record("the second read registers")
            return
        }
        guard case .query(let seq, true, false, 3, let changes) = sink.events.first?.event else {
            Issue.record("\(sink.events)")
            return
        }
        #expect(seq == 2 && changes.map(\.document.stored.path.description) == ["w/d1", "w/d2", "w/d3"])
        // A commit published after the snapshot and kept in the backlog is applied to it.
        let (l2, read2) = try h.engine.listeners.begin(.query(q), tag: "u", sink: sink, resumeAfter: nil)
        _ = l2
        h.engine.listeners.remove(l)   // not shared yet: l2 builds its own view
        let s3 = try h.store.snapshot()
        let third = try read2.read(on: s3, indexes: h.engine.indexes, codec: h.codec, cache: nil)
        s3.close()
        _ = h.commit([set("w/a", m(["v": -1]))])
        sink.events.removeAll()
        guard case .registered = h.engine.listeners.complete(l2, with: third),
              case .query(3, true, false, 3, let got) = sink.events.first?.event else {
            Issue.record("\(sink.events)")
            return
        }
        #expect(got.map(\.document.stored.path.description) == ["w/a", "w/d1", "w/d2"])
    }

    /// Without `readsOffLoop` (an engine driven without a server), a window that loses a row during every read
    /// of its first snapshot is read again a few times, then refilled as a publication refills one, instead of
    /// without end.
    @Test func aWindowThatKeepsLosingRowsIsRefilledAfterAFewReads() throws {
        let h = try EngineHarness()
        let q = try Self.firstThree(h, of: 20)
        let sink = Sink()
        var (l, read) = try h.engine.listeners.begin(.query(q), tag: "t", sink: sink, resumeAfter: nil)
        var attempts = 0
        while true {
            let snapshot = try h.store.snapshot()
            let first = try read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)
            snapshot.close()
            let lowest = try h.engine.runQuery(q).documents[0].stored.path.description
            _ = h.commit([delete(lowest)])           // the window's first row goes, every time
            attempts += 1
            switch h.engine.listeners.complete(l, with: first) {
            case .again(let next): read = next
            case .failed(let e): Issue.record("\(e)"); return
            case .registered:
                #expect(attempts == ListenerHub.maxAttempts + 1)
                guard case .query(let seq, true, false, 3, let changes) = sink.events.first?.event else { Issue.record("\(sink.events)"); return }
                #expect(seq == h.engine.lastDurableSeq)
                let expected = try h.engine.runQuery(q).documents.map(\.stored.path)
                #expect(changes.map(\.document.stored.path) == expected)
                return
            }
            _ = l
            if attempts > 10 { Issue.record("never registered"); return }
        }
    }

    /// With `readsOffLoop` (a server, over every store) the loop never refills such a window: it is read again,
    /// with rows beyond the window once it lost rows `maxAttempts` times, which replace the rows it loses
    /// meanwhile; it registers exactly.
    @Test func withReadsOffTheLoopAWindowThatKeepsLosingRowsIsReadAgain() throws {
        let h = try EngineHarness()
        let q = try Self.firstThree(h, of: 20)
        let sink = Sink()
        h.engine.listeners.readsOffLoop = true
        var (l, read) = try h.engine.listeners.begin(.query(q), tag: "t", sink: sink, resumeAfter: nil)
        var attempts = 0
        while true {
            let snapshot = try h.store.snapshot()
            let first = try read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)
            snapshot.close()
            attempts += 1
            let lowest = try h.engine.runQuery(q).documents[0].stored.path.description
            _ = h.commit([delete(lowest)])           // the window's first row goes, every time
            let before = h.engine.loopStoreReads
            let outcome = h.engine.listeners.complete(l, with: first)
            #expect(h.engine.loopStoreReads == before, "complete read nothing on the loop")
            switch outcome {
            case .again(let next): read = next
            case .failed(let e): Issue.record("\(e)"); return
            case .registered:
                #expect(attempts == ListenerHub.maxAttempts + 1, "the first read with rows beyond the window registers")
                guard case .query(let seq, true, false, 3, let changes) = sink.events.first?.event else { Issue.record("\(sink.events)"); return }
                #expect(seq == h.engine.lastDurableSeq)
                let expected = try h.engine.runQuery(q).documents.map(\.stored.path)
                #expect(changes.map(\.document.stored.path) == expected)
                return
            }
            _ = l
            if attempts > 20 { Issue.record("never registered"); return }
        }
    }

    /// A first read with rows beyond the window, brought forward by random commits: whenever it registers, its
    /// window is exactly the query's result (the rows beyond replace those the window lost meanwhile).
    @Test(arguments: 0..<8)
    func aWidenedFirstReadRegistersExactly(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 15_485_863 &+ 5)
        let h = try EngineHarness()
        _ = h.commit((0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100))])) })
        let window = ListenerWindowTests()
        var registered = 0
        for (tag, q) in try ListenerWindowTests.queries() {
            let sink = Sink()
            let (l, _) = try h.engine.listeners.begin(.query(q), tag: tag, sink: sink, resumeAfter: nil)
            l.widen = 1 + Int(r.next() % 6)
            var read = h.engine.listeners.firstRead(for: l)
            for _ in 0..<20 {
                let snapshot = try h.store.snapshot()
                let first = try read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)
                snapshot.close()
                for _ in 0..<Int(r.next() % 4) { _ = h.commit(window.randomCommit(&r)) }
                h.engine.listeners.readsOffLoop = true
                let outcome = h.engine.listeners.complete(l, with: first)
                h.engine.listeners.readsOffLoop = false
                guard case .again(let next) = outcome else {
                    guard case .registered = outcome else { Issue.record("\(tag): \(outcome)"); break }
                    let expected = try h.engine.runQuery(q).documents.map(\.stored.path)
                    #expect(l.current.map(\.stored.path) == expected, "\(tag) widened by \(l.widen)")
                    guard case .query(_, true, false, let size, let changes) = sink.events.first?.event else { Issue.record("\(sink.events)"); break }
                    #expect(size == expected.count && changes.map(\.document.stored.path) == expected)
                    registered += 1
                    break
                }
                read = next
            }
        }
        #expect(registered > 0)
    }

    /// The hub moving every listener to a new seq without the commits between (a follower behind retention)
    /// makes a pending listener read again.
    @Test func aResetWhilePendingStartsTheReadOver() throws {
        let h = try EngineHarness()
        _ = h.commit([set("w/a", m(["v": 1]))])
        let sink = Sink()
        let (l, read) = try h.engine.listeners.begin(.document(path("w/a")), tag: "d", sink: sink, resumeAfter: nil)
        let snapshot = try h.store.snapshot()
        let first = try read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)
        snapshot.close()
        h.engine.listeners.resetAll()
        guard case .again = h.engine.listeners.complete(l, with: first) else {
            Issue.record("a reset breaks the backlog")
            return
        }
        #expect(sink.events.isEmpty)
    }
}

/// Limit windows refilled from reads made before the publication (`ListenerHub.windowReads`, as the daemon
/// does on reader threads over every store): the publication then reads nothing from the store (so the dry
/// run foresaw every refill, and skipped only windows that could not lose a row), and every listener's
/// snapshots are exactly those of an engine that refilled on the loop, given the same commits in the same
/// batches.
@Suite struct WindowReadsBeforePublicationTests {
    @Test(arguments: 0..<10)
    func windowsRefilledBeforehandGiveTheSameSnapshots(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 69_621 &+ 17)
        let ahead = try EngineHarness(), reference = try EngineHarness()
        let window = ListenerWindowTests()
        let fill = (0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100)), "k": 0])) }
        _ = ahead.commit(fill)
        _ = reference.commit(fill)
        var qs = try ListenerWindowTests.queries()
        qs += qs.prefix(2).map { ($0.0 + "-shared", $0.1) }
        // Windows of another collection, found through equality keys: a batch that changes only one
        // collection's documents (or only creates) runs the other's windows dry not at all.
        for k in 0..<3 {
            var o = Query.collection(try CollectionPath(parsing: "o"))
            o.filter = .field(fp("k"), .equal, .int(Int64(k)))
            o.limit = k + 1
            qs.append(("o\(k)", try o.validated()))
        }
        let others = (0..<12).map { set("o/d\($0)", m(["n": .int(Int64(r.next() % 20)), "k": .int(Int64(r.next() % 3))])) }
        _ = ahead.commit(others)
        _ = reference.commit(others)
        let sinkAhead = ListenerWindowTests.Sink(), sinkReference = ListenerWindowTests.Sink()
        for (tag, q) in qs {
            _ = try ahead.engine.listeners.add(.query(q), tag: tag, sink: sinkAhead, resumeAfter: nil)
            _ = try reference.engine.listeners.add(.query(q), tag: tag, sink: sinkReference, resumeAfter: nil)
        }
        func text(_ events: [(tag: String, event: ListenerEvent)]) -> [String] {
            events.map { e in
                guard case .query(let seq, _, _, let size, let changes) = e.event else { return "\(e.tag) \(e.event)" }
                return "\(e.tag) @\(seq) size \(size): " + changes.map { "\($0.kind) \($0.document.stored.path) \($0.oldIndex)>\($0.newIndex)" }.joined(separator: ", ")
            }
        }
        var provided = 0, rounds = 0
        for _ in 0..<80 {
            let writes = (0..<(1 + Int(r.next() % 5))).map { _ -> [Write] in
                guard r.next() % 2 == 0 else { return window.randomCommit(&r) }
                let i = Int(r.next() % 12)
                switch r.next() % 4 {
                case 0: return [delete("o/d\(i)")]
                case 1: return [set("o/new\(r.next() % 1000)", m(["n": .int(Int64(r.next() % 20)), "k": .int(Int64(r.next() % 3))]))]
                default: return [set("o/d\(i)", m(["n": .int(Int64(r.next() % 20)), "k": .int(Int64(r.next() % 3))]))]
                }
            }
            for w in writes {
                _ = try? ahead.engine.commit(w) { _ in }
                _ = try? reference.engine.commit(w) { _ in }
            }
            reference.flush()
            guard let batch = ahead.engine.takeBatch() else { continue }
            #expect(Engine.makeDurable(batch, in: ahead.store) == nil)
            while true {
                let reads = ahead.engine.listeners.windowReads(for: batch.records)
                if reads.isEmpty { break }
                rounds += 1
                for w in reads {
                    let snapshot = try ahead.store.snapshot()
                    defer { snapshot.close() }
                    ahead.engine.listeners.provide(w, .success(try w.read.read(on: snapshot, indexes: ahead.engine.indexes,
                                                                              codec: ahead.codec, cache: nil)))
                    provided += 1
                }
            }
            let storeReads = ahead.engine.gate.storeReads
            ahead.engine.finish(batch, error: nil)
            #expect(ahead.engine.gate.storeReads == storeReads, "the publication read nothing from the store")
            #expect(text(sinkAhead.events) == text(sinkReference.events))
            sinkAhead.events.removeAll()
            sinkReference.events.removeAll()
        }
        #expect(provided > 5 && rounds > 3, "\(provided) refills in \(rounds) rounds")
    }

    /// A refill at a commit before the batch's last is read from a snapshot at the batch's last seq with the
    /// batch's later commits rolled back from their before images, not from the change log: with a retention
    /// that prunes every commit but the newest as it lands, the window is still refilled exactly.
    @Test func aRefillNeedsNoChangeLog() throws {
        let h = try EngineHarness(store: MemoryStore(retention: RetentionPolicy(maxAgeMicros: 0, maxBytes: 1 << 30)))
        _ = h.commit((0..<6).map { set("c/d\($0)", m(["n": .int(Int64($0))])) })
        var q = Query.collection(try CollectionPath(parsing: "c"))
        q.orderBy = [.init(fp("n"))]
        q.limit = 2
        let sink = ListenerWindowTests.Sink()
        _ = try #require(try h.engine.listeners.add(.query(try q.validated()), tag: "w", sink: sink, resumeAfter: nil))
        h.engine.listeners.readsOffLoop = true
        for w in [[delete("c/d0")], [set("x/1", m(["v": 1]))], [set("c/d1", m(["n": 10]))]] {
            h.now += 1_000
            _ = try h.engine.commit(w) { _ in }
        }
        let batch = try #require(h.engine.takeBatch())
        #expect(batch.records.count == 3)
        #expect(Engine.makeDurable(batch, in: h.store) == nil)
        #expect(try h.store.changes(after: batch.records[0].seq, limit: 10) == nil, "the log no longer reaches the first commit")
        var reads = 0
        while true {
            let needed = h.engine.listeners.windowReads(for: batch.records)
            if needed.isEmpty { break }
            for w in needed {
                let snapshot = try h.store.snapshot()
                defer { snapshot.close() }
                h.engine.listeners.provide(w, .success(try w.read.read(on: snapshot, indexes: h.engine.indexes, codec: h.codec, cache: nil)))
                reads += 1
            }
        }
        #expect(reads == 2, "the first commit's refill, then the third's")
        h.engine.finish(batch, error: nil)
        let snapshots = sink.events.dropFirst().map { e -> [String] in
            guard case .query(_, _, _, _, let changes) = e.event else { return ["\(e.event)"] }
            return changes.map { "\($0.kind) \($0.document.stored.path)" }
        }
        #expect(snapshots == [["removed c/d0", "added c/d2"], ["removed c/d1", "added c/d3"]], "\(sink.events)")
    }
}
