#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import HearthStorageSQLite
import Testing

/// The commit log's soft backpressure as arithmetic (`AppendPacer`): when a group may start, given the
/// backlog's fill and the applier's measured rate. The pipeline's use of it is in `CommitPipelineTests`.
@Suite struct AppendPacerTests {
    static let ms: UInt64 = 1_000_000

    /// A pacer whose applier applied 1 MB per second.
    func measured() -> AppendPacer {
        var p = AppendPacer()
        p.applied(bytes: 1_000_000, nanos: 1_000 * Self.ms)
        return p
    }

    @Test func nothingWaitsBeforeATransactionIsMeasured() {
        var p = AppendPacer()
        #expect(p.rate == nil)
        p.appended(bytes: 1 << 20, at: 5 * Self.ms, fill: 0.99)
        #expect(p.start(now: 6 * Self.ms, fill: 0.99) == 6 * Self.ms)
        #expect(p.pace(fill: 0.99) == nil)
    }

    @Test func emptyOrInstantTransactionsTellNothing() {
        var p = AppendPacer()
        p.applied(bytes: 0, nanos: 10 * Self.ms)
        p.applied(bytes: 4096, nanos: 0)
        #expect(p.rate == nil)
        p.applied(bytes: 4096, nanos: AppendPacer.longestMeasured + 1)
        #expect(p.rate == nil)
        p.applied(bytes: 4096, nanos: 1)
        #expect(p.rate == 4096e9)
    }

    /// The rate is bytes over time across the recent window: a transaction weighs by its time, so a short
    /// one at another rate barely moves it, and older work fades as newer work is measured.
    @Test func theRateWeighsEachTransactionByItsTime() {
        var p = measured()
        #expect(abs(p.rate! - 1e6) < 1e-6)
        // 0.1 ms at 100 MB/s after 1 s at 1 MB/s: about 1% higher, not a third of the way to 100 MB/s.
        var q = p
        q.applied(bytes: 10_000, nanos: Self.ms / 10)
        #expect(q.rate! > 1e6 && q.rate! < 1.011e6)
        // A second at 2 MB/s: the first second weighs e^(-1/2) of it.
        p.applied(bytes: 2_000_000, nanos: 1_000 * Self.ms)
        let keep = exp(-1e9 / AppendPacer.window)
        #expect(abs(p.rate! - (1e6 * keep + 2e6) / (keep + 1)) < 1e-3)
        // Twenty more windows at 2 MB/s: what came before has faded.
        for _ in 0..<40 { p.applied(bytes: 2_000_000, nanos: 1_000 * Self.ms) }
        #expect(abs(p.rate! - 2e6) < 1)
    }

    @Test func anAssumedRateIsTakenAsAWholeWindowOfIt() {
        var p = AppendPacer()
        p.assume(rate: 3e6)
        #expect(abs(p.rate! - 3e6) < 1e-6)
        // A window at 1 MB/s after it: the assumed one weighs e^-1 of it.
        var q = p
        q.applied(bytes: 2_000_000, nanos: 2_000_000_000)
        let keep = exp(-1.0)
        #expect(abs(q.rate! - (3e6 * keep + 1e6) / (keep + 1)) < 1e-3)
        p.assume(rate: -5)
        #expect(p.rate == 0)
    }

    /// The pace is the applier's rate at the soft bound and falls linearly to `slowestFactor` of it at the hard
    /// bound, and stays there beyond it.
    @Test func thePaceFallsFromTheRateAtTheSoftBoundToTheSlowestAtTheHardOne() {
        let p = measured()
        #expect(p.pace(fill: 0) == nil)
        #expect(p.pace(fill: AppendPacer.softFill) == nil)
        #expect(p.pace(fill: AppendPacer.softFill + 1e-9)! > 0.999e6)
        let mid = (AppendPacer.softFill + 1) / 2
        #expect(abs(p.pace(fill: mid)! - 1e6 * (1 + AppendPacer.slowestFactor) / 2) < 1e-3)
        #expect(abs(p.pace(fill: 1)! - 1e6 * AppendPacer.slowestFactor) < 1e-6)
        #expect(abs(p.pace(fill: 3)! - 1e6 * AppendPacer.slowestFactor) < 1e-6)
    }

    /// Over the soft bound a group of n bytes holds the next back by n ÷ pace from its own start; a writer slower
    /// than that waits for nothing, and no credit or debt is carried across the soft bound.
    @Test func eachGroupHoldsTheNextBackByItsShareOfThePace() {
        var p = measured()
        let fill = 1.0                                              // pace: 0.5 MB/s
        let t0 = 100 * Self.ms
        #expect(p.start(now: t0, fill: fill) == t0)
        p.appended(bytes: 50_000, at: t0, fill: fill)              // 100 ms at 0.5 MB/s
        #expect(p.start(now: t0 + 30 * Self.ms, fill: fill) == t0 + 100 * Self.ms)
        #expect(p.start(now: t0 + 130 * Self.ms, fill: fill) == t0 + 130 * Self.ms)
        p.appended(bytes: 50_000, at: t0 + 100 * Self.ms, fill: fill)
        #expect(p.nextAt == t0 + 200 * Self.ms)
        // A group that starts late counts from its own start.
        p.appended(bytes: 50_000, at: t0 + 500 * Self.ms, fill: fill)
        #expect(p.nextAt == t0 + 600 * Self.ms)
        // Below the soft bound: nothing waits, and the debt is dropped.
        #expect(p.start(now: t0 + 510 * Self.ms, fill: 0.2) == t0 + 510 * Self.ms)
        p.appended(bytes: 50_000, at: t0 + 510 * Self.ms, fill: 0.2)
        #expect(p.nextAt == 0)
        #expect(p.start(now: t0 + 511 * Self.ms, fill: fill) == t0 + 511 * Self.ms)
    }

    /// However slow the measured rate and large the group, one group holds the next back at most
    /// `longestHold` (the bound still holds beyond it); a rate of zero does not trap.
    @Test func noGroupHoldsTheNextBackLongerThanTheLongestHold() {
        for rate in [0.0, 1e-9, 1.0] {
            var p = AppendPacer()
            p.assume(rate: rate)
            p.appended(bytes: Int(UInt32.max), at: 7, fill: 1)
            #expect(p.nextAt == 7 + AppendPacer.longestHold, "rate \(rate)")
            p.appended(bytes: Int(UInt32.max), at: 7, fill: 1)
            #expect(p.nextAt == 7 + 2 * AppendPacer.longestHold, "rate \(rate)")
        }
    }

    /// Groups appended as fast as the pace allows, over a second at a fixed fill, carry what the pace says.
    @Test func aSecondOfPacedGroupsCarriesThePace() {
        var p = measured()
        let fill = (AppendPacer.softFill + 1) / 2                    // pace: 0.75 MB/s
        var now: UInt64 = 0
        var bytes = 0
        while now < 1_000 * Self.ms {
            now = p.start(now: now, fill: fill)
            guard now < 1_000 * Self.ms else { break }
            p.appended(bytes: 3_000, at: now, fill: fill)
            bytes += 3_000
        }
        #expect(bytes == 750_000)
    }
}
