import HearthModel

/// Binary searches over sorted field path lists (segment-wise order keeps every path below `p` in one run
/// starting at `p`'s insertion point).
enum PathSearch {
    /// The first index whose path is not less than `p`.
    static func lowerBound(_ p: FieldPath, in sorted: [FieldPath]) -> Int {
        var lo = 0, hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < p { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// True when some path in `sorted` is `p` or lies below it.
    static func containsPath(under p: FieldPath, in sorted: [FieldPath]) -> Bool {
        let i = lowerBound(p, in: sorted)
        return i < sorted.count && p.isPrefix(of: sorted[i])
    }

    /// The path of `prefixFree` (sorted, no path a prefix of another) that is `q` or a prefix of it, if any.
    static func covering(_ q: FieldPath, in prefixFree: [FieldPath]) -> FieldPath? {
        let i = lowerBound(q, in: prefixFree)
        if i < prefixFree.count && prefixFree[i] == q { return q }
        if i > 0 && prefixFree[i - 1].isPrefix(of: q) { return prefixFree[i - 1] }
        return nil
    }
}
