import Foundation
@testable import HearthEngine
import HearthModel
@testable import HearthServer
import Testing

/// Over a local store, a limit window whose plan is not exact (its refill may scan any number of documents to
/// find the window's rows) is refilled before the publication on a reader thread, as every window is over a
/// store across the network; an exact window is still refilled on the loop (at most its own rows).
@Suite struct WindowRefillOffLoopTests {
    /// Seeds `c/a` ... `c/e`, all matching `v == 1 && w == 1`, and `c/x`, which does not.
    func seeded() throws -> InProcessServer {
        let s = try InProcessServer { $0.readers = 1 }
        #expect(!s.engine.storeIsRemote)
        let w = s.connect()
        w.write(["a", "b", "c", "d", "e"].map { #"{"op":"set","path":"c/\#($0)","data":{"v":1,"w":1}}"# }
                + [#"{"op":"set","path":"c/x","data":{"v":1,"w":2}}"#])
        s.flush()
        #expect(w.take().allSatisfy { $0["ok"] as? Bool == true })
        return s
    }

    /// Runs the delete of `c/a` up to its publication; returns the writer's connection and the batch.
    func deleteA(_ s: InProcessServer) throws -> (FakeConnection, CommitBatch) {
        let w = s.connect()
        w.write([#"{"op":"delete","path":"c/a","id":"w"}"#])
        s.settle()
        let batch = try #require(s.takeBatch())
        s.land(batch)
        return (w, batch)
    }

    func changes(_ event: [String: Any]) -> [String]? {
        (event["changes"] as? [[String: Any]])?.map { "\($0["type"]!) \((($0["doc"] as? [String: Any])?["id"])!)" }
    }

    /// Two equality filters: one single-field index is scanned and the other filter checked per document (not
    /// exact). The window loses `c/a`; `c/c` is read on a reader before the publication, and the loop reads
    /// nothing for it.
    @Test func aWindowWhosePlanIsNotExactIsRefilledOnAReader() throws {
        let s = try seeded()
        let l = s.connect()
        l.write([#"{"op":"listen","query":{"collection":"c","where":[["v","==",1],["w","==",1]],"limit":2},"id":"l"}"#])
        s.settle()
        #expect(l.take().count == 2)
        let (w, batch) = try deleteA(s)
        let seq = try #require(batch.records.last?.seq)
        let loopReads = s.engine.loopStoreReads
        s.publish(batch)
        #expect(s.server.readsInFlight == 1, "the refill, on a reader")
        #expect(s.engine.lastDurableSeq == seq - 1 && w.take().isEmpty, "published once the refill is back")
        s.settle()
        #expect(s.engine.lastDurableSeq == seq)
        #expect(w.take().first?["ok"] as? Bool == true)
        let event = try #require(l.take().first)
        #expect(event["seq"] as? Int == Int(seq) && changes(event) == ["removed a", "added c"], "\(event)")
        #expect(s.engine.loopStoreReads == loopReads, "the publication read nothing on the loop")
    }

    /// An exact window (the collection in name order) is refilled during the publication, on the loop: the
    /// batch is published at once.
    @Test func anExactWindowIsRefilledOnTheLoop() throws {
        let s = try seeded()
        let l = s.connect()
        l.write([#"{"op":"listen","query":{"collection":"c","orderBy":["__name__"],"limit":2},"id":"l"}"#])
        s.settle()
        #expect(l.take().count == 2)
        let (w, batch) = try deleteA(s)
        let seq = try #require(batch.records.last?.seq)
        let loopReads = s.engine.loopStoreReads
        s.publish(batch)
        #expect(s.server.readsInFlight == 0 && s.engine.lastDurableSeq == seq)
        #expect(w.take().first?["ok"] as? Bool == true)
        #expect(changes(try #require(l.take().first)) == ["removed a", "added c"])
        #expect(s.engine.loopStoreReads > loopReads, "read on the loop")
    }

    /// Once an index makes the plan exact, the same window is refilled on the loop: the decision follows the
    /// index catalog.
    @Test func theDecisionFollowsTheIndexCatalog() throws {
        let s = try seeded()
        let l = s.connect(), admin = s.connect()
        let query = #"{"collection":"c","where":[["v","==",1],["w","==",1]],"limit":2}"#
        l.write([#"{"op":"listen","query":\#(query),"id":"l"}"#])
        s.settle()
        #expect(l.take().count == 2)
        let hub = s.engine.listeners
        let view = try #require(hub.views.values.first)
        #expect(hub.refillsOffLoop(view))
        admin.write([#"{"op":"index","action":"create","collection":"c","scope":"collection","fields":[["v","asc"],["w","asc"]],"id":"i"}"#])
        s.flush()
        // The index is built by the server's index work; run it until the catalog says ready.
        for _ in 0..<100 where s.engine.indexes.contains(where: { $0.state != .ready }) {
            s.server.runIndexWork()
            s.flush()
        }
        #expect(s.engine.indexes.allSatisfy { $0.state == .ready })
        #expect(!hub.refillsOffLoop(view), "exact with the composite index")
    }
}
