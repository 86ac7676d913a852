import HearthModel

/// The secondary-index entries of a `MemoryStore`: keys sorted by their bytes (memcmp order), each with the
/// document it points at, in two parallel arrays (`keys[i]` belongs to `paths[i]`). Keys are unique.
///
/// Contract (shared with every backend, see `DocumentStore.scanIndex`):
/// - `apply` removes first, then adds. Removing an absent key is a no-op; removal matches by key alone (the
///   entry's path is not compared, as `apply` trusts images). Adding a key that exists replaces its path; when
///   one batch adds a key twice, the later addition wins.
/// - `range(from:to:)` is the positions of the keys with `lower <= key < upper`; an empty `upper` means no
///   upper bound. A lower bound at or above a non-empty upper bound yields an empty range.
///
/// Cost: lookups are binary searches. Small batches insert and remove in place (O(n) moves each); a batch of
/// more than `bulkThreshold` changes is merged in one O(n + m log m) pass instead, so backfilling an index with
/// large index-only commits stays linear per commit rather than quadratic.
struct MemoryIndex {
    private(set) var keys: [[UInt8]] = []
    private(set) var paths: [DocumentPath] = []

    /// Batches with more changes than this are merged rather than applied one entry at a time.
    static let bulkThreshold = 32

    var count: Int { keys.count }

    /// Applies one commit's index changes: all removals, then all additions in order.
    mutating func apply(_ changes: IndexChanges) {
        if changes.removed.count + changes.added.count > Self.bulkThreshold {
            bulkRemove(changes.removed)
            bulkAdd(changes.added)
            return
        }
        for entry in changes.removed {
            let i = lowerBound(entry.key)
            if i < keys.count && keys[i] == entry.key {
                keys.remove(at: i)
                paths.remove(at: i)
            }
        }
        for entry in changes.added {
            let i = lowerBound(entry.key)
            if i < keys.count && keys[i] == entry.key {
                paths[i] = entry.path
            } else {
                keys.insert(entry.key, at: i)
                paths.insert(entry.path, at: i)
            }
        }
    }

    /// The positions of the keys with `lower <= key < upper` (no upper bound when `upper` is empty).
    func range(from lower: [UInt8], to upper: [UInt8]) -> Range<Int> {
        let start = lowerBound(lower)
        let end = upper.isEmpty ? keys.count : lowerBound(upper)
        return start < end ? start..<end : start..<start
    }

    /// The first position whose key is not below `key` (by bytes).
    func lowerBound(_ key: [UInt8]) -> Int {
        var lo = 0, hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid].lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    // MARK: - Bulk path

    private mutating func bulkRemove(_ removed: [IndexEntry]) {
        guard !removed.isEmpty, !keys.isEmpty else { return }
        let doomed = Set(removed.map(\.key))
        var keptKeys: [[UInt8]] = [], keptPaths: [DocumentPath] = []
        keptKeys.reserveCapacity(keys.count)
        keptPaths.reserveCapacity(keys.count)
        for i in keys.indices where !doomed.contains(keys[i]) {
            keptKeys.append(keys[i])
            keptPaths.append(paths[i])
        }
        keys = keptKeys
        paths = keptPaths
    }

    private mutating func bulkAdd(_ added: [IndexEntry]) {
        guard !added.isEmpty else { return }
        // Sort by key; among equal keys keep the last addition (the stable order index breaks ties).
        let sorted = added.enumerated().sorted { a, b in
            if a.element.key == b.element.key { return a.offset < b.offset }
            return a.element.key.lexicographicallyPrecedes(b.element.key)
        }
        var incoming: [IndexEntry] = []
        incoming.reserveCapacity(sorted.count)
        for (_, entry) in sorted {
            if incoming.last?.key == entry.key { incoming[incoming.count - 1] = entry } else { incoming.append(entry) }
        }
        var mergedKeys: [[UInt8]] = [], mergedPaths: [DocumentPath] = []
        mergedKeys.reserveCapacity(keys.count + incoming.count)
        mergedPaths.reserveCapacity(keys.count + incoming.count)
        var i = 0, j = 0
        while i < keys.count || j < incoming.count {
            if j == incoming.count || (i < keys.count && keys[i].lexicographicallyPrecedes(incoming[j].key)) {
                mergedKeys.append(keys[i])
                mergedPaths.append(paths[i])
                i += 1
            } else {
                if i < keys.count && keys[i] == incoming[j].key { i += 1 }  // replaced by the addition
                mergedKeys.append(incoming[j].key)
                mergedPaths.append(incoming[j].path)
                j += 1
            }
        }
        keys = mergedKeys
        paths = mergedPaths
    }
}
