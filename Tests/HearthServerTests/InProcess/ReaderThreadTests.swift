import Foundation
import HearthTesting
@testable import HearthEngine
@testable import HearthServer
import Testing

/// Reads that may be large (queries that are not small exact reads, counts, aggregations, large getAll)
/// run on reader threads against a snapshot of the store: the loop never waits for them, the connection's
/// later lines wait for their response, and the response goes out once the snapshot's seq is published.
@Suite struct ReaderThreadTests {
    func fill(_ s: InProcessServer, _ n: Int, data: (Int) -> String = { #"{"n":\#($0)}"# }) {
        let w = s.connect()
        var writes: [String] = []
        for i in 0..<n { writes.append(#"{"op":"set","path":"c/d\#(String(format: "%04d", i))","data":\#(data(i))}"#) }
        for chunk in stride(from: 0, to: writes.count, by: 500) {
            let part = writes[chunk..<min(chunk + 500, writes.count)]
            w.write([#"{"op":"commit","writes":["# + part.joined(separator: ",") + "]}"])
        }
        s.flush()
        #expect(w.take().allSatisfy { $0["ok"] as? Bool == true })
    }

    @Test func aLargeReadRunsOnAReaderAndTheLinesAfterItWait() throws {
        let s = try InProcessServer()
        fill(s, 300)
        let r = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#,
                 #"{"op":"count","collection":"c","id":2}"#,
                 #"{"op":"get","path":"c/d0001","id":3}"#,
                 #"{"op":"ping","id":4}"#])
        #expect(s.server.readsInFlight == 1)        // the query is on a reader; everything after it waits
        #expect(!r.reading)
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3, 4])
        #expect((lines[0]["docs"] as? [Any])?.count == 300)
        #expect(lines[1]["count"] as? Int == 300)
        #expect(lines[0]["seq"] as? Int == 1 && lines[1]["seq"] as? Int == 1)
        #expect(r.reading)
    }

    /// A read in flight alone leaves the connection reading (a client waiting for its answer costs no pause and
    /// resume); the lines that come meanwhile park behind the read, not run (a write among them would land in
    /// the read's snapshot), and reading pauses until they have run. So does the start of a line not yet
    /// finished: it stays in the framer, counted in the input budget.
    @Test func aReadInFlightAloneKeepsReadingAndALineBehindItPausesIt() throws {
        let s = try InProcessServer()
        fill(s, 300)
        let r = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#])
        #expect(s.server.readsInFlight == 1)
        #expect(r.reading, "nothing waits behind the read")
        r.write([#"{"op":"set","path":"c/zz","data":{"n":-1},"id":2}"#, #"{"op":"ping","id":3}"#])
        #expect(!r.reading, "lines behind the read park, and reading pauses")
        #expect(s.engine.pendingCommitCount == 0 && s.takeBatch() == nil, "the set has not run")
        #expect(r.take().isEmpty)
        s.flush()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3])
        #expect((lines[0]["docs"] as? [Any])?.count == 300, "the query does not see the set behind it")
        #expect(r.reading)

        // A line only begun while a read runs pauses reading; once the read is answered it resumes.
        r.write([#"{"op":"count","collection":"c","id":4}"#])
        #expect(r.reading && s.server.readsInFlight == 1)
        r.writeRaw(#"{"op":"ping","#)
        #expect(!r.reading, "an unfinished line behind a read pauses reading")
        s.settle()
        #expect(r.take().map { $0["count"] as? Int } == [301])
        #expect(r.reading)
        r.writeRaw(#""id":5}"# + "\n")
        #expect(r.take().map { $0["id"] as? Int } == [5])

        // The client finishes sending while a read is in flight: the answer still comes, then the close.
        r.write([#"{"op":"count","collection":"c","id":6}"#])
        #expect(r.reading && s.server.readsInFlight == 1)
        r.endInput()
        #expect(!r.isClosed, "the count is still to be answered")
        s.settle()
        #expect(r.take().map { $0["count"] as? Int } == [301])
        #expect(r.isClosed)
    }

    /// A reader whose snapshot holds a batch that landed after the read was admitted (not yet published)
    /// keeps its response until that batch is published, so it never carries a seq ahead of the listeners.
    @Test func aReadOfAnUnpublishedBatchWaitsForItsPublication() throws {
        let s = try InProcessServer()
        fill(s, 10)
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/new","data":{"n":99}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch, flag: false)            // in the store; the loop has not heard of it
        r.write([#"{"op":"count","collection":"c","id":"n"}"#])
        s.settle()
        #expect(r.take().isEmpty)
        #expect(s.engine.gate.waiterCount == 1)
        batch.markLanded()
        s.publish(batch)
        let answer = try #require(r.take().first)
        #expect(answer["count"] as? Int == 11 && answer["seq"] as? Int == 2)
    }

    @Test func aReadAdmittedWhileABatchIsInFlightReadsThePublishedState() throws {
        let s = try InProcessServer()
        fill(s, 10)
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"delete","path":"c/d0000"}"#])
        let batch = try #require(s.takeBatch())   // being made durable, not in the store yet
        r.write([#"{"op":"count","collection":"c","id":"n"}"#, #"{"op":"aggregate","query":{"collection":"c"},"aggregations":{"s":{"sum":"n"}},"id":"a"}"#])
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? String } == ["n", "a"])
        #expect(lines[0]["count"] as? Int == 10 && lines[0]["seq"] as? Int == 1)
        #expect((lines[1]["result"] as? [String: Any])?["s"] as? Int == 45)
        s.land(batch)
        s.publish(batch)
    }

    @Test func manyPathsOfAGetAllAreReadFromOneSnapshotOnAReader() throws {
        let s = try InProcessServer()
        fill(s, 100)
        let r = s.connect()
        let paths = (0..<120).map { #""c/d\#(String(format: "%04d", $0))""# }
        r.write([#"{"op":"getAll","paths":[\#(paths.joined(separator: ","))],"id":1}"#])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        let docs = try #require(r.take().first?["docs"] as? [Any])
        #expect(docs.count == 120)
        #expect(docs.prefix(100).allSatisfy { $0 is [String: Any] } && docs.suffix(20).allSatisfy { $0 is NSNull })
    }

    @Test func aResponseOverTheLimitIsRefusedAndTheConnectionCarriesOn() throws {
        let s = try InProcessServer { $0.maxResponseBytes = 65536 }
        let padding = String(repeating: "x", count: 400)
        fill(s, 300) { #"{"n":\#($0),"pad":"\#(padding)"}"# }
        let r = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#, #"{"op":"query","collection":"c","limit":5,"id":2}"#])
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2])
        #expect(lines[0].errorCode == "RESOURCE_EXHAUSTED")
        #expect(lines[0].errorMessage?.contains("65536") == true && lines[0].errorMessage?.contains("startAfter") == true)
        #expect((lines[1]["docs"] as? [Any])?.count == 5)
    }

    @Test func aConnectionClosedWhileItsReadRunsIsForgotten() throws {
        let s = try InProcessServer()
        fill(s, 50)
        let r = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#])
        r.close()
        s.settle()
        #expect(r.take().isEmpty)
        let again = s.connect()
        again.write([#"{"op":"count","collection":"c","id":2}"#])
        s.settle()
        #expect(again.take().first?["count"] as? Int == 50)
    }
}
