import Foundation
import HearthTesting
@testable import HearthServer
import Testing

/// The limits with real sessions over fake connections (the sweep driven with explicit times), and with the
/// real daemon over TCP.
@Suite struct ConnectionLimitTests {
    @Test func aConnectionOverTheLimitGetsAnErrorLineAndIsClosed() throws {
        let s = try InProcessServer { $0.maxConnections = 2 }
        let a = s.connect(), b = s.connect(), c = s.connect()
        #expect(!a.closed && !b.closed && c.closed)
        let refusal = try #require(c.take().first)
        #expect(refusal.errorCode == "RESOURCE_EXHAUSTED" && refusal.errorMessage?.contains("--max-connections") == true)
        a.close()
        let d = s.connect()
        #expect(!d.closed)
        d.write([#"{"op":"ping","id":1}"#])
        #expect(d.take().first?["ok"] as? Bool == true)
    }

    @Test func unfinishedLinesPastTheInputBudgetCloseTheirConnectionAndOthersCarryOn() throws {
        let s = try InProcessServer { $0.inputBudget = 100_000 }
        let a = s.connect(), b = s.connect()
        a.writeRaw(#"{"op":"set","path":"c/a","data":{"s":""# + String(repeating: "x", count: 60_000))
        b.writeRaw(#"{"op":"set","path":"c/b","data":{"s":""# + String(repeating: "y", count: 60_000))
        #expect(!a.closed && b.closed)
        #expect(b.take().first?.errorMessage?.contains("--input-budget") == true)
        #expect(s.server.budget.inputBytes > 60_000 && s.server.budget.inputBytes < 100_000)
        a.writeRaw(#""}}"# + "\n")
        s.flush()
        #expect(a.take().first?["ok"] as? Bool == true)
        #expect(s.server.budget.inputBytes == 0)
        let c = s.connect()
        c.write([#"{"op":"get","path":"c/a","id":1}"#])
        s.settle()   // not cached: read on a reader thread
        #expect(c.take().first?["ok"] as? Bool == true)
    }

    @Test func theSweepClosesSlowLinesAndIdleConnectionsButNotSubscribers() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000; $0.idleTimeoutMs = 5000 }
        let slow = s.connect(), idle = s.connect(), subscriber = s.connect(), silent = s.connect()
        subscriber.write([#"{"op":"listen","path":"c/x"}"#])
        slow.writeRaw(#"{"op":"pi"#)
        let t0 = s.server.loop.now
        s.server.sweep(now: t0 + 999)
        #expect(!slow.closed)
        s.server.sweep(now: t0 + 1000)
        #expect(slow.closed && slow.take().first?.errorMessage?.contains("--line-timeout-ms") == true)
        #expect(!idle.closed)
        s.server.sweep(now: t0 + 5000)
        #expect(idle.closed && idle.take().first?.errorMessage?.contains("--idle-timeout-ms") == true)
        #expect(!subscriber.closed && silent.closed)
        #expect(s.server.budget.connections == 1)
    }

    /// Waits until the loop's millisecond clock has moved on (at most a millisecond), so that a time the
    /// session takes afterwards differs from every time taken before.
    func tick(_ s: InProcessServer) {
        let t = s.server.loop.now
        while s.server.loop.now == t { s.server.loop.updateTime() }
    }

    /// A connection that wrote `c/a`, a document larger than a 4 KiB high-water mark, and from now on reads
    /// none of its output.
    func connectWithLargeDocument(_ s: InProcessServer) -> FakeConnection {
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"s":"\#(String(repeating: "x", count: 10_000))"},"id":0}"#])
        s.flush()
        c.holdsOutput = true
        return c
    }

    /// Runs the readers until their answers are out (`settle`), and returns the loop times between which that
    /// happened, both later than any time taken before.
    func settleTimed(_ s: InProcessServer) -> (before: UInt64, after: UInt64) {
        tick(s)
        let before = s.server.loop.now
        s.settle()
        return (before, s.server.loop.now)
    }

    /// While the daemon owes a connection an answer (here a query on a reader), reading pauses once a line
    /// begins behind it, so the client may be unable to finish that line: it is not timed. From the answer
    /// on, it has a whole window.
    @Test func aLineBegunBehindARunningReadIsTimedFromItsAnswer() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000 }
        ReaderThreadTests().fill(s, 300)
        let r = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#])
        #expect(s.server.readsInFlight == 1)
        r.writeRaw(#"{"op":"ping","#)
        #expect(!r.reading, "an unfinished line behind a read pauses reading")
        s.server.sweep(now: s.server.loop.now + 60_000)
        #expect(!r.closed, "the daemon owes the connection an answer")
        let answered = settleTimed(s)
        #expect(r.take().map { $0["id"] as? Int } == [1])
        s.server.sweep(now: answered.before + 999)
        #expect(!r.closed, "a whole window from the answer")
        s.server.sweep(now: answered.after + 1000)
        #expect(r.closed && r.take().first?.errorMessage?.contains("--line-timeout-ms") == true)
    }

    /// A line begun behind a write not yet durable and a read parked behind that write waits for the daemon:
    /// not timed until the write is published and the read has run, then a whole window.
    @Test func aLineBegunBehindAPendingWriteAndItsReadIsTimedOnceTheyAreAnswered() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000 }
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"n":1},"id":1}"#, #"{"op":"get","path":"c/a","id":2}"#])
        let batch = try #require(s.takeBatch())
        c.writeRaw(#"{"op":"ping","#)
        #expect(!c.reading, "the get is parked behind the write")
        s.server.sweep(now: s.server.loop.now + 60_000)
        #expect(!c.closed)
        tick(s)
        let beforeAnswer = s.server.loop.now
        s.land(batch)
        s.publish(batch)
        s.settle()
        #expect(c.take().map { $0["id"] as? Int } == [1, 2])
        #expect(c.reading)
        s.server.sweep(now: beforeAnswer + 999)
        #expect(!c.closed, "a whole window once reading resumed")
        s.server.sweep(now: s.server.loop.now + 1000)
        #expect(c.closed)
    }

    /// While reading is on, the client can finish its line: it is timed even while a write of its own waits
    /// to be durable (otherwise a line could be trickled for as long as a commit takes, or forever on a
    /// stalled node).
    @Test func aLineTrickledWhileAWriteIsPendingIsTimed() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000 }
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"n":1},"id":1}"#])
        _ = try #require(s.takeBatch())
        c.writeRaw(#"{"op":"ping","#)
        #expect(c.reading)
        s.server.sweep(now: s.server.loop.now + 1000)
        #expect(c.closed)
    }

    /// The daemon's hold on a line is credited exactly: when a long read's answer is large enough to leave
    /// reading paused behind the unread output, the line is timed again from its start moved by the hold,
    /// not from its first byte (which would close the client before it could read anything).
    @Test func aLineHeldByALongReadIsCreditedTheHoldWhenTheAnswerIsLarge() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000; $0.outputHighWater = 4096 }
        ReaderThreadTests().fill(s, 100, data: { _ in #"{"s":"\#(String(repeating: "x", count: 200))"}"# })
        let r = s.connect()
        r.holdsOutput = true
        r.write([#"{"op":"query","collection":"c","id":1}"#])
        r.writeRaw(#"{"op":"ping","#)
        #expect(!r.reading)
        let answered = settleTimed(s)
        #expect(r.take().map { $0["id"] as? Int } == [1])
        #expect(!r.reading, "the answer is over the high-water mark, unread")
        s.server.sweep(now: answered.before + 999)
        #expect(!r.closed, "the time the daemon held the line does not count")
        s.server.sweep(now: answered.after + 1000)
        #expect(r.closed, "the time behind unread output does")
    }

    /// A partial line behind output the client does not read is the client's doing: it is timed.
    @Test func aLineBehindUnreadOutputIsTimed() throws {
        let s = try InProcessServer { $0.lineTimeoutMs = 1000; $0.outputHighWater = 4096 }
        let c = connectWithLargeDocument(s)
        c.writeRaw(#"{"op":"get","path":"c/a","id":1}"# + "\n" + #"{"op":"ping","pad":""#)
        s.flush()
        #expect(!c.reading, "paused behind the unread answer")
        s.server.sweep(now: s.server.loop.now + 1000)
        #expect(c.closed)
    }

    /// A connection waiting for its own answer (a read on a reader, a write not yet durable) sent nothing
    /// because it waits for the daemon: it is not idle. Its idle time counts from the answer.
    @Test func aConnectionWaitingForItsReadOrItsWriteIsNotIdle() throws {
        let s = try InProcessServer { $0.idleTimeoutMs = 5000 }
        ReaderThreadTests().fill(s, 300)
        let r = s.connect(), w = s.connect(), quiet = s.connect()
        r.write([#"{"op":"query","collection":"c","id":1}"#])
        w.write([#"{"op":"set","path":"c/x","data":{"n":1},"id":2}"#])
        let batch = try #require(s.takeBatch())   // being made durable
        #expect(s.server.readsInFlight == 1)
        s.server.sweep(now: s.server.loop.now + 60_000)
        #expect(!r.closed && !w.closed, "both wait for the daemon")
        #expect(quiet.closed && quiet.take().first?.errorMessage?.contains("--idle-timeout-ms") == true)
        let answered = settleTimed(s)
        #expect(r.take().map { $0["id"] as? Int } == [1])
        s.server.sweep(now: answered.before + 4999)
        #expect(!r.closed, "a whole idle window from the answer")
        s.server.sweep(now: answered.after + 5000)
        #expect(r.closed && !w.closed, "the write is still owed")
        tick(s)
        let beforeDurable = s.server.loop.now
        s.land(batch)
        s.publish(batch)
        #expect(w.take().map { $0["id"] as? Int } == [2])
        s.server.sweep(now: beforeDurable + 4999)
        #expect(!w.closed)
        s.server.sweep(now: s.server.loop.now + 5000)
        #expect(w.closed)
    }

    /// Lines parked behind output the client does not read (all of it, or all but a little) are not an answer
    /// the daemon owes: such a connection is idle once it sends nothing for the idle timeout.
    @Test func linesParkedBehindUnreadOutputDoNotKeepAConnectionAlive() throws {
        for left in [0, 100] {
            let s = try InProcessServer { $0.idleTimeoutMs = 5000; $0.outputHighWater = 4096 }
            let c = connectWithLargeDocument(s)
            c.write([#"{"op":"get","path":"c/a","id":1}"#, #"{"op":"ping","id":2}"#])
            s.flush()
            #expect(!c.reading, "the ping is parked behind output the client does not read")
            if left > 0 { c.pendingOutputBytes = left }   // it read most of it, then stopped
            s.server.sweep(now: s.server.loop.now + 5000)
            #expect(c.closed)
        }
    }

    /// A client taking a large answer slowly sends nothing meanwhile, but it is not idle: 64 KiB of output taken
    /// counts as activity, from the sweep that sees it, as does taking all of it. A trickle does not.
    @Test func aClientTakingItsOutputSlowlyIsNotIdle() throws {
        let s = try InProcessServer { $0.idleTimeoutMs = 5000 }
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/big","data":{"s":"\#(String(repeating: "x", count: 300_000))"},"id":0}"#])
        s.flush()
        c.holdsOutput = true
        c.write([#"{"op":"get","path":"c/big","id":1}"#])
        s.flush()
        let sent = c.pendingOutputBytes
        #expect(sent > 300_000, "the answer is unsent")
        let t0 = s.server.loop.now
        s.server.sweep(now: t0 + 4000)
        c.pendingOutputBytes = sent - 100_000                 // the client took 100 KB
        s.server.sweep(now: t0 + 8000)
        #expect(!c.closed, "it took 64 KiB or more since the last look")
        c.pendingOutputBytes -= 1000                           // then a trickle: 1 KB, then 1 KB more
        s.server.sweep(now: t0 + 10_000)
        c.pendingOutputBytes -= 1000
        s.server.sweep(now: t0 + 12_999)
        #expect(!c.closed, "a whole idle window from the look that saw 64 KiB taken")
        s.server.sweep(now: t0 + 13_000)
        #expect(c.closed, "a trickle is idle")
    }

    /// A client that takes the rest of its output, however little, is active at that look.
    @Test func aClientTakingAllItsOutputIsActive() throws {
        let s = try InProcessServer { $0.idleTimeoutMs = 5000 }
        let c = connectWithLargeDocument(s)
        c.write([#"{"op":"get","path":"c/a","id":1}"#])
        s.flush()
        let t0 = s.server.loop.now
        s.server.sweep(now: t0 + 4000)
        c.pendingOutputBytes = 0                               // all ~10 KB of it
        s.server.sweep(now: t0 + 8000)
        #expect(!c.closed)
        s.server.sweep(now: t0 + 13_000)
        #expect(c.closed, "idle a whole window since")
    }

    /// A write retried with its request ID once durable is answered at once, as a read: when it was parked
    /// behind a query, its answer must not run it again (it did, recursively, until the stack overflowed).
    @Test func aRetriedWriteParkedBehindAReadRunsOnce() throws {
        let s = try InProcessServer()
        ReaderThreadTests().fill(s, 300)
        let c = s.connect()
        c.write([#"{"op":"set","requestId":"r-1","path":"r/a","data":{"v":1},"id":0}"#])
        s.flush()
        #expect(c.take().map { $0["id"] as? Int } == [0])
        c.write([#"{"op":"query","collection":"c","id":1}"#,
                 #"{"op":"set","requestId":"r-1","path":"r/a","data":{"v":1},"id":2}"#,
                 #"{"op":"ping","id":3}"#])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        s.flush()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(lines[1]["duplicate"] as? Bool == true)
    }

    /// A connection closed for the input budget runs none of its parked lines afterwards, although it stays
    /// open until its error line is flushed.
    @Test func aConnectionClosedForTheBudgetRunsNoParkedLine() throws {
        let s = try InProcessServer { $0.inputBudget = 100_000; $0.lineTimeoutMs = 1000 }
        ReaderThreadTests().fill(s, 300)
        let c = s.connect()
        c.defersClose = true
        c.write([#"{"op":"query","collection":"c","id":1}"#, #"{"op":"set","path":"m/marker","data":{"v":1},"id":2}"#])
        c.writeRaw(#"{"op":"ping","pad":""# + String(repeating: "p", count: 120_000))
        #expect(c.take().last?.errorMessage?.contains("--input-budget") == true)
        #expect(!c.closed, "closing: the error line is being flushed")
        s.settle()
        s.flush()
        #expect(s.engine.pendingCommitCount == 0)
        let g = s.connect()
        g.write([#"{"op":"get","path":"m/marker","id":3}"#])
        s.settle()
        let answer = try #require(g.take().first)
        #expect(answer["ok"] as? Bool == true && answer["doc"] is NSNull, "the parked set did not run")
        // The sweep leaves a closing connection alone: it is not closed (and counted) a second time.
        s.server.sweep(now: s.server.loop.now + 10_000_000)
        #expect(s.server.budget.closedSlowLine == 0, "its unfinished line is not timed out once more")
        c.completeClose()
    }

    /// Over TCP, a client reading a 6 MB answer at ~0.4 MB/s through a small receive buffer sends nothing for
    /// longer than `--idle-timeout-ms`: it gets the whole answer, then, once it has taken everything and sent
    /// nothing more for the timeout, the idle error. It was cut off mid-answer, as idle: the close's 2 s let
    /// the daemon's kernel queue take 4 MB (Linux's default `tcp_wmem` maximum) and the client read ~1 MB more.
    @Test func overTCPAClientReadingALargeAnswerSlowlyGetsItWhole() throws {
        let daemon = try DaemonProcess(extraArgs: ["--idle-timeout-ms", "1000"])
        let w = try daemon.connect()
        let pad = String(repeating: "x", count: 200_000)
        for i in 0..<30 { #expect(try w.request(#"{"op":"set","path":"big/d\#(i)","data":{"pad":"\#(pad)"}}"#).isOK) }
        let slow = try WireClient(port: daemon.port, receiveBuffer: 8192)
        slow.readChunk = 8192
        slow.readPauseMicros = 20_000
        try slow.send(#"{"op":"query","collection":"big","id":"q"}"#)
        let answer = try slow.readObject(timeout: 60)
        #expect(answer.isOK && (answer["docs"] as? [Any])?.count == 30, "the whole answer")
        slow.readPauseMicros = 0
        let closing = try slow.readObject(timeout: 10)
        #expect(closing.errorCode == "UNAVAILABLE" && closing.errorMessage?.contains("--idle-timeout-ms") == true)
        #expect(slow.isClosedByPeer())
        #expect(try daemon.connect().request(#"{"op":"ping"}"#).isOK, "the daemon carries on")
    }

    @Test func overTCPTheLimitsAnswerWithALineAndTheDaemonKeepsServing() throws {
        let daemon = try DaemonProcess(extraArgs: ["--max-connections", "3", "--line-timeout-ms", "300"])
        let keep = try daemon.connect()
        #expect(try keep.request(#"{"op":"ping"}"#).isOK)
        let slowloris = try daemon.connect()
        try slowloris.sendRaw(Array(#"{"op":"pi"#.utf8))
        let third = try daemon.connect()
        let fourth = try daemon.connect()
        let refusal = try fourth.readObject()
        #expect(refusal.errorCode == "RESOURCE_EXHAUSTED" && refusal.errorMessage?.contains("at most 3") == true)
        #expect(fourth.isClosedByPeer())
        // The unfinished line is closed after its timeout; the others carry on.
        let closing = try slowloris.readObject()
        #expect(closing.errorMessage?.contains("--line-timeout-ms") == true)
        #expect(slowloris.isClosedByPeer())
        #expect(try third.request(#"{"op":"ping"}"#).isOK)
        #expect(try keep.request(#"{"op":"ping"}"#).isOK)
        #expect(daemon.log.contains("refused a connection"))
        #expect(daemon.log.contains("open-file limit"))
    }
}
