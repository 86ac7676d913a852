@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// A listener can be registered while a commit batch is being made durable: before the batch lands in
/// the store its first snapshot is the published state and the batch reaches it when published; after the
/// batch landed (and before it is published) nothing is registered and the caller tries again.
@Suite struct ListenerRegistrationTests {
    func query() throws -> ValidQuery {
        var q = Query.collection(try CollectionPath(parsing: "c"))
        q.orderBy = [.init(fp("n"))]
        return try q.validated()
    }

    func paths(_ e: ListenerEvent) -> [String] {
        guard case .query(_, _, _, _, let changes) = e else { return [] }
        return changes.map { "\($0.kind) \($0.document.stored.path)" }
    }

    @Test(arguments: [false, true])
    func registeringBeforeTheBatchLandsSeesItPublished(shared: Bool) throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])
        let sink = ListenerWindowTests.Sink()
        if shared { _ = try h.engine.listeners.add(.query(try query()), tag: "first", sink: sink, resumeAfter: nil) }
        try h.engine.commit([set("c/b", m(["n": 2]))]) { _ in }
        let batch = try #require(h.engine.takeBatch())
        let l = try h.engine.listeners.add(.query(try query()), tag: "new", sink: sink, resumeAfter: nil)
        #expect(l != nil)
        let doc = try h.engine.listeners.add(.document(path("c/b")), tag: "doc", sink: sink, resumeAfter: nil)
        #expect(doc != nil)
        h.engine.finish(batch, error: Engine.makeDurable(batch, in: h.store))
        let mine = sink.events.filter { $0.tag == "new" }.map(\.event)
        #expect(mine.count == 2)
        #expect(paths(mine[0]) == ["added c/a"])
        #expect(paths(mine[1]) == ["added c/b"])
        let docEvents = sink.events.filter { $0.tag == "doc" }.map(\.event)
        guard docEvents.count == 2, case .document(_, true, false, nil) = docEvents[0], case .document(_, false, false, let d?) = docEvents[1] else {
            Issue.record("document listener: \(docEvents)"); return
        }
        #expect(d.path == path("c/b"))
    }

    @Test func registeringAfterTheBatchLandedWaitsForItsPublication() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": 1]))])
        let sink = ListenerWindowTests.Sink()
        try h.engine.commit([set("c/b", m(["n": 2]))]) { _ in }
        let batch = try #require(h.engine.takeBatch())
        let error = Engine.makeDurable(batch, in: h.store)       // landed, not yet published
        #expect(try h.engine.listeners.add(.query(try query()), tag: "q", sink: sink, resumeAfter: nil) == nil)
        #expect(try h.engine.listeners.add(.document(path("c/b")), tag: "d", sink: sink, resumeAfter: 0) == nil)
        #expect(sink.events.isEmpty)
        #expect(h.engine.listeners.count == 0)
        h.engine.finish(batch, error: error)
        let l = try #require(try h.engine.listeners.add(.query(try query()), tag: "q", sink: sink, resumeAfter: nil))
        #expect(l.seq == h.engine.lastDurableSeq)
        #expect(sink.events.map { paths($0.event) } == [["added c/a", "added c/b"]])
    }
}
