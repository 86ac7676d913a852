import HearthModel
import HearthStorage
import Testing

/// Secondary-index entries (`IndexChanges` in `apply`, `scanIndex`, `countIndex`), for every backend.
@Suite struct IndexConformanceTests {
    /// Keys that probe memcmp order: 0x00 and 0xFF bytes, prefixes of each other, a key per first byte.
    static let edgeKeys: [[UInt8]] = [
        [0x00], [0x00, 0x00], [0x00, 0xFF], [0x01], [0x7F], [0x7F, 0x00], [0x80],
        [0xFE, 0xFF], [0xFF], [0xFF, 0x00], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF],
    ]

    /// One document per edge key (`k/d<i>`, data = the key) and its entry.
    static func edgeCommit(_ h: inout History) -> CommitRecord {
        let writes = edgeKeys.indices.map { ("k/d\($0)", Optional(edgeKeys[$0])) }
        let added = edgeKeys.indices.reversed().map { entry(edgeKeys[$0], "k/d\($0)") }
        return h.commit(writes, index: IndexChanges(added: added))
    }

    @Test(arguments: Backend.allCases)
    func scansJoinDocumentsInKeyOrderBothWays(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([Self.edgeCommit(&h)])
        let sorted = Self.edgeKeys.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(sorted == Self.edgeKeys)  // the table above is already in memcmp order

        let all = try f.store.scanIndex(from: [], to: [], reverse: false, limit: 100)
        #expect(all.map(\.key) == sorted)
        for hit in all {
            #expect(hit.document.data == hit.key)
            #expect(try f.store.get(hit.document.path) == hit.document)
        }
        #expect(try f.store.scanIndex(from: [], to: [], reverse: true, limit: 100).map(\.key) == sorted.reversed())
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 3).map(\.key) == Array(sorted.prefix(3)))
        #expect(try f.store.scanIndex(from: [], to: [], reverse: true, limit: 3).map(\.key) == Array(sorted.suffix(3).reversed()))
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 0).isEmpty)
        #expect(try f.store.scanIndex(from: [], to: [], reverse: true, limit: -1).isEmpty)
        #expect(try f.store.scanIndex(from: [], to: [], reverse: true, limit: Int.max).count == sorted.count)
        #expect(try f.store.countIndex(from: [], to: []) == sorted.count)
    }

    /// `scanIndexEntries` returns, on the store and on a snapshot, the entries `scanIndex` scans (same bounds,
    /// order and limit) with their documents' paths, for every bound, direction and limit.
    @Test(arguments: Backend.allCases)
    func entryScansReturnWhatScansJoin(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([Self.edgeCommit(&h)])
        let snapshot = try f.store.snapshot()
        defer { snapshot.close() }
        let probes: [[UInt8]] = [[], [0x00, 0x00, 0x00], [0x50], [0xFF, 0xFF]] + Self.edgeKeys
        for reads in [f.store as any StoreReads, snapshot] {
            for lower in probes {
                for upper in probes {
                    for reverse in [false, true] {
                        for limit in [-1, 0, 1, 3, 100] {
                            let joined = try reads.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
                            let entries = try reads.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit)
                            #expect(entries.map(\.key) == joined.map(\.key), "\(lower) ..< \(upper) \(reverse) \(limit)")
                            #expect(entries.map(\.path) == joined.map(\.document.path), "\(lower) ..< \(upper) \(reverse) \(limit)")
                        }
                    }
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func boundsAreInclusiveLowerExclusiveUpperAndEmptyUpperIsUnbounded(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([Self.edgeCommit(&h)])
        let keys = Self.edgeKeys
        #expect(try f.store.scanIndex(from: [0x7F], to: [0x80], reverse: false, limit: 10).map(\.key) == [[0x7F], [0x7F, 0x00]])
        #expect(try f.store.scanIndex(from: [0x7F], to: [0x80], reverse: true, limit: 10).map(\.key) == [[0x7F, 0x00], [0x7F]])
        #expect(try f.store.scanIndex(from: [0xFF], to: [], reverse: true, limit: 2).map(\.key) == [[0xFF, 0xFF, 0xFF], [0xFF, 0xFF]])
        #expect(try f.store.countIndex(from: [0xFF], to: []) == 4)
        #expect(try f.store.countIndex(from: [0x80], to: [0x7F]) == 0)  // lower above upper: nothing
        #expect(try f.store.scanIndex(from: [0x80], to: [0x80], reverse: false, limit: 10).isEmpty)

        // Every pair of probes, against a reference filter; an empty upper bound means "to the end".
        let probes: [[UInt8]] = [[], [0x00, 0x00, 0x00], [0x50], [0xFF, 0xFF, 0xFF, 0xFF]] + keys
        for lower in probes {
            for upper in probes {
                let expected = keys.filter { k in
                    !k.lexicographicallyPrecedes(lower) && (upper.isEmpty || k.lexicographicallyPrecedes(upper))
                }
                #expect(try f.store.countIndex(from: lower, to: upper) == expected.count, "\(lower) ..< \(upper)")
                for limit in [1, 2, 100] {
                    let up = try f.store.scanIndex(from: lower, to: upper, reverse: false, limit: limit).map(\.key)
                    let down = try f.store.scanIndex(from: lower, to: upper, reverse: true, limit: limit).map(\.key)
                    #expect(up == Array(expected.prefix(limit)), "\(lower) ..< \(upper) limit \(limit)")
                    #expect(down == Array(expected.reversed().prefix(limit)), "\(lower) ..< \(upper) limit \(limit) desc")
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func removalsComeFirstAbsentRemovalsAreNoOpsAndAddingAKeyReplacesItsPath(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([("c/a", bytes("a")), ("c/b", bytes("b"))],
                                    index: IndexChanges(added: [entry([1], "c/a"), entry([2], "c/b")]))])
        func state() throws -> [String] {
            try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10).map { "\($0.key)=\($0.document.path.id)" }
        }
        // Removing entries that do not exist changes nothing (and the commit still counts).
        try f.store.apply([h.index(removing: [entry([9], "c/a"), entry([1, 0], "c/a")])])
        #expect(try state() == ["[1]=a", "[2]=b"])
        #expect(try f.store.lastSeq() == 2)
        // Adding an existing key points it at the new document.
        try f.store.apply([h.index(adding: [entry([1], "c/b")])])
        #expect(try state() == ["[1]=b", "[2]=b"])
        // Removal then addition of the same key in one commit: removals first, so the entry stays (re-pointed).
        try f.store.apply([h.index(removing: [entry([2], "c/b")], adding: [entry([2], "c/a")])])
        #expect(try state() == ["[1]=b", "[2]=a"])
        // Within one commit a later addition of the same key wins; removal matches by key alone.
        try f.store.apply([h.index(removing: [entry([1], "c/a")], adding: [entry([3], "c/a"), entry([3], "c/b")])])
        #expect(try state() == ["[2]=a", "[3]=b"])
        #expect(try f.store.countIndex(from: [], to: []) == 2)
    }

    @Test(arguments: Backend.allCases)
    func entriesFollowTheirDocumentsAndMissingDocumentsAreSkipped(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([("c/a", bytes("a1")), ("c/b", bytes("b1")), ("c/c", bytes("c1"))],
                                    index: IndexChanges(added: [entry([1], "c/a"), entry([2], "c/b"), entry([3], "c/c")]))])
        // An update and an entry move in one commit: the hit carries the new document.
        try f.store.apply([h.commit([("c/b", bytes("b2"))],
                                    index: IndexChanges(removed: [entry([2], "c/b")], added: [entry([2, 5], "c/b")]))])
        let hit = try #require(try f.store.scanIndex(from: [2], to: [3], reverse: false, limit: 5).first)
        #expect(hit.key == [2, 5] && hit.document.data == bytes("b2") && hit.document.seq == 2)
        // A delete removes its entries in the same commit.
        try f.store.apply([h.commit([("c/a", nil)], index: IndexChanges(removed: [entry([1], "c/a")]))])
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 5).map(\.key) == [[2, 5], [3]])
        #expect(try f.store.countIndex(from: [], to: []) == 2)

        // An entry whose document is missing (the engine never writes one) is skipped by scans, without using
        // up the limit, but still counted: countIndex counts entries.
        try f.store.apply([h.index(adding: [entry([2, 7], "c/ghost"), entry([0], "c/a")])])
        #expect(try f.store.countIndex(from: [], to: []) == 4)
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 2).map(\.key) == [[2, 5], [3]])
        #expect(try f.store.scanIndex(from: [], to: [], reverse: true, limit: 2).map(\.key) == [[3], [2, 5]])
        #expect(try f.store.scanIndex(from: [0], to: [2, 6], reverse: true, limit: 5).map(\.key) == [[2, 5]])
        // An entries-only scan returns such entries too (its caller finds the documents elsewhere).
        let snapshot = try f.store.snapshot()
        defer { snapshot.close() }
        for reads in [f.store as any StoreReads, snapshot] {
            let all = try reads.scanIndexEntries(from: [], to: [], reverse: false, limit: 10)
            #expect(all.map(\.key) == [[0], [2, 5], [2, 7], [3]])
            #expect(all.map(\.path.description) == ["c/a", "c/b", "c/ghost", "c/c"])
            #expect(try reads.scanIndexEntries(from: [], to: [], reverse: true, limit: 2).map(\.key) == [[3], [2, 7]])
        }
        // Once its document exists, the entry resolves.
        try f.store.apply([h.put("c/ghost", bytes("g"))])
        #expect(try f.store.scanIndex(from: [2, 6], to: [3], reverse: false, limit: 5).map(\.document.data) == [bytes("g")])
    }

    @Test(arguments: Backend.allCases)
    func indexOnlyCommitsTakeASeqAndLogNoMutations(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        let docs = h.commit((0..<5).map { ("c/d\($0)", bytes("\($0)")) })
        try f.store.apply([docs])
        // Backfill a new index in two index-only commits of one group.
        let backfill = [h.index(adding: (0..<3).map { entry([0x40, UInt8($0)], "c/d\($0)") }),
                        h.index(adding: (3..<5).map { entry([0x40, UInt8($0)], "c/d\($0)") })]
        try f.store.apply(backfill)
        #expect(try f.store.lastSeq() == 3)
        let log = try #require(try f.store.changes(after: 1, limit: 10))
        #expect(log.map(\.seq) == [2, 3])
        #expect(log.allSatisfy { $0.mutations.isEmpty && $0.indexChanges.isEmpty })
        #expect(log == backfill.map(\.logged))
        #expect(try f.store.scanIndex(from: [0x40], to: [0x41], reverse: true, limit: 10).map(\.document.path.id)
                == ["d4", "d3", "d2", "d1", "d0"])
        #expect(try f.store.countIndex(from: [0x40], to: [0x41]) == 5)
        // Documents are untouched by index-only commits.
        #expect(try f.store.get(path("c/d0"))?.seq == 1)
    }

    @Test(arguments: Backend.allCases)
    func aFailingGroupRollsBackIndexChanges(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([("c/a", bytes("a"))], index: IndexChanges(added: [entry([1], "c/a")]))])
        var bad = History(startingAfter: 1)
        let good = bad.commit([("c/b", bytes("b"))], index: IndexChanges(removed: [entry([1], "c/a")], added: [entry([2], "c/b")]))
        var broken = bad.index(adding: [entry([3], "c/a")])
        broken.seq = good.seq  // not ascending: the whole group is refused
        #expect(thrownError { () throws(HearthError) in try f.store.apply([good, broken]) }?.code == .internal)
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10).map(\.key) == [[1]])
        #expect(try f.store.countIndex(from: [], to: []) == 1)
        try f.store.apply([good])
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10).map(\.key) == [[2]])
    }

    /// Random batches, small and large (MemoryStore merges batches above `bulkThreshold` changes in one pass),
    /// checked against a dictionary after every group.
    @Test(arguments: Backend.allCases)
    func randomBatchesMatchAReferenceModel(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit((0..<20).map { ("c/d\($0)", bytes("\($0)")) })])
        var rng = SplitMix(seed: 42)
        var model: [[UInt8]: String] = [:]
        for round in 0..<30 {
            let size = round % 3 == 0 ? 200 : Int(rng.next() % 8) + 1
            func randomKey() -> [UInt8] { (0..<Int(rng.next() % 3) + 1).map { _ in [0x00, 0x01, 0x7F, 0xFF][Int(rng.next() % 4)] } + [UInt8(rng.next() % 4)] }
            let current = model.keys.sorted { $0.lexicographicallyPrecedes($1) }  // not Dictionary order: replayable
            let removed = (0..<size / 2).map { _ in entry(current.randomElement(using: &rng) ?? randomKey(), "c/d0") }
            let added = (0..<size).map { _ in entry(randomKey(), "c/d\(rng.next() % 20)") }
            for e in removed { model[e.key] = nil }
            for e in added { model[e.key] = e.path.id }
            try f.store.apply([h.index(removing: removed, adding: added)])

            let expected = model.keys.sorted { $0.lexicographicallyPrecedes($1) }
            let hits = try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10_000)
            #expect(hits.map(\.key) == expected, "round \(round)")
            #expect(hits.map(\.document.path.id) == expected.map { model[$0]! }, "round \(round)")
            #expect(try f.store.countIndex(from: [], to: []) == model.count)
            #expect(try f.store.scanIndex(from: [0x01], to: [0xFF], reverse: true, limit: 10_000).map(\.key)
                    == Array(expected.filter { !$0.lexicographicallyPrecedes([0x01]) && $0.lexicographicallyPrecedes([0xFF]) }.reversed()))
        }
    }
}

/// A small seeded generator, so a failing random test replays identically.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
