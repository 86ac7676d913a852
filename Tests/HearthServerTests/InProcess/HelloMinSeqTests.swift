import Foundation
@testable import HearthEngine
@testable import HearthServer
import Testing

/// `hello {minSeq}`: a seq this node has published is answered at once; any other is checked against the
/// store on a reader thread (never on the loop), and answered once this node has published it, the lines
/// after it waiting; one beyond the database is FAILED_PRECONDITION.
@Suite struct HelloMinSeqTests {
    @Test func aPublishedMinSeqIsAnsweredAtOnce() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"n":1}}"#])
        s.flush()
        _ = c.take()
        c.write([#"{"op":"hello","minSeq":1,"id":"h"}"#])
        #expect(s.server.readsInFlight == 0)
        let answer = c.take()
        #expect(answer.first?["seq"] as? Int == 1 && answer.first?["id"] as? String == "h")
    }

    @Test func aMinSeqTheStoreHoldsIsAnsweredOnceItIsPublished() throws {
        let s = try InProcessServer()
        let w = s.connect(), c = s.connect()
        w.write([#"{"op":"set","path":"c/a","data":{"n":1}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch, flag: false)                 // the store has seq 1; this node has not published it
        c.write([#"{"op":"hello","minSeq":1,"id":"h"}"#, #"{"op":"ping","id":"p"}"#])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        #expect(c.take().isEmpty)                  // read at seq 1, held for its publication
        batch.markLanded()
        s.publish(batch)
        let lines = c.take()
        #expect(lines.map { $0["id"] as? String } == ["h", "p"])
        #expect(lines.first?["seq"] as? Int == 1 && lines.first?["history"] is String)
    }

    @Test func aMinSeqBeyondTheDatabaseIsRefusedAndTheConnectionCarriesOn() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"hello","minSeq":1000000,"id":"h"}"#, #"{"op":"ping","id":"p"}"#])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? String } == ["h", "p"])
        #expect(lines.first?.errorCode == "FAILED_PRECONDITION")
        #expect(lines.first?.errorMessage?.hasPrefix("hello: minSeq 1000000 is beyond the database's last seq 0") == true, "\(lines)")
    }
}
