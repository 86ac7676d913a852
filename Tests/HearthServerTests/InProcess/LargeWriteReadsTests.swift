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
        // 20 existing documents updated, the rest created; one more create of an existing document refuses the
        // second commit, which the reader's read must have found.
        let creates = (20..<n).map { #"{"op":"create","path":"c/d\#($0)","data":{"new":true}}"# }
        let before = s.engine.gate.storeReads
        c.write([commit(updates(0..<20) + creates, id: 1),
                 commit(updates(0..<(n - 1)) + [#"{"op":"create","path":"c/d3","data":{}}"#], id: 2),
                 #"{"op":"ping","id":3}"#])
        #expect(s.server.readsInFlight == 1, "the first commit's reads")
        #expect(!c.reading, "the connection's next lines wait")
        s.flush()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(lines[0]["ok"] as? Bool == true, "\(lines[0])")
        #expect(lines[1].errorCode == "ALREADY_EXISTS", "\(lines[1])")
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
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
    /// read of it is not trusted, and the write sees the newer version (read on the loop, the store being local).
    @Test func aDocumentChangedAfterTheReadIsNotTrusted() throws {
        let s = try server()
        let n = Engine.readFirstWrites
        seed(s, n)
        let a = s.connect(), b = s.connect()
        let gate = ListenOffLoopTests.ReaderGate(s)
        let increments = (0..<n).map { #"{"op":"update","path":"c/d\#($0)","data":{"v":{"$increment":10}}}"# }
        a.write([commit(increments, id: 1)])
        gate.release()
        gate.waitForQueuedReads(s)            // the reader read every c/d<i> at the seeded seq
        b.write([#"{"op":"update","path":"c/d0","data":{"v":{"$increment":100}},"id":2}"#])
        ListenOffLoopTests().publishAll(s)     // b's increment is published before the read comes back
        #expect(b.take().first?["ok"] as? Bool == true)
        let before = s.engine.gate.storeReads
        s.flush()
        #expect(a.take().first?["ok"] as? Bool == true)
        let d0 = try #require(try s.engine.get(DocumentPath(parsing: "c/d0")))
        let d1 = try #require(try s.engine.get(DocumentPath(parsing: "c/d1")))
        #expect(try s.engine.fields(of: d0)["v"] == .int(111), "both increments")
        #expect(try s.engine.fields(of: d1)["v"] == .int(11))
        #expect(s.engine.gate.storeReads == before, "c/d0 was cached by b's commit: nothing else is read on the loop")
    }
}
