@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// A subscriber over its output budget gets, per listener, one snapshot of the net changes once it drains
/// (docs/listeners.md, contract 9). The budget is crossed at any point: before a commit, or by the snapshots
/// of one commit, part way through the listeners of one shared view or of several. Whatever the point, each
/// listener's snapshots, applied in order to its first result, give the fresh result, with valid indices, and
/// nothing is queued for a subscriber past its budget.
@Suite struct ListenerBudgetTests {
    /// One connection's sink: over budget once `budget` snapshots are queued and not yet drained.
    final class Sink: ListenerSink {
        let budget: Int
        var queued = 0
        var coalesced = 0
        var events: [(tag: String, event: ListenerEvent)] = []
        init(budget: Int) { self.budget = budget }
        var canAcceptEvents: Bool { queued < budget }
        func deliver(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?) {
            events.append((listener.tag, event))
            queued += 1
        }
        func coalescing() { coalesced += 1 }
    }

    /// Eight listeners on one query share a view; two more on others. A budget of a few snapshots is crossed
    /// within one commit's deliveries: the listeners after the crossing fall behind holding the rows before
    /// the commit, and converge when the sink drains.
    @Test(arguments: [1, 3, 5])
    func aBudgetCrossedWithinOneCommitKeepsEveryListenerExact(budget: Int) throws {
        try check(seed: budget, budget: budget, commits: 200, drainEvery: 3)
    }

    /// Random commits, random drains, several budgets: every listener converges to the fresh result.
    @Test(arguments: 0..<6)
    func randomDrainsConverge(seed: Int) throws {
        try check(seed: 100 + seed, budget: 1 + seed % 4, commits: 300, drainEvery: 1 + seed % 5)
    }

    /// The client reads part of its output, leaving less than the budget but not nothing: its listeners that
    /// fell behind stay behind until the output drains, and those that did not fall behind are held back with
    /// them, so the connection's snapshots stay in seq order (contract 3). Before, a listener not behind was
    /// sent a later commit at once, ahead of the older net changes of those behind.
    @Test(arguments: 0..<4)
    func partialDrainsKeepTheConnectionsSnapshotsInSeqOrder(seed: Int) throws {
        try check(seed: 300 + seed, budget: 2 + seed % 3, commits: 300, drainEvery: 1 + seed % 3, partialDrains: true)
    }

    /// A listener held back while it is judged again keeps the connection's later snapshots behind it, so that
    /// none overtakes it; once released (or removed) they follow, in seq order.
    @Test func aHeldListenerKeepsTheConnectionsLaterSnapshotsBehindIt() throws {
        let h = try EngineHarness()
        let sink = Sink(budget: 100)
        func listen(_ collection: String, _ tag: String) throws -> Listener {
            let q = try Query.collection(try CollectionPath(parsing: collection)).validated()
            return try #require(try h.engine.listeners.add(.query(q), tag: tag, sink: sink, resumeAfter: nil))
        }
        for removing in [false, true] {
            let a = try listen("a\(removing)", "a"), b = try listen("b\(removing)", "b")
            sink.events.removeAll()
            h.engine.listeners.hold(a)
            _ = h.commit([set("a\(removing)/1", m(["v": .int(1)]))])   // a's, held back
            _ = h.commit([set("b\(removing)/1", m(["v": .int(2)]))])   // b's, later: behind a's
            h.engine.listeners.drained(sink)
            #expect(sink.events.isEmpty, "nothing overtakes the held listener: \(sink.events.map(\.tag))")
            #expect(sink.coalesced == 0, "within its budget, the subscriber gets no drain deadline for a hold")
            if removing {
                h.engine.listeners.remove(a)   // no release will come: b's goes now
                #expect(sink.events.map(\.tag) == ["b"])
            } else {
                h.engine.listeners.release(a)
                #expect(sink.events.map(\.tag) == ["a", "b"])
                h.engine.listeners.remove(a)
            }
            h.engine.listeners.remove(b)
            #expect(h.engine.listeners.isCaughtUp(sink))
        }
    }

    /// `partialDrains`: every other drain point takes only half of what is queued, without the drain (zero)
    /// that sends coalesced listeners.
    func check(seed: Int, budget: Int, commits: Int, drainEvery: Int, partialDrains: Bool = false) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 2_654_435_761 &+ 11)
        let h = try EngineHarness()
        _ = h.commit((0..<20).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 50))])) })
        let c = try CollectionPath(parsing: "w")
        func q(_ build: (inout Query) -> Void) throws -> ValidQuery {
            var query = Query.collection(c)
            build(&query)
            return try query.validated()
        }
        let byV = try q { $0.orderBy = [.init(fp("v"))] }
        let top = try q { $0.orderBy = [.init(fp("v"), .descending)]; $0.limit = 4 }
        let low = try q { $0.filter = .field(fp("v"), .lessThan, 25) }
        // A listener of another collection: commits that do not reach the others, so seqs differ among them.
        _ = h.commit((0..<5).map { set("x/d\($0)", m(["v": .int(Int64($0))])) })
        var other = Query.collection(try CollectionPath(parsing: "x"))
        other.orderBy = [.init(fp("v"))]
        var queries: [(String, ValidQuery)] = (0..<8).map { ("same\($0)", byV) }
        queries += [("top", top), ("low", low), ("other", try other.validated())]
        let sink = Sink(budget: budget)
        var rows: [String: [DocumentPath]] = [:]
        var sizes: [String: Int] = [:]
        // What each client holds of every document: its update time, so a change of content missed is seen.
        var versions: [String: [DocumentPath: Timestamp]] = [:]
        for (tag, query) in queries {
            _ = try h.engine.listeners.add(.query(query), tag: tag, sink: sink, resumeAfter: nil)
            let docs = try h.engine.runQuery(query).documents
            rows[tag] = docs.map(\.stored.path)
            versions[tag] = Dictionary(uniqueKeysWithValues: docs.map { ($0.stored.path, $0.stored.updateTime) })
        }
        sink.events.removeAll()
        sink.queued = 0
        h.engine.listeners.drained(sink)

        // Across the listeners of the connection, snapshots arrive in seq order.
        var lastSeq: UInt64 = 0
        func take() {
            for (tag, event) in sink.events {
                guard case .query(let seq, let initial, let reset, let size, let changes) = event else {
                    Issue.record("\(tag): \(event)")
                    continue
                }
                // A listener's first snapshot, at the published seq, is the one exception (docs/listeners.md, 3).
                if !initial {
                    #expect(seq >= lastSeq, "\(tag): a snapshot at seq \(seq) after one at seq \(lastSeq)")
                    lastSeq = max(lastSeq, seq)
                }
                #expect(!reset, "\(tag): no reset")
                if initial { rows[tag] = []; versions[tag] = [:] }   // a listener added during the run
                var list = rows[tag]!
                for ch in changes {
                    if ch.oldIndex >= 0 {
                        let ok = ch.oldIndex < list.count && list[ch.oldIndex] == ch.document.stored.path
                        #expect(ok, "\(tag): \(ch.kind) \(ch.document.stored.path) at oldIndex \(ch.oldIndex) of \(list)")
                        if !ok { return }
                        list.remove(at: ch.oldIndex)
                    }
                    if ch.newIndex >= 0 {
                        #expect(ch.newIndex <= list.count, "\(tag): newIndex \(ch.newIndex)")
                        list.insert(ch.document.stored.path, at: min(ch.newIndex, list.count))
                        versions[tag]![ch.document.stored.path] = ch.document.stored.updateTime
                    } else {
                        versions[tag]![ch.document.stored.path] = nil
                    }
                }
                #expect(size == list.count, "\(tag): size \(size), \(list.count) rows after the changes")
                rows[tag] = list
                sizes[tag] = size
            }
            sink.events.removeAll()
        }

        var crossed = 0
        for n in 0..<commits {
            var writes: [Write] = []
            let collection = r.next() % 3 == 0 ? "x" : "w"
            for _ in 0..<(1 + Int(r.next() % 3)) {
                let i = Int(r.next() % 24)
                let path = "\(collection)/d\(i)"
                writes.append(r.next() % 5 == 0 ? delete(path) : set(path, m(["v": .int(Int64(r.next() % 50))])))
            }
            if partialDrains && n % 40 == 20 {
                // A listen while the connection may be behind: its first snapshot goes at once; those behind
                // follow when it drains, still in seq order among them and converging.
                let tag = "late\(n)"
                let query = n % 80 == 20 ? byV : try other.validated()
                _ = try h.engine.listeners.add(.query(query), tag: tag, sink: sink, resumeAfter: nil)
                queries.append((tag, query))
                take()
            }
            let before = sink.queued
            _ = h.commit(writes)
            if before < budget && sink.queued >= budget { crossed += 1 }
            // Memory stays bounded: nothing is queued for a subscriber at or past its budget, however many of
            // its listeners one commit reaches.
            #expect(sink.queued <= max(before, budget), "\(sink.queued) snapshots queued, budget \(budget)")
            take()
            if partialDrains && n % (2 * drainEvery) == 0 {
                sink.queued /= 2
            } else if n % drainEvery == 0 {
                sink.queued = 0
                h.engine.listeners.drained(sink)
                take()
            }
        }
        // The client reads everything: each drain sends as many coalesced listeners as the budget takes.
        for _ in 0..<queries.count where !h.engine.listeners.isCaughtUp(sink) {
            sink.queued = 0
            h.engine.listeners.drained(sink)
            take()
        }
        #expect(h.engine.listeners.isCaughtUp(sink))
        for (tag, query) in queries {
            let fresh = try h.engine.runQuery(query).documents
            #expect(rows[tag]! == fresh.map(\.stored.path), "\(tag) converges")
            #expect(versions[tag]! == Dictionary(uniqueKeysWithValues: fresh.map { ($0.stored.path, $0.stored.updateTime) }),
                    "\(tag): every document's content is the current one")
        }
        #expect(crossed > 0, "the budget was crossed within a commit's deliveries")
        #expect(sink.coalesced > 0, "some listeners were coalesced")
    }
}
