import HearthModel

/// The index keys pending groups touch in one range, each once with its newest state, handed out one at a
/// time in key order (or reverse key order), for a read that merges them with a base's entries.
///
/// Why a cursor: a read of `limit` entries needs the touched keys only as far as its page reaches. Each group
/// keeps its keys sorted (`PendingGroup.IndexState`), so the cursor finds each group's part of the range by
/// binary search and then merges the groups' heads, copying only the keys it hands out. A copy of every key in
/// the range, which the page then mostly discarded, cost a wide read ~85 ms while a bulk load of 40,000
/// documents waited for the applier.
///
/// Of a key several groups touch, the newest group's state is the one handed out (groups are oldest first).
struct PendingKeyCursor {
    private var states: [PendingGroup.IndexState] = []
    /// Per group, the part of its keys not handed out yet: `lo ..< hi`.
    private var lo: [Int] = []
    private var hi: [Int] = []
    let reverse: Bool

    /// The touched keys of `[lower, upper)` (no upper bound when `upper` is empty) of `groups` (oldest first).
    init(_ groups: [PendingGroup], from lower: [UInt8], to upper: [UInt8], reverse: Bool) {
        self.reverse = reverse
        guard upper.isEmpty || PendingGroup.precedes(lower, upper) else { return }
        for g in groups {
            let state = g.indexKeys
            let range = state.range(from: lower, to: upper)
            guard !range.isEmpty else { continue }
            states.append(state)
            lo.append(range.lowerBound)
            hi.append(range.upperBound)
        }
    }

    /// Whether no key is left.
    var isEmpty: Bool {
        for g in lo.indices where lo[g] < hi[g] { return false }
        return true
    }

    /// At least the number of keys left (a key several groups touch counts once per group).
    var bound: Int {
        var n = 0
        for g in lo.indices { n += hi[g] - lo[g] }
        return n
    }

    /// The next key in the cursor's order and its state after the groups (nil: removed), or nil when none is
    /// left.
    mutating func next() -> (key: [UInt8], path: DocumentPath?)? {
        guard let (g, i) = head() else { return nil }
        let key = states[g].key(i)
        let path = states[g].paths[i]
        // Every group whose head is this key moves past it.
        key.withUnsafeBytes { k in
            for h in lo.indices where lo[h] < hi[h] {
                let j = reverse ? hi[h] - 1 : lo[h]
                if states[h].withKey(j, { UTF8Order.compareBytes($0, k) }) == 0 {
                    if reverse { hi[h] -= 1 } else { lo[h] += 1 }
                }
            }
        }
        return (key, path)
    }

    /// -1, 0 or 1 as the next key comes before, is, or comes after `key` in the cursor's order; nil when no
    /// key is left.
    func compareNext(to key: UnsafeRawBufferPointer) -> Int? {
        guard let (g, i) = head() else { return nil }
        let c = states[g].withKey(i) { UTF8Order.compareBytes($0, key) }
        return reverse ? -c : c
    }

    /// The group and place of the next key: the first in the cursor's order among the groups' heads, the
    /// newest group's of equal ones.
    private func head() -> (group: Int, place: Int)? {
        var best: (group: Int, place: Int)?
        for g in lo.indices where lo[g] < hi[g] {
            let i = reverse ? hi[g] - 1 : lo[g]
            guard let b = best else { best = (g, i); continue }
            let c = states[g].withKey(i) { k in states[b.group].withKey(b.place) { UTF8Order.compareBytes(k, $0) } }
            // A later group is newer: on a tie it wins.
            if c == 0 || (reverse ? c > 0 : c < 0) { best = (g, i) }
        }
        return best
    }
}

extension PendingGroup.IndexState {
    /// Calls `body` with key `i`'s bytes.
    func withKey<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        bytes.withUnsafeBytes { b in body(UnsafeRawBufferPointer(rebasing: b[start(i) ..< ends[i]])) }
    }

    /// Key `i`, copied.
    func key(_ i: Int) -> [UInt8] { Array(bytes[start(i) ..< ends[i]]) }

    /// The places of the keys in `[lower, upper)` (no upper bound when `upper` is empty).
    func range(from lower: [UInt8], to upper: [UInt8]) -> Range<Int> {
        // The first key not before `bound`, searching from `lo`.
        func firstNotBefore(_ bound: [UInt8], from lo: Int) -> Int {
            bound.withUnsafeBytes { x in
                var lo = lo, hi = ends.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if withKey(mid, { UTF8Order.compareBytes($0, x) }) < 0 { lo = mid + 1 } else { hi = mid }
                }
                return lo
            }
        }
        let lo = firstNotBefore(lower, from: 0)
        return lo ..< (upper.isEmpty ? ends.count : max(lo, firstNotBefore(upper, from: lo)))
    }
}
