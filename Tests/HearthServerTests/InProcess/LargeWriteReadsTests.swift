import Foundation
@testable import HearthEngine
import HearthModel
@testable import HearthServer
import Testing

/// Over a local store, a write of `Engine.readFirstWrites` documents or more reads what the loop does not hold on
/// a reader first (`Engine.readsFirst`), as every write does over a store across the network: a post fanned out
/// to 1,000 feeds no longer holds the loop for the 1,000 point reads of documents that do not exist yet. A
/// smaller write still reads on the loop, where a point read costs less than the hop.
@Suite struct LargeWriteReadsTests {
    func server() throws -> InProcessServer { try InProcessServer { $0.readers = 1 } }

    /// Writes `count` documents `c/d<i>` holding `v: 1`, then empties the document cache.
    func seed(_ s: InProcessServer, _ count: Int) {
        let w = s.connect()
        for i in 0..<count { w.write([#"{"op":"set","path":"c/d\#(i)","data":{"v":1}}"#]) }
        s.flush()
        #expect(w.take().allSatisfy { $0["ok"] as? Bool == true })
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
    }

    func commit(_ writes: [String], id: Int) -> String {
        #"{"op":"commit","writes":[\#(writes.joined(separator: ","))],"id":\#(id)}"#
    }

    func updates(_ range: Range<Int>) -> [String] {
        range.map { #"{"op":"update","path":"c/d\#($0)","data":{"w":2}}"# }
    }

    @Test func aLargeWriteReadsOnAReaderAndTheLoopReadsNothing() throws {
        let s = try server()
        seed(s, 20)
        let c = s.connect()
        let n = Engine.readFirstWrites
        // The first commit creates new documents and one the seed holds (uncached): its ALREADY_EXISTS can only
        // come from what the reader read. The second updates the seeded documents and creates new ones.
        let refused = (0..<(n - 1)).map { #"{"op":"create","path":"c/n\#($0)","data":{}}"# } + [#"{"op":"create","path":"c/d3","data":{}}"#]
        let creates = (20..<n).map { #"{"op":"create","path":"c/d\#($0)","data":{"new":true}}"# }
        let before = s.engine.gate.storeReads
        c.write([commit(refused, id: 1), commit(updates(0..<20) + creates, id: 2), #"{"op":"ping","id":3}"#])
        #expect(s.server.readsInFlight == 1, "the first commit's reads")
        #expect(!c.reading, "the connection's next lines wait")
        s.flush()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(lines[0].errorCode == "ALREADY_EXISTS", "\(lines[0])")
        #expect(lines[1]["ok"] as? Bool == true, "\(lines[1])")
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
        #expect(try s.engine.get(DocumentPath(parsing: "c/n0")) == nil, "the refused commit wrote nothing")
        let updated = try #require(try s.engine.get(DocumentPath(parsing: "c/d7")))
        let fields = try s.engine.fields(of: updated)
        #expect(fields["v"] == .int(1) && fields["w"] == .int(2))
        #expect(updated.createTime < updated.updateTime, "an update keeps the create time it read")
        let created = try #require(try s.engine.get(DocumentPath(parsing: "c/d\(n - 1)")))
        #expect(try s.engine.fields(of: created)["new"] == .bool(true))
    }

    @Test func aSmallerWriteStillReadsOnTheLoop() throws {
        let s = try server()
        let n = Engine.readFirstWrites
        seed(s, n - 1)
        let c = s.connect()
        let before = s.engine.gate.storeReads
        c.write([commit(updates(0..<(n - 1)), id: 1)])
        #expect(s.server.readsInFlight == 0)
        s.flush()
        #expect(c.take().first?["ok"] as? Bool == true)
        #expect(s.engine.gate.storeReads == before + UInt64(n - 1))
    }

    /// A commit published after the reader's snapshot changed a document the large write read: what the reader
    /// read of it is not trusted, and the write sees the newer version, read again on the loop (the store being
    /// local) once the cache no longer holds it.
    @Test func aDocumentChangedAfterTheReadIsNotTrusted() throws {
        let s = try server()
        let n = Engine.readFirstWrites
        seed(s, n)
        let a = s.connect(), b = s.connect()
        let gate = ListenOffLoopTests.ReaderGate(s)
        let increments = (0..<n).map { #"{"op":"update","path":"c/d\#($0)","data":{"v":{"$increment":10}}}"# }
        a.write([commit(increments, id: 1)])
        #expect(s.server.readsInFlight == 1, "read on a reader")
        gate.release()
        gate.waitForQueuedReads(s)            // the reader read every c/d<i> at the seeded seq
        b.write([#"{"op":"update","path":"c/d0","data":{"v":{"$increment":100}},"id":2}"#])
        ListenOffLoopTests().publishAll(s)     // b's increment is published before the read comes back
        #expect(b.take().first?["ok"] as? Bool == true)
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        let before = s.engine.gate.storeReads
        s.flush()
        #expect(s.engine.gate.storeReads == before + 1, "c/d0 read again, on the loop")
        #expect(a.take().first?["ok"] as? Bool == true)
        let d0 = try #require(try s.engine.get(DocumentPath(parsing: "c/d0")))
        let d1 = try #require(try s.engine.get(DocumentPath(parsing: "c/d1")))
        #expect(try s.engine.fields(of: d0)["v"] == .int(111), "both increments")
        #expect(try s.engine.fields(of: d1)["v"] == .int(11))
    }

    /// A commit durable in the store but not yet published when the reader reads: the large write sees it
    /// (pending, in the overlay) whichever version the reader found, and waits for its publication.
    @Test func aCommitLandedButNotPublishedIsSeen() throws {
        let s = try server()
        let n = Engine.readFirstWrites
        seed(s, n)
        let a = s.connect(), b = s.connect()
        b.write([#"{"op":"update","path":"c/d0","data":{"v":{"$increment":100}},"id":2}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)                          // durable: a reader's snapshot holds it
        let increments = (0..<n).map { #"{"op":"update","path":"c/d\#($0)","data":{"v":{"$increment":10}}}"# }
        a.write([commit(increments, id: 1)])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        #expect(s.engine.lastDurableSeq == batch.records.last!.seq - 1, "not yet published")
        s.publish(batch)
        #expect(b.take().first?["ok"] as? Bool == true)
        s.flush()
        #expect(a.take().first?["ok"] as? Bool == true)
        let d0 = try #require(try s.engine.get(DocumentPath(parsing: "c/d0")))
        #expect(try s.engine.fields(of: d0)["v"] == .int(111), "both increments")
    }

    /// A large write with a request ID reads it on a reader too: a retry of a durable one is answered with its
    /// commit's answer and not applied again.
    @Test func aRetriedLargeWriteIsFoundOnAReader() throws {
        let s = try server()
        let n = Engine.readFirstWrites
        seed(s, n)
        let c = s.connect()
        let increments = (0..<n).map { #"{"op":"update","path":"c/d\#($0)","data":{"v":{"$increment":10}}}"# }
        let line = #"{"op":"commit","writes":[\#(increments.joined(separator: ","))],"requestId":"big-1","id":1}"#
        c.write([line])
        s.flush()
        let first = try #require(c.take().first)
        #expect(first["ok"] as? Bool == true)
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        let before = s.engine.gate.storeReads
        c.write([line])
        #expect(s.server.readsInFlight == 1)
        s.flush()
        let again = try #require(c.take().first)
        #expect(again["duplicate"] as? Bool == true && again["seq"] as? Int == first["seq"] as? Int, "\(again)")
        #expect(s.engine.gate.storeReads == before)
        let d0 = try #require(try s.engine.get(DocumentPath(parsing: "c/d0")))
        #expect(try s.engine.fields(of: d0)["v"] == .int(11), "applied once")
    }
}
