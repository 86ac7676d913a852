import Foundation
@testable import HearthEngine
@testable import HearthServer
import HearthModel
import Testing

/// Session, Dispatcher, ResponseQueue and the snapshot gate without a socket: requests pipelined in one write
/// on fake connections, the group commit stepped by hand so each window (batch queued, in flight, landed,
/// published) is hit on purpose.
@Suite struct PipelinedOrderingTests {
    func changes(_ e: [String: Any]) -> [String] {
        (e["changes"] as? [[String: Any]] ?? []).map {
            let doc = $0["doc"] as? [String: Any] ?? [:]
            return "\($0["type"] ?? "?") \(doc["path"] ?? "?") \($0["oldIndex"] ?? "?")>\($0["newIndex"] ?? "?")"
        }
    }

    func responses(_ lines: [[String: Any]]) -> [[String: Any]] { lines.filter { $0["ok"] != nil } }
    func events(_ lines: [[String: Any]], sub: String = "1") -> [[String: Any]] {
        lines.filter { $0["ok"] == nil && ($0["sub"] as? String) == sub }
    }

    /// Connection A writes `c/x` and listens to `c` in one write; with B already listening to the same query
    /// (a shared view) A's first snapshot used to be the state before its own write, carrying the new seq.
    @Test(arguments: [false, true])
    func aListenPipelinedBehindAWriteSeesTheWrite(shared: Bool) throws {
        let s = try InProcessServer()
        let b = s.connect()
        if shared { b.write([#"{"op":"listen","query":{"collection":"c"},"id":"b"}"#]) }
        let a = s.connect()
        a.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#, #"{"op":"listen","query":{"collection":"c"},"id":2}"#])
        s.flush()
        let lines = a.take()
        let r = responses(lines)
        #expect(r.map { $0["id"] as? Int } == [1, 2])
        #expect(r.first?["seq"] as? Int == 1)
        let first = try #require(events(lines).first)
        #expect(first["seq"] as? Int == 1)
        #expect(first["initial"] as? Bool == true)
        #expect(first["size"] as? Int == 1)
        #expect(changes(first) == ["added c/x -1>0"])
        // The next write of c/x is a modification of the document A holds.
        a.write([#"{"op":"set","path":"c/x","data":{"v":2},"id":3}"#])
        s.flush()
        let next = events(a.take())
        #expect(next.count == 1)
        #expect(next.first.map(changes) == ["modified c/x 0>0"])
        if shared {
            let bEvents = events(b.take())
            #expect(bEvents.map(changes) == [[], ["added c/x -1>0"], ["modified c/x 0>0"]])
        }
    }

    /// A client that pipelines requests without reading their answers holds about one answer past
    /// `--output-high-water`, not one per line it sent: the lines after it park until the output drains, then
    /// run in order. (One read can carry thousands of lines; before, each ran and its answer was buffered.)
    @Test func pipelinedLinesWaitWhileTheOutputIsBacklogged() throws {
        let s = try InProcessServer { $0.outputHighWater = 4096 }
        let c = s.connect()
        let big = String(repeating: "x", count: 10_000)
        c.write([#"{"op":"set","path":"c/a","data":{"s":"\#(big)"},"id":0}"#])
        s.flush()
        #expect(responses(c.take()).map { $0["id"] as? Int } == [0])
        c.holdsOutput = true
        c.write((1...20).map { #"{"op":"get","path":"c/a","id":\#($0)}"# } + [#"{"op":"ping","id":21}"#])
        s.flush()
        #expect(responses(c.take()).map { $0["id"] as? Int } == [1], "one answer past the mark, the rest waits")
        #expect(!c.reading)
        for next in 2...21 {
            c.drainHeld()
            s.flush()
            let answered = responses(c.take())
            #expect(answered.map { $0["id"] as? Int } == [next])
            #expect(answered.first?["ok"] as? Bool == true)
        }
        c.drainHeld()
        #expect(c.reading, "reading resumes once nothing is parked and the output drained")
        // Lines that arrive while the output is backlogged wait the same way.
        c.write([#"{"op":"get","path":"c/a","id":22}"#, #"{"op":"get","path":"c/a","id":23}"#])
        s.flush()
        #expect(responses(c.take()).map { $0["id"] as? Int } == [22])
        c.drainHeld()
        s.flush()
        #expect(responses(c.take()).map { $0["id"] as? Int } == [23])
    }

    /// A write's answer is expedited (written ahead of connections holding only the publication's pushed
    /// lines), once it and the writer's own listener lines are in its buffer; subscribers are not.
    @Test func aWritesAnswerIsExpeditedAfterItsOwnListenerLines() throws {
        let s = try InProcessServer()
        let subscriber = s.connect()
        subscriber.write([#"{"op":"listen","query":{"collection":"c"},"id":"s"}"#])
        let writer = s.connect()
        writer.write([#"{"op":"listen","query":{"collection":"c"},"id":"w"}"#])
        s.settle()
        _ = writer.take()
        _ = subscriber.take()
        // Their listen answers were expedited too (every answer is).
        let writerBefore = writer.expeditedAt.count
        let subscriberBefore = subscriber.expeditedAt
        #expect(writerBefore == 1 && subscriberBefore.count == 1)
        writer.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#, #"{"op":"set","path":"c/y","data":{"v":1},"id":2}"#])
        s.flush()
        let lines = writer.take()
        // The group's events, then its answers; expedited after each answer, with nothing after the last.
        let kinds: [String] = lines.map { $0["ok"] != nil ? "answer \($0["id"] ?? "?")" : "event \($0["seq"] ?? "?")" }
        #expect(kinds == ["event 1", "event 2", "answer 1", "answer 2"])
        // Where each answer's line ends in the writer's output (the last four lines are the group's).
        let ends: [Int] = writer.output.indices.filter { writer.output[$0] == 10 }.map { $0 + 1 }
        let answerEnds: [Int] = Array(ends.suffix(2))
        let expedited = Array(writer.expeditedAt.dropFirst(writerBefore))
        #expect(expedited == answerEnds, "expedited at \(expedited), answers end at \(answerEnds)")
        #expect(subscriber.expeditedAt == subscriberBefore, "pushed lines are not expedited")
        #expect(events(subscriber.take(), sub: "1").count == 2)
    }

    /// Every answer is expedited once it is in the buffer, a read's as a write's: a flush pass writes a
    /// publication's pushed lines 128 connections at a time, and an answer must not wait behind them.
    @Test func everyAnswerIsExpedited() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"v":1},"id":1}"#])
        s.flush()
        _ = c.take()
        let before = c.expeditedAt.count
        c.write([#"{"op":"get","path":"c/a","id":2}"#, #"{"op":"ping","id":3}"#,
                 #"{"op":"query","query":{"collection":"c"},"id":4}"#, #"{"op":"get","path":"c//a","id":5}"#])
        s.settle()
        let answers = c.take()
        #expect(answers.map { $0["id"] as? Int } == [2, 3, 4, 5])
        #expect(answers.last?["ok"] as? Bool == false, "an error is an answer too")
        let ends: [Int] = c.output.indices.filter { c.output[$0] == 10 }.map { $0 + 1 }
        #expect(Array(c.expeditedAt.dropFirst(before)) == Array(ends.suffix(4)), "expedited after each answer")
    }

    /// The loop's flush passes are bounded (a write read between them is committed next) only while the last
    /// batch taken is one small commit (`Server.boundsFlushPasses(after:)`): not for several commits, nor for
    /// one changing more than `smallCommitDocuments` documents.
    @Test func flushPassesAreBoundedOnlyWhileTheLastBatchIsOneSmallCommit() throws {
        let s = try InProcessServer()
        let loop = s.server.loop
        let a = s.connect(), b = s.connect()
        func land(_ c: FakeConnection, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
            for _ in 0..<10_000 {
                let got = c.take()
                if !got.isEmpty { return got }
                _ = loop.runOnce()
            }
            Issue.record("no answer", sourceLocation: sourceLocation)
            return []
        }
        func commitOf(_ documents: Int, id: Int) -> String {
            let writes = (0..<documents).map { #"{"op":"set","path":"c/w\#($0)","data":{"v":\#(id)}}"# }
            return #"{"op":"commit","writes":[\#(writes.joined(separator: ","))],"id":\#(id)}"#
        }
        func take(_ lines: [(FakeConnection, String)]) {
            for (c, line) in lines { c.write([line]) }
            s.settle()   // reads a write needs come back first; then it is queued
            s.server.startGroupCommit()
        }
        take([(a, #"{"op":"set","path":"c/a","data":{"v":1},"id":1}"#), (b, #"{"op":"set","path":"c/b","data":{"v":1},"id":2}"#)])
        #expect(!loop.boundsFlushPasses, "a batch of two commits")
        #expect(land(a).first?["ok"] as? Bool == true)
        #expect(b.take().first?["ok"] as? Bool == true)
        #expect(!loop.boundsFlushPasses, "its publication is written unbounded too")
        take([(a, #"{"op":"set","path":"c/a","data":{"v":2},"id":3}"#)])
        #expect(loop.boundsFlushPasses, "one commit of one document")
        #expect(land(a).first?["ok"] as? Bool == true)
        #expect(loop.boundsFlushPasses, "its publication is written in bounded passes")
        take([(a, commitOf(Server.smallCommitDocuments + 1, id: 4))])
        #expect(!loop.boundsFlushPasses, "one commit of \(Server.smallCommitDocuments + 1) documents")
        #expect(land(a).first?["ok"] as? Bool == true)
        take([(a, commitOf(Server.smallCommitDocuments, id: 5))])
        #expect(loop.boundsFlushPasses, "one commit of \(Server.smallCommitDocuments) documents")
        #expect(land(a).first?["ok"] as? Bool == true)
    }

    /// A delete then a listen in one write: the deleted document is not in the first snapshot.
    @Test(arguments: [false, true])
    func aListenPipelinedBehindADeleteDoesNotSeeTheDocument(shared: Bool) throws {
        let s = try InProcessServer()
        let setup = s.connect()
        setup.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#, #"{"op":"set","path":"c/y","data":{"v":2}}"#])
        s.flush()
        let b = s.connect()
        if shared { b.write([#"{"op":"listen","query":{"collection":"c"}}"#]) }
        let a = s.connect()
        a.write([#"{"op":"delete","path":"c/x","id":1}"#, #"{"op":"listen","query":{"collection":"c"},"id":2}"#])
        s.flush()
        let first = try #require(events(a.take()).first)
        #expect(first["seq"] as? Int == 3)
        #expect(changes(first) == ["added c/y -1>0"])
        if shared { #expect(events(b.take()).map(changes) == [["added c/x -1>0", "added c/y -1>1"], ["removed c/x 0>-1"]]) }
    }

    /// A listen and its unlisten in one write (the subscription id is predictable): nothing for it follows
    /// the unlisten's response, and a shared view's other member carries on.
    @Test(arguments: [false, true])
    func aListenAndItsUnlistenInOneWrite(shared: Bool) throws {
        let s = try InProcessServer()
        let b = s.connect()
        if shared { b.write([#"{"op":"listen","query":{"collection":"c"}}"#]) }
        let a = s.connect()
        a.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#,
                 #"{"op":"listen","query":{"collection":"c"},"id":2}"#,
                 #"{"op":"unlisten","sub":"1","id":3}"#,
                 #"{"op":"set","path":"c/y","data":{"v":1},"id":4}"#])
        s.flush()
        s.flush()
        let lines = a.take()
        #expect(responses(lines).map { $0["id"] as? Int } == [1, 2, 3, 4])
        let unlistenAt = try #require(lines.firstIndex { $0["id"] as? Int == 3 })
        let eventAt = lines.indices.filter { lines[$0]["ok"] == nil }
        #expect(eventAt.count == 1 && eventAt.allSatisfy { $0 < unlistenAt })
        #expect(s.engine.listeners.count == (shared ? 1 : 0))
        if shared { #expect(events(b.take()).map(changes) == [[], ["added c/x -1>0"], ["added c/y -1>1"]]) }
    }

    /// Reads and writes pipelined on one connection answer in request order, each read seeing every write
    /// before it.
    @Test func responsesLeaveInRequestOrderAndReadsSeeEarlierWrites() throws {
        let s = try InProcessServer()
        let a = s.connect()
        a.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#,
                 #"{"op":"get","path":"c/x","id":2}"#,
                 #"{"op":"set","path":"c/x","data":{"v":2},"id":3}"#,
                 #"{"op":"ping","id":4}"#,
                 #"{"op":"query","collection":"c","id":5}"#,
                 #"{"op":"count","collection":"c","id":6}"#])
        #expect(a.take().isEmpty)           // nothing can be answered before the first write is durable
        #expect(!a.reading)                 // reading pauses while lines are parked
        s.flush()
        s.flush()
        let r = a.take()
        #expect(r.map { $0["id"] as? Int } == [1, 2, 3, 4, 5, 6])
        let got = (r[1]["doc"] as? [String: Any])?["data"] as? [String: Any]
        #expect(got?["v"] as? Int == 1)
        let docs = r[4]["docs"] as? [[String: Any]] ?? []
        #expect((docs.first?["data"] as? [String: Any])?["v"] as? Int == 2)
        #expect(r[4]["seq"] as? Int == 2)
        #expect(a.reading)
    }

    /// While a batch is in flight and not landed, reads (a query on a reader thread, a get) run at once at the
    /// published seq; once it has landed (flag seen) a read on a reader runs on a snapshot that holds it, and
    /// its answer waits for its publication (the connection's later lines behind it).
    @Test func readsRunDuringAnFsyncAndWaitOnceTheBatchHasLanded() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#])
        s.flush()
        w.write([#"{"op":"set","path":"c/x","data":{"v":2}}"#])
        let batch = try #require(s.takeBatch())
        r.write([#"{"op":"query","collection":"c","limit":10,"id":"q1"}"#, #"{"op":"get","path":"c/x","id":"g1"}"#])
        s.settle()
        let during = r.take()
        #expect(during.map { $0["id"] as? String } == ["q1", "g1"])
        #expect(during.first?["seq"] as? Int == 1)
        s.land(batch)
        r.write([#"{"op":"query","collection":"c","limit":10,"id":"q2"}"#, #"{"op":"listen","path":"c/x","id":"l"}"#])
        s.settle()
        #expect(r.take().isEmpty)
        #expect(s.engine.gate.waiterCount == 1)
        s.publish(batch)
        s.settle()
        let after = r.take()
        #expect(after.compactMap { $0["id"] as? String } == ["q2", "l"])
        #expect(after.first?["seq"] as? Int == 2)
        let snapshot = try #require(after.last)
        #expect(snapshot["seq"] as? Int == 2)
        #expect(((snapshot["doc"] as? [String: Any])?["data"] as? [String: Any])?["v"] as? Int == 2)
    }

    /// A listen admitted while the batch reached the store (before the writer flagged it) reads its first
    /// snapshot on a reader, which may hold that batch: it registers only once the batch is published, at its
    /// seq. A query dispatched meanwhile is answered after that publication too.
    @Test func aListenAdmittedWhileABatchLandsRegistersAfterThePublication() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect(), l = s.connect(), q = s.connect()
        w.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#])
        s.flush()
        l.write([#"{"op":"listen","query":{"collection":"c","where":[["v",">",0]]}}"#])
        s.settle()
        _ = l.take()
        w.write([#"{"op":"delete","path":"c/x"}"#, #"{"op":"set","path":"c/y","data":{"v":3}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch, flag: false)
        let retriesBefore = s.engine.gate.retries
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":"l"}"#])
        #expect(r.take().isEmpty)
        #expect(s.engine.gate.retries == retriesBefore)      // nothing was read on the loop
        #expect(s.engine.listeners.count == 1 && s.engine.listeners.pending.count == 1)
        q.write([#"{"op":"query","collection":"c","limit":10,"id":"q"}"#])
        s.settle()
        #expect(q.take().isEmpty)
        batch.markLanded()
        s.publish(batch)
        s.settle()
        let lines = r.take()
        #expect(lines.compactMap { $0["id"] as? String } == ["l"])
        #expect(lines.last?["seq"] as? Int == 3)
        #expect(lines.last.map(changes) == ["added c/y -1>0"])
        let answers = q.take()
        #expect(answers.compactMap { $0["id"] as? String } == ["q"])
        #expect(answers.first?["seq"] as? Int == 3)
        #expect((answers.first?["docs"] as? [[String: Any]])?.map { $0["path"] as? String } == ["c/y"])
        #expect(events(l.take()).map(changes) == [["removed c/x 0>-1"], ["added c/y -1>0"]])
    }

    /// A failed batch fails its commits and everything queued behind it; reads parked behind those writes
    /// run afterwards and see the state before them.
    @Test func readsParkedBehindAFailedBatchRunAfterIt() throws {
        let s = try InProcessServer()
        let a = s.connect()
        a.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"#, #"{"op":"get","path":"c/x","id":2}"#])
        let batch = try #require(s.takeBatch())
        s.publish(batch, error: .init(.unavailable, "disk gone"))
        s.settle()
        let r = a.take()
        #expect(r.map { $0["id"] as? Int } == [1, 2])
        #expect(r.first?["ok"] as? Bool == false)
        #expect(r.last?["ok"] as? Bool == true)
        #expect(r.last?["doc"] is NSNull)
    }

    /// A shutdown that begins while a read runs on a reader thread answers it before it closes the connection,
    /// as it does for a commit it had accepted.
    @Test func aShutdownAnswersTheReadsItAccepted() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#])
        s.flush()
        r.write([#"{"op":"query","collection":"c","id":"q"}"#])
        #expect(s.server.readsInFlight == 1)
        s.server.beginShutdown(reason: "test")
        #expect(!r.closed)                 // still owed an answer
        s.settle()
        let answers = r.take()
        #expect(answers.compactMap { $0["id"] as? String } == ["q"])
        #expect((answers.first?["docs"] as? [[String: Any]])?.count == 1)
        #expect(r.closed)                  // then the shutdown went on
    }

    /// A connection that closes while parked is forgotten by the gate. (Its get runs at once, on a reader
    /// whose snapshot holds the landed batch, and the answer waits for the batch's publication.)
    @Test func aClosedConnectionIsForgottenByTheGate() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)
        r.write([#"{"op":"get","path":"c/x","id":1}"#])
        s.settle()
        #expect(s.engine.gate.waiterCount == 1)
        r.close()
        #expect(s.engine.gate.waiterCount == 0)
        s.publish(batch)
        #expect(r.take().isEmpty)
    }
}
