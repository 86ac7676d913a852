/// A request being timed: its op's slot in `ServerMetrics.ops` and when it started (monotonic ns).
struct RequestTiming {
    let slot: Int
    let started: UInt64
}
