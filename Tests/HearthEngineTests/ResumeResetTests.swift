@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// A resume token is a seq within one history: a seq the database never reached, or a seq of another
/// history, is answered with a reset (the full result, marked), never with a diff or silence.
@Suite struct ResumeResetTests {
    func query() throws -> ValidQuery { try Query.collection(try CollectionPath(parsing: "c")).validated() }

    func firstEvent(_ h: EngineHarness, _ target: Listener.Target, after: UInt64?, history: UInt64?) throws -> ListenerEvent {
        let sink = ListenerWindowTests.Sink()
        _ = try #require(try h.engine.listeners.add(target, tag: "t", sink: sink, resumeAfter: after, history: history))
        return try #require(sink.events.first?.event)
    }

    func harness() throws -> EngineHarness {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])
        _ = h.commit([set("c/b", m(["n": 2]))])
        return h
    }

    @Test func aResumeFromTheFutureIsAReset() throws {
        let h = try harness()
        let id = h.engine.historyID
        guard case .query(let seq, false, true, 2, let changes) = try firstEvent(h, .query(try query()), after: 99, history: id) else {
            Issue.record("query listener: not a reset"); return
        }
        #expect(seq == 2 && changes.map(\.kind) == [.added, .added])
        guard case .document(2, false, true, let doc?) = try firstEvent(h, .document(path("c/a")), after: 99, history: nil) else {
            Issue.record("document listener: not a reset"); return
        }
        #expect(doc.path == path("c/a"))
    }

    @Test func aResumeFromAnotherHistoryIsAReset() throws {
        let h = try harness()
        let other: UInt64 = h.engine.historyID == 7 ? 8 : 7
        guard case .query(2, false, true, 2, _) = try firstEvent(h, .query(try query()), after: 1, history: other) else {
            Issue.record("query listener: not a reset"); return
        }
        guard case .document(2, false, true, _) = try firstEvent(h, .document(path("c/b")), after: 1, history: other) else {
            Issue.record("document listener: not a reset"); return
        }
    }

    @Test func aResumeWithinTheHistoryIsADiff() throws {
        let h = try harness()
        for history in [h.engine.historyID, nil] {
            guard case .query(2, false, false, 2, let changes) = try firstEvent(h, .query(try query()), after: 1, history: history) else {
                Issue.record("query listener: not a diff"); return
            }
            #expect(changes.map { $0.document.stored.path } == [path("c/b")])
            guard case .query(2, false, false, 2, let none) = try firstEvent(h, .query(try query()), after: 2, history: history) else {
                Issue.record("query listener at the current seq: not an empty diff"); return
            }
            #expect(none.isEmpty)
            guard case .document(2, false, false, _) = try firstEvent(h, .document(path("c/b")), after: 1, history: history) else {
                Issue.record("document listener: marked as a reset"); return
            }
        }
    }
}
