import Foundation
import HearthModel
@testable import HearthServer
import Testing

/// The session once its client has finished sending, stepped by hand: it stays open while anything the client
/// asked is unanswered (a write in flight, a read parked behind it, a read on a reader thread), answers it all
/// in order, and closes right after the last answer.
@Suite struct EndOfInputTests {
    @Test func theSessionClosesAfterItsLastAnswerNotAtTheEndOfInput() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#,
                 #"{"op":"query","collection":"c","id":2}"#,
                 #"{"op":"ping","id":3}"#])
        c.endInput()
        #expect(!c.isClosed, "the write is not durable yet")
        let batch = try #require(s.takeBatch())
        s.land(batch)
        #expect(!c.isClosed, "landed, not yet published")
        s.publish(batch)
        s.settle()   // the query, parked behind the write, runs on a reader thread and comes back
        let answers = c.take()
        #expect(answers.map { $0["id"] as? Int } == [1, 2, 3])
        #expect((answers[1]["docs"] as? [[String: Any]])?.count == 1)
        #expect(c.isClosed, "closed once the last answer went out")
    }

    @Test func withNothingToAnswerTheSessionClosesAtOnce() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"ping","id":1}"#])
        #expect(c.take().map { $0["id"] as? Int } == [1])
        c.endInput()
        #expect(c.isClosed)
    }

    /// A failed write is an answer too: the session closes after the error goes out.
    @Test func aFailedWriteIsAnsweredBeforeTheClose() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#])
        c.endInput()
        let batch = try #require(s.takeBatch())
        s.publish(batch, error: HearthError(.unavailable, "storage: the disk went away"))
        let answers = c.take()
        #expect(answers.map { $0["id"] as? Int } == [1])
        #expect((answers.first?["error"] as? [String: Any])?["code"] as? String == "UNAVAILABLE")
        #expect(c.isClosed)
    }
}
