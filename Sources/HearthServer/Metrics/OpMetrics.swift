/// Counts and latencies of one op: totals since start (for Prometheus) and two rotating windows (for
/// percentiles over the last 10 to 20 seconds). Loop thread only.
final class OpMetrics {
    let name: String
    // @exclusivity(unchecked): recorded on every request, loop thread only, never across a call (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) private(set) var count: UInt64 = 0
    @exclusivity(unchecked) private(set) var errors: UInt64 = 0
    /// Latency in microseconds since start.
    @exclusivity(unchecked) private(set) var latency = LogHistogram()
    @exclusivity(unchecked) private var current = LogHistogram()
    private var previous = LogHistogram()
    private var countAtTick: UInt64 = 0
    /// Requests in the last whole second.
    private(set) var perSecond: UInt64 = 0

    init(name: String) { self.name = name }

    func record(micros: UInt64, failed: Bool) {
        count &+= 1
        if failed { errors &+= 1 }
        latency.record(micros)
        current.record(micros)
    }

    /// A request refused before it ran (an unknown field, no clearance): counted, not timed.
    func refused() {
        count &+= 1
        errors &+= 1
    }

    /// Every second.
    func tick() {
        perSecond = count &- countAtTick
        countAtTick = count
    }

    /// Every window (10 s): the current window becomes the previous one.
    func rotate() {
        swap(&current, &previous)
        current.reset()
    }

    /// Requests timed in the recent window, and the `q` quantile of their latency (µs).
    var windowCount: UInt64 { current.total + previous.total }
    func windowQuantile(_ q: Double) -> UInt64 { current.quantile(q, with: previous) }
}
