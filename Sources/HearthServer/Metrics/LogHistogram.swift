/// A fixed-bucket logarithmic histogram of non-negative integers (microseconds, or batch sizes): four buckets
/// per power of two (each at most 25% wide), 140 buckets covering 0 to about 19 hours in microseconds.
/// Recording is a few integer operations and one increment: no allocation after init.
struct LogHistogram {
    static let bucketCount = 140
    private(set) var counts: [UInt64]
    private(set) var total: UInt64 = 0
    /// The sum of every recorded value (for Prometheus' `_sum`).
    private(set) var sum: UInt64 = 0

    init() { counts = [UInt64](repeating: 0, count: LogHistogram.bucketCount) }

    /// The bucket a value falls in.
    static func bucket(_ v: UInt64) -> Int {
        if v < 4 { return Int(v) }
        let e = 63 - v.leadingZeroBitCount           // >= 2
        let sub = Int((v >> UInt64(e - 2)) & 3)
        return min(4 * (e - 1) + sub, bucketCount - 1)
    }

    /// The smallest value above bucket `i` (its exclusive upper bound).
    static func upperBound(_ i: Int) -> UInt64 {
        if i < 4 { return UInt64(i + 1) }
        let e = i / 4 + 1, sub = i % 4
        return UInt64(5 + sub) << UInt64(e - 2)
    }

    mutating func record(_ v: UInt64) {
        counts[LogHistogram.bucket(v)] &+= 1
        total &+= 1
        sum &+= v
    }

    mutating func reset() {
        for i in counts.indices { counts[i] = 0 }
        total = 0
        sum = 0
    }

    /// Values recorded below `bound` exactly when `bound` is a bucket boundary (a power of two is).
    func count(below bound: UInt64) -> UInt64 {
        var n: UInt64 = 0
        for i in counts.indices where LogHistogram.upperBound(i) <= bound { n &+= counts[i] }
        return n
    }

    /// The `q` quantile (0...1) over this histogram and `other` together, as the upper bound of the bucket it
    /// falls in (so at most 25% above the true value); 0 when nothing was recorded.
    func quantile(_ q: Double, with other: LogHistogram? = nil) -> UInt64 {
        let n = total + (other?.total ?? 0)
        guard n > 0 else { return 0 }
        let rank = max(1, UInt64((Double(n) * q).rounded(.up)))
        var seen: UInt64 = 0
        for i in counts.indices {
            seen += counts[i] + (other?.counts[i] ?? 0)
            if seen >= rank { return LogHistogram.upperBound(i) - 1 }
        }
        return LogHistogram.upperBound(LogHistogram.bucketCount - 1)
    }
}
