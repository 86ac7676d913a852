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
