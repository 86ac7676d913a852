import Testing
@testable import HearthLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite("Timers, signals and hooks")
struct TimerTests {
    @Test("a timer fires once; a cancelled timer never fires")
    func fireAndCancel() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var fired = 0
        var cancelledFired = false
        let start = loop.now
        var elapsed: UInt64 = 0
        let oneShot = loop.timer(after: 20) {
            fired += 1
            elapsed = loop.now - start
        }
        let cancelled = loop.timer(after: 30) { cancelledFired = true }
        #expect(cancelled.isActive)
        cancelled.cancel()
        cancelled.cancel()
        #expect(!cancelled.isActive)
        loop.timer(after: 80) { loop.stop() }
        runBounded(loop)
        #expect(fired == 1)
        #expect(elapsed >= 19)
        #expect(!cancelledFired)
        #expect(!oneShot.isActive, "a fired one-shot timer releases its handle")
    }

    @Test("a repeating timer repeats until cancelled, and reset re-arms a fired timer")
    func repeatAndReset() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var ticks = 0
        var resets = 0
        // The loop stops once both have happened, whatever the machine's load (no race between them).
        func stopWhenDone() { if ticks == 3 && resets == 2 { loop.stop() } }
        var ticker: LoopTimer?
        ticker = loop.timer(after: 1, repeat: 2) {
            ticks += 1
            if ticks == 3 { ticker?.cancel() }
            stopWhenDone()
        }
        var again: LoopTimer?
        again = loop.timer(after: 1) {
            resets += 1
            if resets == 1 {
                loop.timer(after: 5) { again?.reset(after: 1) }   // re-arm after it fired
            }
            stopWhenDone()
        }
        runBounded(loop)
        #expect(ticks == 3)
        #expect(resets == 2)
        ticker = nil
        again = nil
    }

    @Test("beforePoll hooks run every iteration in registration order")
    func beforePollHooks() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var order: [Int] = []
        var firstCount = 0
        loop.beforePoll { order.append(1); firstCount += 1 }
        let second = loop.beforePoll { order.append(2) }
        var timerFires = 0
        var hookRunsAtTimerFire: [Int] = []
        var ticker: LoopTimer?
        ticker = loop.timer(after: 1, repeat: 2) {
            timerFires += 1
            hookRunsAtTimerFire.append(firstCount)
            if timerFires == 3 { second.cancel() }
            if timerFires == 5 { ticker?.cancel(); loop.stop() }
        }
        runBounded(loop)
        ticker = nil   // the closure captured `ticker`: break the cycle
        #expect(firstCount >= 4)
        #expect(Array(order.prefix(2)) == [1, 2])
        #expect(order.filter { $0 == 2 }.count < order.filter { $0 == 1 }.count)
        // Between two timer fires the loop polled at least once, so the hook ran at least once.
        for (a, b) in zip(hookRunsAtTimerFire, hookRunsAtTimerFire.dropFirst()) { #expect(b > a) }
    }

    @Test("runOnce(nowait:) runs hooks without blocking")
    func runOnceNoWait() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var runs = 0
        loop.beforePoll { runs += 1 }
        #expect(!loop.runOnce(nowait: true), "hooks alone do not keep the loop alive, so nothing runs")
        #expect(runs == 0)
        let keepAlive = loop.timer(after: 60_000) {}
        let start = loop.hrtimeNanos()
        #expect(loop.runOnce(nowait: true), "an armed timer keeps it alive")
        #expect(loop.hrtimeNanos() - start < 1_000_000_000, "did not wait for the timer")
        #expect(runs == 1)
        keepAlive.cancel()
        #expect(loop.hrtimeNanos() > 0)
    }

    @Test("a signal watcher runs on the loop thread")
    func signalWatcher() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var fired = 0
        let watcher = loop.onSignal(SIGUSR1) {
            fired += 1
            loop.stop()
        }
        #expect(watcher.isActive)
        // Process-directed: test threads (libdispatch workers) block signals, so raise() could stay pending.
        loop.timer(after: 5) { _ = kill(getpid(), SIGUSR1) }
        runBounded(loop)
        watcher.stop()
        #expect(fired == 1)
        #expect(!watcher.isActive)
    }
}
