@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// Limit windows are maintained from each commit's changes and re-read from the store only when a row
/// leaves a full window. Random commits against several windowed listeners: every snapshot must equal, change
/// for change and index for index, the docChanges computed by re-running the query before and after the
/// commit (the reference), and applying the snapshots must give the fresh query result.
@Suite struct ListenerWindowTests {
    final class Sink: ListenerSink {
        var canAcceptEvents: Bool { true }
        var events: [(tag: String, event: ListenerEvent)] = []
        func deliver(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?) { events.append((listener.tag, event)) }
        func coalescing() {}
    }

    static func queries() throws -> [(String, ValidQuery)] {
        let c = try CollectionPath(parsing: "w")
        func q(_ build: (inout Query) -> Void) throws -> ValidQuery {
            var query = Query.collection(c)
            build(&query)
            return try query.validated()
        }
        return [
            ("top3", try q { $0.orderBy = [.init(fp("v"), .descending)]; $0.limit = 3 }),
            ("low5", try q { $0.orderBy = [.init(fp("v"))]; $0.limit = 5 }),
            ("last4", try q { $0.orderBy = [.init(fp("v"))]; $0.limitToLast = 4 }),
            ("ge20", try q { $0.filter = .field(fp("v"), .greaterThanOrEqual, 20); $0.orderBy = [.init(fp("v"))]; $0.limit = 3 }),
            ("after80", try q { $0.orderBy = [.init(fp("v"), .descending)]; $0.startAt = Query.Bound([80], inclusive: false); $0.limit = 4 }),
            ("byName", try q { $0.limit = 6 }),
            ("one", try q { $0.orderBy = [.init(fp("v"))]; $0.limit = 1 }),
            ("big", try q { $0.orderBy = [.init(fp("v"), .descending)]; $0.limit = 50 }),   // never full
            // Unbounded (`IncrementalView`): by value, filtered, and by name (where a set moves nothing).
            ("allByV", try q { $0.orderBy = [.init(fp("v"), .descending)] }),
            ("from30", try q { $0.filter = .field(fp("v"), .greaterThanOrEqual, 30); $0.orderBy = [.init(fp("v"))] }),
            ("all", try q { _ = $0 }),
        ]
    }

    /// `lowerBound` tries the window's ends before its binary search: for every window of 0 to 7 rows (values
    /// with repeats, so the path breaks ties) and every document around, between, equal to and among them, in
    /// both directions, it answers what counting the rows that sort before the document answers.
    @Test func lowerBoundEqualsACountOfTheRowsBefore() throws {
        let c = try CollectionPath(parsing: "w")
        for direction in [Query.Direction.ascending, .descending] {
            var query = Query.collection(c)
            query.orderBy = [.init(fp("v"), direction)]
            query.limit = 10
            let q = try query.validated()
            func row(_ v: Int64, _ id: String) throws -> ResultDocument {
                let fields = m(["v": .int(v)])
                let stored = StoredDocument(path: try DocumentPath(parsing: "w/\(id)"), data: [], createTime: Timestamp(micros: 0),
                                            updateTime: Timestamp(micros: 0), seq: 1)
                return ResultDocument(stored: stored, fields: fields)
            }
            for size in 0...7 {
                var rows = try (0..<size).map { i in try row(Int64(i / 2) * 10, "r\(i)") }
                rows.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
                for v in stride(from: Int64(-5), through: 45, by: 5) {
                    for id in ["a", "r0", "r3", "r9", "z"] {
                        let d = try row(v, id)
                        let expected = rows.filter { q.compare($0.stored.path, $0.fields, d.stored.path, d.fields) < 0 }.count
                        #expect(rows.lowerBound(d.stored.path, d.fields, query: q) == expected, "\(direction) size \(size) v \(v) id \(id)")
                    }
                }
            }
        }
    }

    func randomCommit(_ r: inout QueryOracleTests.RNG, maxWrites: Int = 4) -> [Write] {
        var writes: [Write] = []
        var used = Set<Int>()
        for _ in 0..<(1 + Int(r.next() % UInt64(maxWrites))) {
            let i = Int(r.next() % 30)
            guard used.insert(i).inserted else { continue }
            switch r.next() % 10 {
            case 0, 1: writes.append(delete("w/d\(i)"))
            case 2: writes.append(set("w/d\(i)", m(["k": .int(Int64(r.next() % 3))])))            // no v: leaves v orders
            case 3: writes.append(merge("w/d\(i)", m(["k": .int(Int64(r.next() % 3))]), mask: ["k"]))  // same place, changed
            default: writes.append(set("w/d\(i)", m(["v": .int(Int64(r.next() % 100)), "k": .int(Int64(r.next() % 3))])))
            }
        }
        return writes
    }

    /// Applies a snapshot's changes as a client does, checking every index.
    func apply(_ changes: [ViewChange], to rows: inout [DocumentPath]) {
        for ch in changes {
            if ch.oldIndex >= 0 {
                #expect(ch.oldIndex < rows.count && rows[ch.oldIndex] == ch.document.stored.path, "oldIndex \(ch.oldIndex)")
                if ch.oldIndex < rows.count { rows.remove(at: ch.oldIndex) }
            }
            if ch.newIndex >= 0 {
                #expect(ch.newIndex <= rows.count, "newIndex \(ch.newIndex)")
                rows.insert(ch.document.stored.path, at: min(ch.newIndex, rows.count))
            }
        }
    }

    @Test(arguments: 0..<12)
    func windowsMatchRecomputedChanges(seed: Int) throws { try checkChanges(seed: seed, maxWrites: 4) }

    /// Commits that touch most of the result at once: several removals, additions and modifications (moving
    /// or keeping their place) in one snapshot, whose indices are counted rather than replayed one by one.
    @Test(arguments: 0..<8)
    func largeCommitsMatchRecomputedChanges(seed: Int) throws { try checkChanges(seed: seed + 100, maxWrites: 30) }

    func checkChanges(seed: Int, maxWrites: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 104_729 &+ 7)
        let h = try EngineHarness()
        _ = h.commit((0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100)), "k": 0])) })
        let sink = Sink()
        let qs = try Self.queries()
        var previous: [String: [ResultDocument]] = [:]
        for (tag, q) in qs {
            _ = try h.engine.listeners.add(.query(q), tag: tag, sink: sink, resumeAfter: nil)
            previous[tag] = try h.engine.runQuery(q).documents
        }
        sink.events.removeAll()
        var snapshots = 0
        for _ in 0..<300 {
            guard case .success = h.commit(randomCommit(&r, maxWrites: maxWrites)) else { continue }
            for (tag, q) in qs {
                let fresh = try h.engine.runQuery(q).documents
                let expected = QueryView.changes(from: previous[tag]!, to: fresh, query: q)
                let got: [ViewChange] = sink.events.filter { $0.tag == tag }.flatMap { e -> [ViewChange] in
                    if case .query(_, _, _, _, let changes) = e.event { return changes }
                    return []
                }
                #expect(got.map { "\($0.kind) \($0.document.stored.path) \($0.oldIndex) \($0.newIndex)" }
                        == expected.map { "\($0.kind) \($0.document.stored.path) \($0.oldIndex) \($0.newIndex)" }, "\(tag)")
                #expect(got.map(\.document.stored.updateTime) == expected.map(\.document.stored.updateTime), "\(tag)")
                var applied = previous[tag]!.map(\.stored.path)
                apply(got, to: &applied)
                #expect(applied == fresh.map(\.stored.path), "\(tag): the changes applied give the fresh result")
                previous[tag] = fresh
                snapshots += got.isEmpty ? 0 : 1
            }
            sink.events.removeAll()
        }
        #expect(snapshots > 300)
    }

    /// Several commits made durable as one batch: one snapshot per commit (a re-read must see the state as
    /// of its own commit, not the batch's end), in seq order, converging to the fresh result.
    @Test(arguments: 0..<6)
    func batchedCommitsConverge(seed: Int) throws {
        var r = QueryOracleTests.RNG(state: UInt64(seed) &* 7_919 &+ 3)
        let h = try EngineHarness()
        _ = h.commit((0..<30).map { set("w/d\($0)", m(["v": .int(Int64(r.next() % 100))])) })
        let sink = Sink()
        let qs = try Self.queries()
        var applied: [String: [DocumentPath]] = [:]
        var lastSeq: [String: UInt64] = [:]
        for (tag, q) in qs {
            _ = try h.engine.listeners.add(.query(q), tag: tag, sink: sink, resumeAfter: nil)
            applied[tag] = try h.engine.runQuery(q).documents.map(\.stored.path)
        }
        sink.events.removeAll()
        for _ in 0..<60 {
            for _ in 0..<(1 + Int(r.next() % 5)) { _ = try? h.engine.commit(randomCommit(&r)) { _ in } }
            h.flush()
            for (tag, event) in sink.events {
                guard case .query(let seq, _, _, _, let changes) = event else { Issue.record("\(tag): \(event)"); continue }
                #expect(seq > lastSeq[tag, default: 0], "\(tag): snapshots in seq order")
                lastSeq[tag] = seq
                apply(changes, to: &applied[tag]!)
            }
            sink.events.removeAll()
            for (tag, q) in qs {
                #expect(applied[tag]! == (try h.engine.runQuery(q).documents.map(\.stored.path)), "\(tag)")
            }
        }
    }
}
