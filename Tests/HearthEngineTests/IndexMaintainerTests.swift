import Foundation
@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// `IndexMaintainer.changes` keys only the top-level fields whose values differ; it must give exactly the
/// difference between every key of the old version and every key of the new one.
extension QueryOracleTests.RNG {
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

@Suite struct IndexMaintainerTests {
    /// The oracle tests' deterministic generator, so a failure names its seed.
    typealias Random = QueryOracleTests.RNG

    static let names = ["a", "b", "c", "score", "tags", "m", "é"]

    /// Values whose equality is subtle for keys: 1 and 1.0, 0.0 and -0.0, NaN, duplicate array elements,
    /// nested maps.
    static func value(_ r: inout Random, depth: Int = 0) -> Value {
        switch r.below(depth > 1 ? 7 : 9) {
        case 0: return .int(Int64(r.below(3)))
        case 1: return .double([1.0, 0.0, -0.0, .nan, 2.5][r.below(5)])
        case 2: return .string(["x", "y", "é"][r.below(3)])
        case 3: return .bool(r.below(2) == 0)
        case 4: return .null
        case 5: return .timestamp(Timestamp(micros: Int64(r.below(3))))
        case 6: return .bytes([UInt8(r.below(3))])
        case 7: return .array((0..<r.below(4)).map { _ in value(&r, depth: depth + 1) })
        default: return .map(document(&r, depth: depth + 1))
        }
    }

    static func document(_ r: inout Random, depth: Int = 0) -> MapValue {
        var m = MapValue()
        for name in names where r.below(2) == 0 { m[name] = value(&r, depth: depth) }
        return m
    }

    /// `before` with some fields changed, removed or added (often none: an update that changes one field).
    static func edit(_ before: MapValue, _ r: inout Random) -> MapValue {
        var after = before
        for _ in 0..<r.below(3) {
            let name = names[r.below(names.count)]
            after[name] = r.below(4) == 0 ? nil : value(&r)
        }
        return after
    }

    static func reference(_ path: DocumentPath, _ before: MapValue?, _ after: MapValue?,
                          _ composites: [IndexDefinition]) -> (removed: Set<[UInt8]>, added: Set<[UInt8]>) {
        let old = Set(before.map { IndexMaintainer.keys(path, $0, composites: composites) } ?? [])
        let new = Set(after.map { IndexMaintainer.keys(path, $0, composites: composites) } ?? [])
        return (old.subtracting(new), new.subtracting(old))
    }

    @Test(arguments: 0..<8)
    func changesAreTheDifferenceOfAllKeys(seed: UInt64) throws {
        var r = Random(state: seed)
        let path = try DocumentPath(parsing: "users/u1/feed/p1")
        let composites = [
            IndexDefinition(id: 1, collectionID: "feed", scope: .collection,
                            fields: [.init(FieldPath(["a"]), .ascending), .init(FieldPath(["score"]), .descending)], state: .ready),
            IndexDefinition(id: 2, collectionID: "feed", scope: .collectionGroup,
                            fields: [.init(FieldPath(["tags"]), .arrayContains), .init(FieldPath(["m", "a"]), .ascending)], state: .ready),
            IndexDefinition(id: 3, collectionID: "other", scope: .collection,
                            fields: [.init(FieldPath(["a"]), .ascending), .init(FieldPath(["b"]), .ascending)], state: .ready),
        ]
        for i in 0..<400 {
            let before: MapValue? = r.below(8) == 0 ? nil : Self.document(&r)
            let after: MapValue? = r.below(8) == 0 ? nil : (before.map { Self.edit($0, &r) } ?? Self.document(&r))
            let defs = i % 2 == 0 ? composites : []
            var changes = IndexChanges()
            IndexMaintainer.changes(path, before: before, after: after, composites: defs, into: &changes)
            let expected = Self.reference(path, before, after, defs)
            let removed = changes.removed.map(\.key), added = changes.added.map(\.key)
            #expect(Set(removed) == expected.removed, "seed \(seed), case \(i): removed")
            #expect(Set(added) == expected.added, "seed \(seed), case \(i): added")
            #expect(Set(removed).count == removed.count && Set(added).count == added.count, "seed \(seed), case \(i): no key twice")
            #expect(changes.removed.allSatisfy { $0.path == path } && changes.added.allSatisfy { $0.path == path })
        }
    }

    /// Near Firestore's per-document limit the stored keys are a prefix of the full list, which depends on
    /// every field: such a document is diffed in full, and the result is still the difference of the two
    /// (truncated) key lists.
    @Test func aDocumentNearTheEntryLimitIsDiffedInFull() throws {
        let path = try DocumentPath(parsing: "c/d")
        // `z` sorts after `big`: its keys fall outside the stored prefix, so its change removes and adds
        // nothing; a diff of the changed field alone would.
        var before = MapValue()
        before["z"] = .int(1)
        before["big"] = .array((0..<(IndexMaintainer.maxEntriesPerDocument + 10)).map { .int(Int64($0)) })
        var after = before
        after["z"] = .int(2)
        var changes = IndexChanges()
        IndexMaintainer.changes(path, before: before, after: after, composites: [], into: &changes)
        let expected = Self.reference(path, before, after, [])
        #expect(expected.removed.isEmpty && expected.added.isEmpty)
        #expect(Set(changes.removed.map(\.key)) == expected.removed)
        #expect(Set(changes.added.map(\.key)) == expected.added)
    }

    /// The usual update (one top-level field changed, added or removed, a scalar on each side that has it, no
    /// composite index on the collection) takes a shorter path than the full diff; it gives the same entries,
    /// none when the two values encode alike (1 and 1.0), and updates it does not cover (an array or a map on
    /// either side, two fields changed, a composite that applies) still give the full diff's.
    @Test func oneChangedScalarGivesTheFullDiffsEntries() throws {
        let path = try DocumentPath(parsing: "users/u1/feed/p1")
        var base = MapValue()
        base["a"] = .string("x")
        base["a b"] = .int(7)
        base["score"] = .int(1)
        base["tags"] = .array([.string("t")])
        base["é"] = .null
        base["ref"] = .reference(try DocumentPath(parsing: "users/u2"))
        base["raw"] = .bytes([0, 1, 2])
        base["where"] = .geoPoint(GeoPoint(latitude: 1, longitude: 2))
        let composite = IndexDefinition(id: 1, collectionID: "feed", scope: .collection,
                                        fields: [.init(FieldPath(["a"]), .ascending), .init(FieldPath(["score"]), .descending)],
                                        state: .ready)
        let edits: [(String, Value?)] = [
            ("score", .int(2)), ("score", .double(1.0)), ("score", .double(.nan)), ("a b", .string("needs backticks")),
            ("é", .bool(true)), ("a", .timestamp(Timestamp(micros: 5))), ("score", .array([.int(1)])),
            ("score", .map(base)), ("tags", .int(1)), ("new", .int(1)), ("a", nil), ("score", .int(1)),
            ("ref", .reference(try DocumentPath(parsing: "users/u3"))), ("raw", .bytes([0, 1])), ("raw", .bytes([0, 0xFF])),
            ("where", .geoPoint(GeoPoint(latitude: 1, longitude: 3))), ("tags", .array([.string("t"), .string("u")])),
            ("tags", nil), ("new", .array([.int(1)])),
        ]
        // A composite on another collection applies to none of these documents: the short path still runs.
        let elsewhere = IndexDefinition(id: 2, collectionID: "other", scope: .collection,
                                        fields: [.init(FieldPath(["score"]), .ascending)], state: .ready)
        for (name, value) in edits {
            for composites in [[], [composite], [elsewhere]] {
                var after = base
                after[name] = value
                var twice = after
                twice[name == "a" ? "a b" : "a"] = .string("y")   // a second field, always another one
                for (label, edited) in [("one", after), ("two", twice)] {
                    var changes = IndexChanges()
                    IndexMaintainer.changes(path, before: base, after: edited, composites: composites, into: &changes)
                    let expected = Self.reference(path, base, edited, composites)
                    let removed = changes.removed.map(\.key), added = changes.added.map(\.key)
                    #expect(Set(removed) == expected.removed && removed.count == expected.removed.count,
                            "\(name) = \(String(describing: value)), \(label), \(composites.count) composite(s): removed")
                    #expect(Set(added) == expected.added && added.count == expected.added.count,
                            "\(name) = \(String(describing: value)), \(label), \(composites.count) composite(s): added")
                }
            }
        }
        // 1 and 1.0 are different values with the same entry: nothing changes.
        var same = base
        same["score"] = .double(1.0)
        var changes = IndexChanges()
        IndexMaintainer.changes(path, before: base, after: same, composites: [], into: &changes)
        #expect(changes.isEmpty)
    }
}
