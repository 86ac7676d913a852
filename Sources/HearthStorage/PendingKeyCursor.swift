import HearthModel

/// The index keys pending groups touch in one range, each once with its newest state, handed out one at a
/// time in key order (or reverse key order), for a read that merges them with a base's entries.
///
/// Why a cursor: a read of `limit` entries needs the touched keys only as far as its page reaches. Each group
/// keeps its keys sorted (`PendingGroup.IndexState`), so the cursor finds each group's part of the range by
/// binary search and then merges the groups' heads, copying only the keys it hands out. A copy of every key in
/// the range, which the page then mostly discarded, cost a wide read 90-100 ms while a bulk load of 40,000
/// documents waited for the applier.
///
/// Of a key several groups touch, the newest group's state is the one handed out (groups are oldest first).
struct PendingKeyCursor {
    private var states: [PendingGroup.IndexState] = []
    /// Per group, the part of its keys not handed out yet: `lo ..< hi`.
    private var lo: [Int] = []
    private var hi: [Int] = []
    /// The groups with keys left, as a binary heap whose top holds the next key (of equal heads, the newest
    /// group's): a step costs O(log groups), and the backlog may hold hundreds of groups.
    private var heap: [Int] = []
    let reverse: Bool
    /// At least the number of keys in the range (a key several groups touch counts once per group).
    let bound: Int

    /// The touched keys of `[lower, upper)` (no upper bound when `upper` is empty) of `groups` (oldest first).
    init(_ groups: [PendingGroup], from lower: [UInt8], to upper: [UInt8], reverse: Bool) {
        self.reverse = reverse
        var bound = 0
        if upper.isEmpty || PendingGroup.precedes(lower, upper) {
            for g in groups {
                let state = g.indexKeys
                let range = state.range(from: lower, to: upper)
                guard !range.isEmpty else { continue }
                states.append(state)
                lo.append(range.lowerBound)
                hi.append(range.upperBound)
                bound += range.count
            }
        }
        self.bound = bound
        for g in states.indices { push(g) }
    }

    /// Whether no key is left.
    var isEmpty: Bool { heap.isEmpty }

    /// The next key in the cursor's order and its state after the groups (nil: removed), or nil when none is
    /// left.
    mutating func next() -> (key: [UInt8], path: DocumentPath?)? {
        guard let top = heap.first else { return nil }
        let i = place(top)
        let key = states[top].key(i)
        let path = states[top].paths[i]
        // Every group whose head is this key moves past it.
        key.withUnsafeBytes { k in
            while let g = heap.first, states[g].withKey(place(g), { UTF8Order.compareBytes($0, k) }) == 0 {
                pop()
                if reverse { hi[g] -= 1 } else { lo[g] += 1 }
                if lo[g] < hi[g] { push(g) }
            }
        }
        return (key, path)
    }

    /// -1, 0 or 1 as the next key comes before, is, or comes after `key` in the cursor's order; nil when no
    /// key is left.
    func compareNext(to key: UnsafeRawBufferPointer) -> Int? {
        guard let top = heap.first else { return nil }
        let c = states[top].withKey(place(top)) { UTF8Order.compareBytes($0, key) }
        return reverse ? -c : c
    }

    /// The place of group `g`'s next key.
    private func place(_ g: Int) -> Int { reverse ? hi[g] - 1 : lo[g] }

    /// Whether group `a`'s head comes first: the earlier key in the cursor's order, or of equal keys the newer
    /// group's (groups are oldest first).
    private func first(_ a: Int, _ b: Int) -> Bool {
        let c = states[a].withKey(place(a)) { x in states[b].withKey(place(b)) { UTF8Order.compareBytes(x, $0) } }
        if c == 0 { return a > b }
        return reverse ? c > 0 : c < 0
    }

    private mutating func push(_ g: Int) {
        heap.append(g)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard first(heap[i], heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var best = i
            if l < heap.count, first(heap[l], heap[best]) { best = l }
            if r < heap.count, first(heap[r], heap[best]) { best = r }
            guard best != i else { return }
            heap.swapAt(i, best)
            i = best
        }
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
