import HearthModel
import Testing

private func fp(_ s: String) -> FieldPath { try! FieldPath.parse(s) }
private func keys(_ m: MapValue) -> [String] { m.fields.map(\.key) }
private func m(_ v: Value) -> MapValue { v.mapValue! }

/// A small deterministic generator for the randomized cases.
private struct LCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}

@Suite("MapValue")
struct MapValueTests {
    @Test("fields are kept sorted by UTF-8 bytes of their keys", arguments: [
        (["b", "a", "c"], ["a", "b", "c"]),
        (["é", "e\u{301}", "f", "e"], ["e", "e\u{301}", "f", "é"]),
        (["😀", "\u{FF5F}", "\u{FFFF}"], ["\u{FF5F}", "\u{FFFF}", "😀"]),
        (["a.b", "a", "a-b", "ab", "A", ""], ["", "A", "a", "a-b", "a.b", "ab"]),
        (["\u{212B}", "\u{C5}"], ["\u{C5}", "\u{212B}"]),  // canonically equivalent, both kept
    ] as [([String], [String])])
    func sorted(input: [String], expected: [String]) {
        let map = MapValue(input.map { MapValue.Field(key: $0, value: .string($0)) })
        #expect(keys(map).map(showScalars) == expected.map(showScalars))
        #expect(map.count == expected.count)
        for k in input { #expect(map[k] == .string(k), "lookup of \(showScalars(k))") }
        // Iteration follows the sorted order too.
        #expect(Array(map).map(\.key).map(showScalars) == expected.map(showScalars))
    }

    /// Many top-level changes merged at once give exactly what setting and removing them one by one gives
    /// (sorted by UTF-8 bytes, new keys inserted, absent keys removed or ignored).
    @Test("applying many top-level changes at once equals applying them one by one", arguments: 0..<40)
    func applyTopLevelEqualsOneByOne(seed: Int) {
        var rng = LCG(seed: UInt64(seed) &* 2_654_435_761 &+ 1)
        let alphabet = ["a", "b", "Z", "é", "e\u{301}", "_", "1", "\u{1F600}", "aa", "ab"]
        func key() -> String { (0..<(1 + Int(rng.next() % 3))).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined() }
        var start = MapValue()
        for _ in 0..<Int(rng.next() % 60) { start[key()] = .int(Int64(rng.next() % 100)) }
        var changes: [(key: String, value: Value?)] = []
        var seen = Set<[UInt8]>()
        for _ in 0..<Int(rng.next() % 80) {
            let k = key()
            guard seen.insert(Array(k.utf8)).inserted else { continue }
            changes.append((k, rng.next() % 3 == 0 ? nil : .string("v\(rng.next() % 10)")))
        }
        var oneByOne = start
        for c in changes { oneByOne[c.key] = c.value }
        var merged = start
        merged.apply(topLevel: changes)
        #expect(merged.fields == oneByOne.fields, "seed \(seed): \(changes.count) changes")
        #expect(zip(merged.fields, merged.fields.dropFirst()).allSatisfy { UTF8Order.less($0.key, $1.key) })
    }

    @Test("a later duplicate key replaces the earlier one")
    func duplicates() {
        let map = MapValue([.init(key: "a", value: 1), .init(key: "b", value: 2), .init(key: "a", value: 3)])
        #expect(map.count == 2)
        #expect(map["a"] == 3)
        #expect(keys(map) == ["a", "b"])
    }

    @Test("subscript get, set, replace and remove")
    func subscripts() {
        var map = MapValue()
        #expect(map.isEmpty)
        #expect(same(map["x"], .none), "missing key read as \(showOptional(map["x"]))")
        map["b"] = 1
        map["a"] = 2
        map["c"] = nil  // removing a missing key is a no-op
        #expect(keys(map) == ["a", "b"])
        map["b"] = "two"
        #expect(map["b"] == "two")
        #expect(map.count == 2)
        map["a"] = nil
        #expect(keys(map) == ["b"])
        map["b"] = .null  // null is a value, not a removal
        #expect(map["b"] == .null)
        #expect(map.count == 1)
        map["é"] = 1
        #expect(same(map["e\u{301}"], .none), "lookup must be by bytes, got \(showOptional(map["e\u{301}"]))")
        map["e\u{301}"] = 2
        #expect(map.count == 3)
        #expect(map["é"] == 1)
        #expect(map["e\u{301}"] == 2)
    }

    @Test("a missing key reads as absent, a null field as null", arguments: [
        ("missing", nil), ("", nil), ("A", nil), ("n", .some(.null)), ("v", .some(.int(1))), ("zz", nil),
    ] as [(String, Value?)])
    func absentVersusNull(key: String, expected: Value?) {
        let map = m(["n": .null, "v": 1])
        let got = map[key]
        #expect(same(got, expected), "map[\"\(key)\"] = \(showOptional(got)), expected \(showOptional(expected))")
        let fromEmpty = MapValue()[key]
        #expect(same(fromEmpty, .none), "MapValue()[\"\(key)\"] = \(showOptional(fromEmpty)), expected absent")
    }

    @Test("init(sorted:) keeps the given fields")
    func initSorted() {
        let map = MapValue(sorted: [.init(key: "a", value: 1), .init(key: "b", value: 2)])
        #expect(map == MapValue([.init(key: "b", value: 2), .init(key: "a", value: 1)]))
    }

    static let doc = m([
        "a": ["b": ["c": 1], "s": "str"],
        "top": true,
        "arr": [["x": 1]],
        "a.b": "dotted",
    ])

    @Test("value(at:)", arguments: [
        ("a", Optional<Value>.some(["b": ["c": 1], "s": "str"])),
        ("a.b", ["c": 1]),
        ("a.b.c", 1),
        ("a.s", "str"),
        ("top", true),
        ("`a.b`", "dotted"),
        ("missing", nil),
        ("a.missing", nil),
        ("a.b.c.d", nil),      // through an int
        ("a.s.x", nil),        // through a string
        ("top.x", nil),        // through a bool
        ("arr.0", nil),        // arrays are not traversed
        ("arr.x", nil),
    ] as [(String, Value?)])
    func valueAt(path: String, expected: Value?) {
        let actual = MapValueTests.doc.value(at: fp(path))
        #expect(same(actual, expected), "value(at: \(path)) = \(showOptional(actual)), expected \(showOptional(expected))")
    }

    @Test("set(_:at:) at the top level and into existing maps")
    func setExisting() {
        var map = MapValueTests.doc
        map.set(2, at: fp("a.b.c"))
        #expect(map.value(at: fp("a.b.c")) == 2)
        #expect(map.value(at: fp("a.s")) == "str", "siblings kept")
        map.set(3, at: fp("a.b.d"))
        #expect(map.value(at: fp("a.b")) == ["c": 2, "d": 3])
        map.set("new", at: fp("z"))
        #expect(map["z"] == "new")
        map.set(["k": 1], at: fp("a"))
        #expect(map["a"] == ["k": 1], "setting a map replaces it wholesale")
        map.set(0, at: fp("`a.b`"))
        #expect(map["a.b"] == 0)
    }

    @Test("set(_:at:) creates intermediate maps")
    func setCreates() {
        var map = MapValue()
        map.set(1, at: fp("x.y.z"))
        #expect(map == m(["x": ["y": ["z": 1]]]))
        map.set(2, at: fp("x.w"))
        #expect(map == m(["x": ["y": ["z": 1], "w": 2]]))
    }

    @Test("set(_:at:) replaces a non-map intermediate", arguments: [
        ("top.x", ["top": ["x": 9], "a": ["b": ["c": 1], "s": "str"], "arr": [["x": 1]], "a.b": "dotted"] as Value),
        ("a.s.q.r", ["top": true, "a": ["b": ["c": 1], "s": ["q": ["r": 9]]], "arr": [["x": 1]], "a.b": "dotted"]),
        ("arr.0", ["top": true, "a": ["b": ["c": 1], "s": "str"], "arr": ["0": 9], "a.b": "dotted"]),
    ] as [(String, Value)])
    func setReplaces(path: String, expected: Value) {
        var map = MapValueTests.doc
        map.set(9, at: fp(path))
        #expect(Value.map(map) == expected, "set 9 at \(path): got \(show(.map(map)))")
    }

    @Test("remove(at:)", arguments: [
        // nested: the parent map stays, possibly empty
        ("a.b.c", ["a": ["b": [:], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"] as Value),
        ("a.s", ["a": ["b": ["c": 1]], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("a", ["top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("`a.b`", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]]]),
        // missing paths are not errors and change nothing
        ("missing", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("a.missing", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("a.b.c.d", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("top.x", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
        ("missing.deep.path", ["a": ["b": ["c": 1], "s": "str"], "top": true, "arr": [["x": 1]], "a.b": "dotted"]),
    ] as [(String, Value)])
    func remove(path: String, expected: Value) {
        var map = MapValueTests.doc
        map.remove(at: fp(path))
        #expect(Value.map(map) == expected, "remove \(path): got \(show(.map(map)))")
    }

    @Test("removing the only nested field leaves an empty parent map")
    func removeLeavesEmptyParent() {
        var map = m(["p": ["q": 1]])
        map.remove(at: fp("p.q"))
        #expect(map == m(["p": [:]]))
        #expect(map["p"] == .map(MapValue()))
        var missingIntermediate = m(["p": 1])
        missingIntermediate.remove(at: fp("x.y"))
        #expect(missingIntermediate == m(["p": 1]), "no intermediate map is created by remove")
    }

    @Test("copies are independent (value semantics)")
    func valueSemantics() {
        let original = m(["a": ["b": 1]])
        var copy = original
        copy.set(2, at: fp("a.b"))
        copy.remove(at: fp("a"))
        #expect(original == m(["a": ["b": 1]]))
    }

    @Test("equality and hash ignore construction order")
    func hashing() {
        let x = MapValue([.init(key: "b", value: 1), .init(key: "a", value: 2)])
        var y = MapValue()
        y["a"] = 2
        y["b"] = 1
        #expect(x == y)
        #expect(x.hashValue == y.hashValue)
        #expect(MapValue([.init(key: "é", value: 1)]) != MapValue([.init(key: "e\u{301}", value: 1)]))
    }
}
