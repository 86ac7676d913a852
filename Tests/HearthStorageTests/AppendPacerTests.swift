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

    @Test func transactionsTooShortToTellAreNotCounted() {
        var p = AppendPacer()
        p.applied(bytes: 4096, nanos: AppendPacer.shortestMeasured - 1)
        p.applied(bytes: 0, nanos: 10 * Self.ms)
        #expect(p.rate == nil)
        p.applied(bytes: 4096, nanos: AppendPacer.shortestMeasured)
        #expect(p.rate == 4096 * 1e9 / Double(AppendPacer.shortestMeasured))
    }

    @Test func theRateIsSmoothedTowardsEachTransaction() {
        var p = measured()
        #expect(p.rate == 1e6)
        p.applied(bytes: 2_000_000, nanos: 1_000 * Self.ms)                  // 2 MB/s
        #expect(p.rate == 1e6 + AppendPacer.smoothing * 1e6)
        for _ in 0..<60 { p.applied(bytes: 2_000_000, nanos: 1_000 * Self.ms) }
        #expect(abs(p.rate! - 2e6) < 1)
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
        #expect(p.pace(fill: 1) == 1e6 * AppendPacer.slowestFactor)
        #expect(p.pace(fill: 3) == 1e6 * AppendPacer.slowestFactor)
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
        let fill = 0.75                                              // pace: 0.75 MB/s
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
