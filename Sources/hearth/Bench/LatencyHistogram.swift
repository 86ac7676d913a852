/// A log-linear latency histogram in the style of HdrHistogram: microsecond resolution below 256 µs,
/// then 128 buckets per power of two, so any recorded value is known to within 1/128 (< 0.8%) of itself.
/// Values above `maxTrackable` (60 s) land in the last bucket; `min`, `max` and the mean stay exact.
/// Recording is O(1) with no allocation. Percentiles report a bucket's highest value, capped at `max`,
/// so `p50 <= p90 <= ... <= max` always holds.
struct LatencyHistogram: Sendable {
    static let subBucketBits = 7
    static let subBuckets = 1 << subBucketBits          // 128 buckets per octave
    static let maxTrackable: UInt64 = 60_000_000        // 60 s in µs
    static let bucketCount = index(of: maxTrackable) + 1

    private(set) var counts: [UInt64]
    private(set) var total: UInt64 = 0
    private(set) var min: UInt64 = .max
    private(set) var max: UInt64 = 0
    private(set) var sum: UInt64 = 0

    init() { counts = [UInt64](repeating: 0, count: LatencyHistogram.bucketCount) }

    /// The bucket holding `v` (µs). Values below 2 × 128 map to themselves.
    @inline(__always)
    static func index(of v: UInt64) -> Int {
        let linearLimit = UInt64(subBuckets << 1)
        if v < linearLimit { return Int(v) }
        let msb = 63 - v.leadingZeroBitCount                // >= subBucketBits + 1
        let shift = msb - subBucketBits
        let mantissa = Int(v >> UInt64(shift)) - subBuckets  // 0..<128
        return Int(linearLimit) + (shift - 1) * subBuckets + mantissa
    }

    /// The highest value that maps to bucket `i`.
    static func highestValue(ofBucket i: Int) -> UInt64 {
        let linearLimit = subBuckets << 1
        if i < linearLimit { return UInt64(i) }
        let shift = (i - linearLimit) / subBuckets + 1
        let mantissa = UInt64((i - linearLimit) % subBuckets + subBuckets)
        return ((mantissa + 1) << UInt64(shift)) - 1
    }

    /// Records one latency in microseconds.
    @inline(__always)
    mutating func record(micros v: UInt64) {
        counts[LatencyHistogram.index(of: Swift.min(v, LatencyHistogram.maxTrackable))] &+= 1
        total &+= 1
        sum &+= v
        if v < min { min = v }
        if v > max { max = v }
    }

    /// Records a latency given in nanoseconds (rounded to the nearest microsecond).
    @inline(__always)
    mutating func record(nanos: UInt64) { record(micros: (nanos &+ 500) / 1000) }

    mutating func merge(_ other: LatencyHistogram) {
        guard other.total > 0 else { return }
        for i in 0..<counts.count { counts[i] &+= other.counts[i] }
        total &+= other.total
        sum &+= other.sum
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
    }

    /// The value at percentile `p` (0...100) in µs: the smallest bucket ceiling with at least p% of the
    /// values at or below it, capped at `max`. 0 when empty.
    func percentile(_ p: Double) -> UInt64 {
        guard total > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((p / 100 * Double(total)).rounded(.up)))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= rank { return Swift.min(LatencyHistogram.highestValue(ofBucket: i), max) }
        }
        return max
    }

    var mean: Double { total == 0 ? 0 : Double(sum) / Double(total) }
    var minimum: UInt64 { total == 0 ? 0 : min }
}
