import HearthModel
import Testing

struct EqualityCase: Sendable, CustomTestStringConvertible {
    let a: Value
    let b: Value
    let equal: Bool
    init(_ a: Value, _ b: Value, _ equal: Bool) { self.a = a; self.b = b; self.equal = equal }
    var testDescription: String { "\(show(a)) \(equal ? "==" : "!=") \(show(b))" }
}

let equalityCases: [EqualityCase] = [
    // Numbers: structural identity, not numeric equality.
    EqualityCase(.int(3), .double(3.0), false),
    EqualityCase(.int(3), .int(3), true),
    EqualityCase(.double(3.0), .double(3.0), true),
    EqualityCase(.int(0), .double(0.0), false),
    EqualityCase(.double(.nan), .double(.nan), true),
    EqualityCase(.double(.nan), .double(Double(nan: 0x1234, signaling: false)), true),
    EqualityCase(.double(.nan), .double(-.nan), true),
    EqualityCase(.double(0.0), .double(-0.0), false),  // Firestore's valueEquals tells -0.0 from 0.0
    EqualityCase(.double(.infinity), .double(.infinity), true),
    EqualityCase(.double(.infinity), .double(-.infinity), false),
    // Strings: by UTF-8 bytes, so canonically equivalent strings differ.
    EqualityCase("é", "e\u{301}", false),
    EqualityCase("é", "é", true),
    EqualityCase("\u{212B}", "\u{C5}", false),   // ANGSTROM SIGN vs Å (canonically equivalent)
    EqualityCase("a", "a\u{0}", false),
    EqualityCase("", "", true),
    // Different types are never equal.
    EqualityCase(nil, false, false),
    EqualityCase(.int(0), false, false),
    EqualityCase("", .bytes([]), false),
    EqualityCase([], [:], false),
    EqualityCase(.int(0), ts(0), false),
    EqualityCase("a/b", ref("a/b"), false),
    // Other scalars.
    EqualityCase(nil, nil, true),
    EqualityCase(true, true, true),
    EqualityCase(true, false, false),
    EqualityCase(ts(5), .timestamp(Timestamp(seconds: 0, nanos: 5_000)), true),
    EqualityCase(ts(5), ts(6), false),
    EqualityCase(.bytes([1, 2]), .bytes([1, 2]), true),
    EqualityCase(.bytes([1, 2]), .bytes([1, 2, 0]), false),
    EqualityCase(ref("a/b"), ref("a/b"), true),
    EqualityCase(ref("a/b"), ref("a/b/c/d"), false),
    EqualityCase(ref("é/x"), ref("e\u{301}/x"), false),
    EqualityCase(geo(1, 2), geo(1, 2), true),
    EqualityCase(geo(1, 2), geo(2, 1), false),
    // Arrays: element-wise structural identity, order matters.
    EqualityCase([1, 2], [1, 2], true),
    EqualityCase([1, 2], [2, 1], false),
    EqualityCase([.int(1)], [.double(1.0)], false),
    EqualityCase([.double(.nan)], [.double(.nan)], true),
    EqualityCase([["é"]], [["e\u{301}"]], false),
    // Maps: insertion order does not matter, keys compared by bytes.
    EqualityCase(["a": 1, "b": 2], ["b": 2, "a": 1], true),
    EqualityCase(["a": 1, "b": 2], ["a": 1], false),
    EqualityCase(["a": .int(1)], ["a": .double(1.0)], false),
    EqualityCase(["é": 1], ["e\u{301}": 1], false),
    EqualityCase(["x": ["a": 1, "b": [1, "z"]]], ["x": ["b": [1, "z"], "a": 1]], true),
    EqualityCase(["x": ["a": 1, "b": [1, "z"]]], ["x": ["b": ["z", 1], "a": 1]], false),
    EqualityCase([:], [:], true),
]

@Suite("Value equality and hashing")
struct ValueEqualityTests {
    @Test("structural identity", arguments: equalityCases)
    func equality(c: EqualityCase) {
        #expect((c.a == c.b) == c.equal, "\(show(c.a)) == \(show(c.b)) is \(c.a == c.b)")
        #expect((c.b == c.a) == c.equal, "== is not symmetric")
        if c.equal {
            #expect(c.a.hashValue == c.b.hashValue, "equal values hash differently")
        }
    }

    @Test("every value equals itself and hashes consistently", arguments: orderedGroups.indices)
    func reflexive(i: Int) {
        for v in orderedGroups[i] {
            #expect(v == v, "\(show(v)) != itself")
            var copy = v
            copy = v
            #expect(copy.hashValue == v.hashValue)
        }
    }

    @Test("a Set deduplicates exactly the structurally equal values")
    func setDedup() {
        let values: [Value] = [
            .int(1), .double(1.0), .int(1), .double(.nan), .double(Double(nan: 7, signaling: false)),
            "é", "e\u{301}", "é", ["a": 1, "b": 2], ["b": 2, "a": 1], .double(0.0), .double(-0.0),
        ]
        let set = Set(values)
        // int(1), double(1.0), nan, "é", "e\u{301}", map, 0.0, -0.0
        #expect(set.count == 8)
    }

    @Test("typeName and typeOrder", arguments: [
        (Value.null, "null", Value.TypeOrder.null),
        (true, "boolean", .bool),
        (.int(1), "integer", .number),
        (.double(1), "double", .number),
        (ts(0), "timestamp", .timestamp),
        ("s", "string", .string),
        (.bytes([]), "bytes", .bytes),
        (ref("a/b"), "reference", .reference),
        (geo(0, 0), "geopoint", .geoPoint),
        ([], "array", .array),
        ([:], "map", .map),
    ] as [(Value, String, Value.TypeOrder)])
    func typeNames(v: Value, name: String, order: Value.TypeOrder) {
        #expect(v.typeName == name)
        #expect(v.typeOrder == order)
        #expect(v.isNumber == (order == .number))
    }

    @Test("accessors")
    func accessors() {
        #expect(Value.double(.nan).isNaN)
        #expect(!Value.int(0).isNaN)
        #expect(!Value.double(1).isNaN)
        #expect(Value.string("x").stringValue == "x")
        #expect(Value.int(1).stringValue == nil)
        #expect(Value.array([1]).arrayValue == [1])
        #expect(Value.map(MapValue()).mapValue == MapValue())
        #expect(Value.array([]).mapValue == nil)
    }

    @Test("literals build the expected cases")
    func literals() {
        let v: Value = ["n": nil, "b": true, "i": 7, "d": 2.5, "s": "x", "a": [1, "y"]]
        guard case .map(let m) = v else { Issue.record("not a map"); return }
        #expect(m["n"] == .null)
        #expect(m["b"] == .bool(true))
        #expect(m["i"] == .int(7))
        #expect(m["d"] == .double(2.5))
        #expect(m["s"] == .string("x"))
        #expect(m["a"] == .array([.int(1), .string("y")]))
        let dup: Value = ["k": 1, "k": 2]
        #expect(dup == .map(MapValue([.init(key: "k", value: 2)])), "a later duplicate key wins")
    }
}
