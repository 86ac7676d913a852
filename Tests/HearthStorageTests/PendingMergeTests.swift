import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The merge of pending groups with SQLite's entries (`PendingCommits`, `PendingKeyCursor`), checked against a
/// model over many groups that touch the same keys, with random bounds, directions and limits, through the
/// store and through a snapshot, and with visitors that stop early; every few groups the backlog is coalesced
/// (`PendingGroup(coalescing:)`), so later reads merge groups of several tiers.
@Suite struct PendingMergeTests {
    /// Keys from a small alphabet, so groups touch each other's keys, remove what an older group added, and
    /// land on the bounds the reads use.
    private static func randomKey(_ rng: inout SplitMix) -> [UInt8] {
        (0..<Int(rng.next() % 4)).map { _ in [0x00, 0x01, 0x41, 0x7F, 0xFF][Int(rng.next() % 5)] }
    }

    private struct Model {
        var entries: [[UInt8]: String] = [:]
        var live: Set<String> = []

        /// The entries in `[lower, upper)` (no upper bound when empty), in order.
        func keys(_ lower: [UInt8], _ upper: [UInt8], reverse: Bool) -> [[UInt8]] {
            let inRange = entries.keys.filter { k in
                !k.lexicographicallyPrecedes(lower) && (upper.isEmpty || k.lexicographicallyPrecedes(upper))
            }.sorted { $0.lexicographicallyPrecedes($1) }
            return reverse ? inRange.reversed() : inRange
        }
    }

    @Test(arguments: [1, 2, 3])
    func mergedReadsMatchAModel(seed: UInt64) throws {
        let directory = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(directory) }
        let store = try StoreFixture.openSQLite(directory)
        defer { store.close() }
        var rng = SplitMix(seed: seed)
        var h = History()
        var model = Model()
        let ids = (0..<12).map { "d\($0)" }
        try store.apply([h.commit(ids.map { ("c/\($0)", bytes($0)) })])
        model.live = Set(ids)

        /// One random group: one to three commits, each changing a few keys and maybe one document.
        func group() -> [CommitRecord] {
            (0..<Int(rng.next() % 3) + 1).map { _ in
                var removed: [IndexEntry] = [], added: [IndexEntry] = []
                let present = model.entries.keys.sorted { $0.lexicographicallyPrecedes($1) }
                for _ in 0..<Int(rng.next() % 4) {
                    guard let k = present.randomElement(using: &rng), model.entries[k] != nil else { continue }
                    removed.append(entry(k, "c/\(model.entries[k]!)"))
                    model.entries[k] = nil
                }
                for _ in 0..<Int(rng.next() % 6) + 1 {
                    let k = Self.randomKey(&rng), id = ids[Int(rng.next() % UInt64(ids.count))]
                    // A key removed and added by one commit ends up added.
                    added.append(entry(k, "c/\(id)"))
                    model.entries[k] = id
                }
                var writes: [(String, [UInt8]?)] = []
                if rng.next() % 4 == 0 {
                    let id = ids[Int(rng.next() % UInt64(ids.count))]
                    let alive = !model.live.contains(id)
                    writes.append(("c/\(id)", alive ? bytes(id) : nil))
                    if alive { model.live.insert(id) } else { model.live.remove(id) }
                }
                return h.commit(writes, index: IndexChanges(removed: removed, added: added))
            }
        }

        // Some groups applied to SQLite (the base), then every later one held in the log (pending).
        for _ in 0..<15 { try store.apply(group()) }
        try store.drainApplier()
        store.holdApplier(1_000)
        for round in 0..<80 {
            try store.apply(group())
            #expect(store.applier!.backlogCommits > 0, "the groups are pending, not applied")
            if round % 9 == 8 { store.coalesceBacklog() }
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            for _ in 0..<6 {
                var lower = rng.next() % 4 == 0 ? [] : Self.randomKey(&rng)
                var upper = rng.next() % 3 == 0 ? [] : Self.randomKey(&rng)
                if !upper.isEmpty, upper.lexicographicallyPrecedes(lower) { swap(&lower, &upper) }
                if lower.isEmpty, upper.isEmpty, rng.next() % 2 == 0 { upper = [0xFF, 0xFF] }
                let reverse = rng.next() % 2 == 0
                let limit = [1, 2, 3, 5, 8, 1_000][Int(rng.next() % 6)]
                let all = model.keys(lower, upper, reverse: reverse)
                let what = "round \(round): [\(lower), \(upper)) reverse \(reverse) limit \(limit)"
                for reads in [store as any StoreReads, snapshot as any StoreReads] {
                    let entries = try reads.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit)
                    #expect(entries.map(\.key) == Array(all.prefix(limit)), "\(what)")
                    #expect(entries.map(\.path.id) == all.prefix(limit).map { model.entries[$0]! }, "\(what)")
                    let hits = try reads.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
                    let joined = all.filter { model.live.contains(model.entries[$0]!) }
                    #expect(hits.map(\.key) == Array(joined.prefix(limit)), "\(what): scanIndex")
                    #expect(hits.map { String(decoding: $0.document.data, as: UTF8.self) } == joined.prefix(limit).map { model.entries[$0]! },
                            "\(what): scanIndex's documents")
                    #expect(try reads.countIndex(from: lower, to: upper) == all.count, "\(what): count")
                    // A visitor that stops after `stop` entries saw exactly the first `stop`.
                    let stop = Int(rng.next() % 4) + 1
                    // Each visit reads its document through the same store or snapshot, as a query's stream does
                    // while the entries' scan steps.
                    var seen: [[UInt8]] = [], read: [Bool] = []
                    try reads.visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit) { (e) throws(HearthError) in
                        seen.append(Array(e.key))
                        read.append(try reads.get(try e.path()) != nil)
                        return seen.count < stop
                    }
                    let visited = Array(all.prefix(min(stop, limit)))
                    #expect(seen == visited, "\(what): stopped at \(stop)")
                    #expect(read == visited.map { model.live.contains(model.entries[$0]!) }, "\(what): documents read while visiting")
                }
            }
        }
        let status = try #require(store.applier)
        #expect(status.coalescedGroups >= 64 && status.backlogGroups < 16, "80 groups were coalesced into a few: \(status)")
        #expect(status.groups == 16, "only the groups applied before the hold reached SQLite: \(status)")
    }
}
