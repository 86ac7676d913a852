import HearthModel

/// Byte-string keys kept in one flat buffer and sorted through their offsets (memcmp order, as
/// `index_entries` and SQLite's BINARY collation order them).
///
/// Why: an array of `[UInt8]` keys retains and releases both keys in every comparison of a sort, and a
/// dictionary keyed by them hashes them a byte at a time. Sorting and de-duplicating tens of thousands of
/// keys through their offsets touches no reference counts and hashes nothing (a pending group's index
/// changes, built by the first read that needs them; an applier transaction's index entries).
public struct FlatKeys: Sendable {
    /// Bytes `start ..< start + count` of `bytes`.
    public struct Span: Sendable {
        public var start: Int
        public var count: Int

        public init(start: Int, count: Int) {
            self.start = start
            self.count = count
        }
    }

    public private(set) var bytes: [UInt8] = []
    public private(set) var spans: [Span] = []

    public init() {}

    public var count: Int { spans.count }

    /// Appends a key; its place is `count - 1` after.
    public mutating func append(_ key: [UInt8]) {
        spans.append(Span(start: bytes.count, count: key.count))
        bytes.append(contentsOf: key)
    }

    /// Appends a string's UTF-8 bytes as a key.
    @discardableResult
    public mutating func append(_ s: String) -> Span {
        let start = bytes.count
        bytes.append(contentsOf: s.utf8)
        spans.append(Span(start: start, count: bytes.count - start))
        return spans[spans.count - 1]
    }

    /// The places `0 ..< count` in key order, keeping of each run of equal keys only the place appended last
    /// (the last write of a key wins). Inlinable, as `lastOfEach`: specialized where it is called, its
    /// comparisons are not calls through a closure.
    @inlinable
    public func lastOfEachKey() -> [Int] {
        bytes.withUnsafeBytes { b in
            spans.withUnsafeBufferPointer { s in
                Self.lastOfEach(count: s.count) { i, j in Self.compare(b, s[i], s[j]) }
            }
        }
    }

    /// -1, 0 or 1 as the bytes at `a` sort before, equal to or after those at `b` (memcmp, then length).
    @inlinable
    public static func compare(_ bytes: UnsafeRawBufferPointer, _ a: Span, _ b: Span) -> Int {
        UTF8Order.compareBytes(UnsafeRawBufferPointer(rebasing: bytes[a.start ..< a.start + a.count]),
                               UnsafeRawBufferPointer(rebasing: bytes[b.start ..< b.start + b.count]))
    }

    /// The places `0 ..< count` sorted by `compare`, keeping of each run of equal keys only the highest place
    /// (ties go by place, so it ends its run).
    @inlinable
    public static func lastOfEach(count: Int, _ compare: (Int, Int) -> Int) -> [Int] {
        var order = Array(0 ..< count)
        order.sort { i, j in
            let c = compare(i, j)
            return c != 0 ? c < 0 : i < j
        }
        var kept: [Int] = []
        kept.reserveCapacity(count)
        for n in order.indices where n + 1 == order.count || compare(order[n], order[n + 1]) != 0 {
            kept.append(order[n])
        }
        return kept
    }
}
