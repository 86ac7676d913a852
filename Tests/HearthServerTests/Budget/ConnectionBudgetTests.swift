@testable import HearthServer
import Testing

/// The daemon-wide limits as a pure value: no sockets, no clock but the numbers given.
@Suite struct ConnectionBudgetTests {
    func budget(max: Int = 2, input: Int = 100, line: UInt64 = 1000, idle: UInt64 = 0) -> ConnectionBudget {
        ConnectionBudget(.init(maxConnections: max, inputBytes: input, lineTimeoutMs: line, idleTimeoutMs: idle))
    }

    @Test func connectionsAreAdmittedUpToTheLimit() {
        var b = budget(max: 2)
        #expect(b.admit(address: "10.0.0.1") == nil)
        #expect(b.admit(address: "10.0.0.1") == nil)
        let refusal = b.admit(address: "10.0.0.1")
        #expect(refusal?.code == .resourceExhausted)
        #expect(refusal?.message.contains("at most 2") == true && refusal?.message.contains("--max-connections") == true)
        #expect(b.refused == 1 && b.connections == 2)
        b.released(address: "10.0.0.1", unfinished: 0)
        #expect(b.admit(address: "10.0.0.1") == nil)
    }

    @Test func oneAddressIsLimitedWithoutStarvingOthers() {
        var b = ConnectionBudget(.init(maxConnections: 10, maxPerAddress: 2, inputBytes: 100, lineTimeoutMs: 0, idleTimeoutMs: 0))
        #expect(b.admit(address: "10.0.0.1") == nil)
        #expect(b.admit(address: "10.0.0.1") == nil)
        let refusal = b.admit(address: "10.0.0.1")
        #expect(refusal?.code == .resourceExhausted)
        #expect(refusal?.message.contains("from 10.0.0.1") == true && refusal?.message.contains("--max-connections-per-address") == true)
        #expect(b.admit(address: "10.0.0.2") == nil)            // another address is still served
        #expect(b.connections == 3 && b.refused == 1)
        b.released(address: "10.0.0.1", unfinished: 0)
        #expect(b.admit(address: "10.0.0.1") == nil)            // a slot of its own came back
        b.released(address: "10.0.0.2", unfinished: 0)
        #expect(b.perAddress["10.0.0.2"] == nil)                // addresses without connections are forgotten
        var open = ConnectionBudget(.init(maxConnections: 5, maxPerAddress: 0, inputBytes: 100, lineTimeoutMs: 0, idleTimeoutMs: 0))
        for _ in 0..<5 { #expect(open.admit(address: "10.0.0.1") == nil) }   // 0: only the global cap
        #expect(open.admit(address: "10.0.0.1")?.message.contains("--max-connections)") == true)
    }

    @Test func unfinishedInputIsBoundedAcrossConnections() {
        var b = budget(input: 100)
        _ = b.admit(address: "10.0.0.1"); _ = b.admit(address: "10.0.0.1")
        #expect(b.inputChanged(from: 0, to: 60) == nil)
        let over = b.inputChanged(from: 0, to: 50)          // the second connection would take it to 110
        #expect(over?.code == .resourceExhausted && over?.message.contains("--input-budget") == true)
        #expect(b.closedOverInput == 1)
        b.released(address: "10.0.0.1", unfinished: 50)                           // the server closes it, releasing its bytes
        #expect(b.inputBytes == 60)
        #expect(b.inputChanged(from: 60, to: 0) == nil)      // the first one's line completed
        #expect(b.inputBytes == 0)
        #expect(b.inputChanged(from: 0, to: 100) == nil)     // exactly the budget is allowed
    }

    @Test func shrinkingNeverRefuses() {
        var b = budget(input: 10)
        _ = b.admit(address: "10.0.0.1")
        _ = b.inputChanged(from: 0, to: 50)                  // refused, and still counted until released
        #expect(b.inputChanged(from: 50, to: 40) == nil)
    }

    @Test func slowLinesAndIdleConnectionsExpire() {
        var b = budget(line: 1000, idle: 5000)
        #expect(b.expired(now: 1999, lineStartedMs: 1000, lastActivityMs: 1999, listening: false) == nil)
        let slow = b.expired(now: 2000, lineStartedMs: 1000, lastActivityMs: 1999, listening: false)
        #expect(slow?.message.contains("--line-timeout-ms") == true)
        #expect(b.expired(now: 5999, lineStartedMs: nil, lastActivityMs: 1000, listening: false) == nil)
        let idle = b.expired(now: 6000, lineStartedMs: nil, lastActivityMs: 1000, listening: false)
        #expect(idle?.message.contains("--idle-timeout-ms") == true)
        // A subscriber is idle by design; a connection owed an answer waits for the daemon.
        #expect(b.expired(now: 60_000, lineStartedMs: nil, lastActivityMs: 1000, listening: true) == nil)
        #expect(b.expired(now: 60_000, lineStartedMs: nil, lastActivityMs: 1000, listening: false, owesAnswer: true) == nil)
        #expect(b.closedSlowLine == 1 && b.closedIdle == 1)
    }

    @Test func timeoutsOfZeroNeverExpireAndNeedNoSweep() {
        var b = budget(line: 0, idle: 0)
        #expect(b.expired(now: .max / 2, lineStartedMs: 0, lastActivityMs: 0, listening: false) == nil)
        #expect(b.sweepIntervalMs == nil)
        #expect(budget(line: 60_000).sweepIntervalMs == 1000)
        #expect(budget(line: 200).sweepIntervalMs == 50)
    }
}
