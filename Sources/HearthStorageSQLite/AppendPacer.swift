#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The commit log's soft backpressure (`CommitPipeline`): while the backlog is over three quarters of what
/// `append` stops at, groups are admitted no faster than the applier has been applying them, so that a writer that
/// outpaces the applier slows a little for every group instead of running into the hard bound, where a
/// group waits for the rest of an applier transaction (hundreds of milliseconds: docs/benchmarks.md, "The
/// applier's pace"). RocksDB's write controller does the same between its soft and hard limits
/// (`delayed_write_rate`, `soft_pending_compaction_bytes_limit`).
///
/// The pace: the applier's rate, log-frame bytes per second of its transactions' time (each from when it holds
/// SQLite's writer to its end: `CommitPipeline.run`) over about its last `window` of work (sums of bytes and of time that decay with the time measured since, so a long
/// transaction weighs as much as the many short ones that take as long), times a factor that falls from 1 at
/// the soft bound to `slowestFactor` at the hard bound, so that the further the backlog is over, the more it
/// shrinks. A group of `n` bytes appended at `t` lets the next one start at `t + n / pace` at the earliest
/// (at most `longestHold` later); below the soft bound nothing waits and no debt is kept. Until a
/// transaction has been measured there is no pace and only the hard bound holds.
///
/// Pure: times are monotonic nanoseconds passed in; `CommitPipeline` holds it under its mutex.
struct AppendPacer: Equatable {
    /// The fill (the largest share of a hard bound the backlog holds) where pacing starts. At half, a sustained
    /// fan-out ran 8% fewer posts per second than the bound alone in a 60 s pair: the backlog the pace kept was
    /// too small for the applier's largest transactions, which write each scattered page once for more commits
    /// (docs/benchmarks.md, "The applier's pace").
    static let softFill = 0.75
    /// The pace's factor of the applier's rate at the hard bound.
    static let slowestFactor = 0.5
    /// The applier's work the rate is measured over: what was measured `window` of transaction time ago weighs
    /// 1/e of the newest.
    static let window = 2e9   // ns
    /// A transaction said to take longer than this is not counted (a step of a clock that is not monotonic would
    /// otherwise wipe out the rate for many windows).
    static let longestMeasured: UInt64 = 600_000_000_000
    /// The longest one group holds the next back (a huge group, or a rate measured while SQLite was slow): the
    /// bound still holds beyond it, and the applier's broadcast after each transaction ends the wait once the
    /// backlog is below the soft bound.
    static let longestHold: UInt64 = 1_000_000_000

    /// Log-frame bytes per second of the applier's transaction time over its recent work; nil until one is
    /// measured.
    var rate: Double? { time > 0 ? bytes * 1e9 / time : nil }
    /// The decayed sums of the transactions' log-frame bytes and time (ns).
    private var bytes = 0.0
    private var time = 0.0
    /// The earliest time the next group may start while over the soft bound (0: now).
    private(set) var nextAt: UInt64 = 0

    /// Counts the applier's transaction of `bytes` log-frame bytes that took `nanos`.
    mutating func applied(bytes n: Int, nanos: UInt64) {
        guard n > 0, nanos > 0, nanos <= Self.longestMeasured else { return }
        let keep = exp(-Double(nanos) / Self.window)
        bytes = bytes * keep + Double(n)
        time = time * keep + Double(nanos)
    }

    /// Tests: takes `rate` (bytes per second, at least 0) as the rate measured over a whole window.
    mutating func assume(rate: Double) {
        bytes = max(0, rate) * Self.window / 1e9
        time = Self.window
    }

    /// The pace for a backlog at `fill` (bytes per second), or nil when nothing waits.
    func pace(fill: Double) -> Double? {
        guard let rate, fill > Self.softFill else { return nil }
        let over = min(1, (fill - Self.softFill) / (1 - Self.softFill))
        return rate * (1 - over * (1 - Self.slowestFactor))
    }

    /// When a group may start at `now` with the backlog at `fill`: `now` or later.
    func start(now: UInt64, fill: Double) -> UInt64 {
        pace(fill: fill) == nil ? now : max(now, nextAt)
    }

    /// A group of `bytes` started at `now` (the backlog at `fill` before it).
    mutating func appended(bytes: Int, at now: UInt64, fill: Double) {
        guard let pace = pace(fill: fill) else {
            nextAt = 0
            return
        }
        let hold = Double(bytes) * 1e9 / pace
        nextAt = max(now, nextAt) &+ (hold < Double(Self.longestHold) ? UInt64(hold) : Self.longestHold)
    }
}
