#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's counters: per-op counts and latencies, group commits (batch sizes, durable-write latency,
/// commits per second), and requests refused before their op was known. Loop thread only; nothing here
/// allocates per request. `tick` runs every second (rates), and every 10th tick rotates the latency windows.
final class ServerMetrics {
    /// Indexed by the command's slot in `CommandTable.all`.
    let ops: [OpMetrics]
    /// Lines refused before an op was known (not JSON, no op, an unknown op).
    private(set) var malformed: UInt64 = 0
    private(set) var commits: UInt64 = 0
    private(set) var batches: UInt64 = 0
    /// Commits per durable batch (group size).
    private(set) var batchSizes = LogHistogram()
    /// Time the writer thread took to make a batch durable (write and fsync), µs.
    private(set) var commitLatency = LogHistogram()
    private var commitWindow = LogHistogram()
    private var commitPrevious = LogHistogram()
    private var commitsAtTick: UInt64 = 0
    private(set) var commitsPerSecond: UInt64 = 0
    private var ticks = 0
    /// When the daemon started: wall clock (µs since the epoch) and monotonic clock (ns).
    let startedWallMicros: Int64
    let startedNanos: UInt64

    static let windowTicks = 10

    init(ops: [String]) {
        self.ops = ops.map { OpMetrics(name: $0) }
        startedWallMicros = Int64(Logger.now().micros)
        startedNanos = ServerMetrics.nanos()
    }

    /// The monotonic clock in nanoseconds (vDSO: no system call).
    @inline(__always)
    static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    func noteMalformed() { malformed &+= 1 }

    func batchLanded(commits n: Int, micros: UInt64) {
        commits &+= UInt64(n)
        batches &+= 1
        batchSizes.record(UInt64(n))
        commitLatency.record(micros)
        commitWindow.record(micros)
    }

    /// The durable-write latency quantile over the recent window (µs).
    func commitQuantile(_ q: Double) -> UInt64 { commitWindow.quantile(q, with: commitPrevious) }

    func tick() {
        commitsPerSecond = commits &- commitsAtTick
        commitsAtTick = commits
        for op in ops { op.tick() }
        ticks += 1
        if ticks % ServerMetrics.windowTicks == 0 {
            for op in ops { op.rotate() }
            swap(&commitWindow, &commitPrevious)
            commitWindow.reset()
        }
    }

    var uptimeSeconds: Double { Double(ServerMetrics.nanos() &- startedNanos) / 1e9 }
}
