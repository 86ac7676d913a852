import Foundation
import HearthModel
import HearthTesting
@testable import HearthEngine
@testable import HearthServer
import Testing

/// A node that fell behind retention moves to the store's seq (`Engine.reset(to:)`) and its connections read
/// every listener's whole result on reader threads (`Server.readAfterReset`): the loop reads nothing, each
/// listener gets a reset with its result at the seq it is sent at (commits published meanwhile included),
/// then follows on; no heartbeat goes out while a reset is being read.
@Suite struct ResetOffLoopTests {
    /// Commits `docs` to the server's store through another engine, behind the server's back (the committer
    /// a follower did not follow).
    func commitBehind(_ s: InProcessServer, _ docs: [(String, Int64)]) throws {
        let other = try Engine(store: s.store, codec: JSONDocumentCodec(), indexCatalogCodec: JSONIndexCatalogCodec(), cacheBytes: 0)
        let writes = try docs.map { (p, v) in
            Write(kind: .set, path: try DocumentPath(parsing: p), operation: .update(fields: MapValue([.init(key: "n", value: .int(v))]), mask: nil))
        }
        try other.commit(writes) { _ in }
        let batch = try #require(other.takeBatch())
        #expect(Engine.makeDurable(batch, in: s.store) == nil)
        other.finish(batch, error: nil)
    }

    func rows(_ event: [String: Any]) -> [String] {
        ((event["changes"] as? [[String: Any]]) ?? []).compactMap { (($0["doc"] as? [String: Any])?["id"]) as? String }
    }

    @Test func everyListenerIsReadAgainOffTheLoopAndSentAReset() throws {
        let s = try InProcessServer { $0.readers = 1 }
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"c/a","data":{"n":1}},{"op":"set","path":"c/b","data":{"n":2}}]}"#])
        s.flush()
        r.write([#"{"op":"listen","query":{"collection":"c","orderBy":["n"],"limit":2},"id":"q"}"#,
                 #"{"op":"listen","path":"c/a","id":"d"}"#])
        s.flush()
        let opened = r.take()
        #expect(opened.count == 4, "\(opened)")
        // The store moves on without this node: c/a changes, c/0 comes first.
        try commitBehind(s, [("c/a", 10), ("c/0", 0)])
        let before = s.engine.gate.storeReads
        let point = try Engine.ResetPoint.read(from: s.store)
        let gate = ListenOffLoopTests.ReaderGate(s)
        s.server.readAfterReset(s.engine.reset(to: point))
        #expect(s.engine.lastDurableSeq == point.seq)
        #expect(s.server.readsInFlight == 2 && s.engine.listeners.pending.count == 2)
        #expect(s.engine.gate.storeReads == before, "the reset read nothing on the loop")
        let session = try #require(s.engine.listeners.pending.values.first?.subscriber as? Session)
        #expect(session.awaitingReset.count == 2, "no heartbeat until both resets are sent")
        // The resets are read; a commit is published before they complete (their backlog brings it in). The
        // write reads c/0 on the loop, as a write does over a local store.
        gate.release()
        gate.waitForQueuedReads(s)
        w.write([#"{"op":"set","path":"c/0","data":{"n":5}}"#])
        ListenOffLoopTests().publishAll(s)
        let afterWrite = s.engine.gate.storeReads
        s.flush()
        let lines = r.take()
        let resets = lines.filter { $0["reset"] as? Bool == true }
        #expect(resets.count == 2, "\(lines)")
        let query = try #require(resets.first { $0["changes"] != nil })
        #expect(query["seq"] as? Int == Int(s.engine.lastDurableSeq) && rows(query) == ["b", "0"], "\(query)")
        let doc = try #require(resets.first { $0["doc"] != nil })
        #expect(((doc["doc"] as? [String: Any])?["data"] as? [String: Any])?["n"] as? Int == 10)
        #expect(session.awaitingReset.isEmpty)
        #expect(s.engine.gate.storeReads == afterWrite, "completing the resets read nothing on the loop")
        // And they follow on.
        w.write([#"{"op":"set","path":"c/a","data":{"n":0}}"#])
        s.flush()
        let next = r.take()
        #expect(next.count == 2 && next.allSatisfy { $0["reset"] == nil && $0["initial"] as? Bool == false }, "\(next)")
    }
}
