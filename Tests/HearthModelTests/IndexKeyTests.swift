import HearthModel
import Testing

/// Values in ascending Firestore order; values inside one group are equal under `ValueOrder` and must
/// encode identically.
let indexKeyGroups: [[Value]] = [
    [.null],
    [false], [true],
    [.double(.nan), .double(-.nan), .double(Double(nan: 0x55, signaling: false))],
    [.double(-.infinity)],
    [.double(-.greatestFiniteMagnitude)],
    [.double(-9.223372036854777856e18)],                       // next double below -2^63
    [.int(.min), .double(-9.223372036854775808e18)],
    [.int(.min + 1)],
    [.int(-9_007_199_254_740_995)],                             // -(2^53 + 3): not a double
    [.int(-9_007_199_254_740_994), .double(-9_007_199_254_740_994.0)],
    [.int(-9_007_199_254_740_993)],
    [.int(-9_007_199_254_740_992), .double(-9_007_199_254_740_992.0)],
    [.double(-1.5)],
    [.int(-1), .double(-1.0)],
    [.double(-.leastNonzeroMagnitude)],
    [.int(0), .double(0.0), .double(-0.0)],
    [.double(.leastNonzeroMagnitude)],
    [.double(0.5)],
    [.int(1), .double(1.0)],
    [.int(42), .double(42.0)],
    [.double(42.000000000000007)],
    [.int(9_007_199_254_740_991)],
    [.int(9_007_199_254_740_992), .double(9_007_199_254_740_992.0)],
    [.int(9_007_199_254_740_993)],
    [.int(9_007_199_254_740_994), .double(9_007_199_254_740_994.0)],
    [.int(4_611_686_018_427_387_905)],                          // 2^62 + 1
    [.int(9_223_372_036_854_774_783)],                          // 2^63 - 1025
    [.double(9.223372036854774784e18)],                         // 2^63 - 1024, largest double below 2^63
    [.int(9_223_372_036_854_774_785)],
    [.int(.max - 1)],
    [.int(.max)],
    [.double(9.223372036854775808e18)],                         // 2^63
    [.double(.greatestFiniteMagnitude)],
    [.double(.infinity)],
    [.timestamp(Timestamp(micros: Timestamp.minMicros))],
    [.timestamp(Timestamp(micros: -1))],
    [.timestamp(Timestamp(micros: 0))],
    [.timestamp(Timestamp(micros: 1))],
    [.timestamp(Timestamp(micros: Timestamp.maxMicros))],
    [""], ["\u{0}"], ["\u{0}\u{0}"], ["\u{0}a"], ["\u{1}"], ["a"], ["a\u{0}"], ["a\u{0}b"], ["a\u{1}"], ["ab"],
    ["e\u{301}"], ["é"], ["\u{FFFF}"], ["😀"],
    [.bytes([])], [.bytes([0])], [.bytes([0, 0])], [.bytes([0, 1])], [.bytes([1])], [.bytes([255])], [.bytes([255, 0])],
    [QT.reference("a/b")], [QT.reference("a/b/c/d")], [QT.reference("a/b\u{0}")], [QT.reference("a/b0")],
    [QT.reference("a\u{0}/b")], [QT.reference("b/a")],
    [.geoPoint(GeoPoint(latitude: -90, longitude: -180))],
    [.geoPoint(GeoPoint(latitude: -90, longitude: 0))],
    [.geoPoint(GeoPoint(latitude: 0, longitude: 0)), .geoPoint(GeoPoint(latitude: -0.0, longitude: -0.0))],
    [.geoPoint(GeoPoint(latitude: 0, longitude: 180))],
    [.geoPoint(GeoPoint(latitude: 90, longitude: -180))],
    [[]], [[.null]], [[false]], [[.double(.nan)]], [[1], [1.0]], [[1, 2], [1.0, 2.0]], [[1, 2, .null]], [[1, "a"]],
    [[2]], [["a"]], [[[]]], [[[1]]], [[[:]]],
    [[:]], [["": .null]], [["\u{0}": 1]], [["\u{1}": 1]], [["a": 1], ["a": 1.0]], [["a": 1, "b": 0]], [["a": 2]],
    [["a\u{0}": 0]], [["b": 0]], [["b": ["c": []]]], [["b": ["c": [1]]]],
]

@Suite struct IndexKeyTests {
    static func cmp(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
    }

    static func sgn(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

    @Test func tableOrderMatchesValueOrderBothDirections() {
        let flat = indexKeyGroups.enumerated().flatMap { g in g.element.map { (g.offset, $0) } }
        let asc = flat.map { IndexKey.key($0.1) }
        let desc = flat.map { IndexKey.key($0.1, descending: true) }
        var checked = 0
        for i in flat.indices {
            for j in flat.indices {
                let expected = Self.sgn(flat[i].0 - flat[j].0)
                let order = Self.sgn(ValueOrder.compare(flat[i].1, flat[j].1))
                #expect(order == expected, "ValueOrder \(flat[i].1) vs \(flat[j].1)")
                if Self.cmp(asc[i], asc[j]) != expected || Self.cmp(desc[i], desc[j]) != -expected {
                    Issue.record("encoding order of \(flat[i].1) vs \(flat[j].1): asc \(asc[i]) vs \(asc[j])")
                }
                checked += 1
            }
        }
        #expect(checked == flat.count * flat.count)
        #expect(flat.count >= 100)
    }

    /// The collection name written from a path's segments is byte for byte the encoding of the string naming it,
    /// for top-level and nested collections, segments with zero bytes, and non-ASCII segments.
    @Test func aCollectionNameEncodesAsItsString() throws {
        let paths = ["c/d", "users/u1/user-feed/p1", "a/b/c/d/e/f", "c\u{0}x/d", "c/d\u{0}/e\u{0}\u{0}/f",
                     "caf\u{E9}/d", "\u{1F600}/x/\u{0}/y"]
        for text in paths {
            let path = try DocumentPath(parsing: text)
            var direct: [UInt8] = []
            IndexKey.encodeCollectionName(of: path, into: &direct)
            #expect(direct == IndexKey.key(.string(path.collectionDescription)), "\(text)")
            #expect(direct == IndexKey.key(.string(path.collection.description)), "\(text)")
        }
    }

    @Test func equalValuesEncodeIdentically() {
        for group in indexKeyGroups {
            let keys = Set(group.map { IndexKey.key($0) })
            #expect(keys.count == 1, "\(group)")
        }
        #expect(IndexKey.key(42) == IndexKey.key(42.0))
        #expect(IndexKey.key(.double(-0.0)) == IndexKey.key(0))
    }

    @Test func numberLayout() {
        // Tag, 8 bytes of the largest double ≤ n, 2 bytes of remainder.
        let k = IndexKey.key(.int(9_007_199_254_740_993))
        #expect(k.count == 11)
        #expect(k[0] == IndexKey.tag(.number))
        #expect(Array(k[1..<9]) == Array(IndexKey.key(9_007_199_254_740_992.0)[1..<9]))
        #expect(Array(k[9...]) == [0, 1])
        #expect(Array(IndexKey.key(.int(.max))[9...]) == [0x03, 0xFF])   // 2^63 - 1 = (2^63 - 1024) + 1023
        #expect(Array(IndexKey.key(.double(.nan))[1..<9]) == [UInt8](repeating: 0, count: 8))
        #expect(IndexKey.key(.double(.nan), descending: true) == IndexKey.key(.double(.nan)).map { ~$0 })
    }

    @Test func encodingsArePrefixFree() {
        let keys = indexKeyGroups.map { IndexKey.key($0[0]) }
        for (i, a) in keys.enumerated() {
            for (j, b) in keys.enumerated() where i != j {
                #expect(!b.starts(with: a), "\(indexKeyGroups[i][0]) is a prefix of \(indexKeyGroups[j][0])")
            }
        }
    }

    @Test func randomValuesAndTuples() {
        var rng = QueryTestRNG(seed: 0x5EED_1234)
        let values = (0..<600).map { _ in rng.value(depth: 0) }
        let keys = values.map { IndexKey.key($0) }
        let dkeys = values.map { IndexKey.key($0, descending: true) }
        var failures = 0
        for _ in 0..<40_000 {
            let i = rng.below(values.count), j = rng.below(values.count)
            let expected = Self.sgn(ValueOrder.compare(values[i], values[j]))
            if Self.cmp(keys[i], keys[j]) != expected || Self.cmp(dkeys[i], dkeys[j]) != -expected {
                failures += 1
                if failures < 5 { Issue.record("\(values[i]) vs \(values[j])") }
            }
        }
        #expect(failures == 0)
        // Composite keys (value asc, value desc, document key) sort as tuples.
        let paths = ["c/a", "c/b", "c/a/d/x", "d/a"].map(QT.path)
        for _ in 0..<5_000 {
            let a = (values[rng.below(40)], values[rng.below(40)], paths[rng.below(paths.count)])
            let b = (values[rng.below(40)], values[rng.below(40)], paths[rng.below(paths.count)])
            func key(_ t: (Value, Value, DocumentPath)) -> [UInt8] {
                var out: [UInt8] = []
                IndexKey.encode(t.0, into: &out)
                IndexKey.encode(t.1, descending: true, into: &out)
                IndexKey.encodeDocumentKey(t.2, into: &out)
                return out
            }
            var expected = ValueOrder.compare(a.0, b.0)
            if expected == 0 { expected = -ValueOrder.compare(a.1, b.1) }
            if expected == 0 { expected = ResourcePath.compare(a.2.path, b.2.path) }
            #expect(Self.cmp(key(a), key(b)) == Self.sgn(expected), "\(a) vs \(b)")
        }
    }

    @Test func typeRanges() {
        for desc in [false, true] {
            for group in indexKeyGroups {
                let v = group[0]
                let key = IndexKey.key(v, descending: desc)
                for t in [Value.TypeOrder.null, .bool, .number, .timestamp, .string, .bytes, .reference, .geoPoint, .array, .map] {
                    let lo = IndexKey.typePrefix(t, descending: desc)
                    let hi = IndexKey.prefixSuccessor(lo)
                    let inside = !key.lexicographicallyPrecedes(lo) && (hi.map { key.lexicographicallyPrecedes($0) } ?? true)
                    #expect(inside == (t == v.typeOrder), "\(v) in \(t) range, descending \(desc)")
                }
            }
        }
    }

    @Test func successors() {
        #expect(IndexKey.prefixSuccessor([0x01, 0x02]) == [0x01, 0x03])
        #expect(IndexKey.prefixSuccessor([0x01, 0xFF, 0xFF]) == [0x02])
        #expect(IndexKey.prefixSuccessor([0xFF]) == nil)
        #expect(IndexKey.prefixSuccessor([]) == nil)
        #expect(IndexKey.immediateSuccessor([0x05]) == [0x05, 0x00])
        // Every key extending a value's encoding (a longer index key) sorts below the prefix successor.
        let v = IndexKey.key("abc")
        var longer = v
        IndexKey.encodeDocumentKey(QT.path("z/zzz"), into: &longer)
        let next = IndexKey.prefixSuccessor(v)!
        #expect(longer.lexicographicallyPrecedes(next))
        // Greater values are not inside the prefix range, even those whose bytes extend "abc".
        #expect(next.lexicographicallyPrecedes(IndexKey.key("abc\u{0}")))
        #expect(next.lexicographicallyPrecedes(IndexKey.key("abd")))
        var docKey: [UInt8] = []
        IndexKey.encodeDocumentKey(QT.path("a/b"), into: &docKey)
        #expect(docKey == IndexKey.key(QT.reference("a/b")))
    }
}

/// SplitMix64, for reproducible random values.
struct QueryTestRNG {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    mutating func string() -> String {
        let alphabet: [String] = ["", "\u{0}", "a", "b", "é", "e\u{301}", "😀", "\u{1}", "z"]
        return (0..<below(3)).map { _ in alphabet[below(alphabet.count)] }.joined()
    }

    mutating func value(depth: Int) -> Value {
        let edgeInts: [Int64] = [.min, .min + 1, -9_007_199_254_740_993, -1, 0, 1, 42, 9_007_199_254_740_993, .max - 1, .max]
        let edgeDoubles: [Double] = [.nan, -.infinity, -1e300, -9.223372036854775808e18, -0.5, -0.0, 0, 0.5, 42,
                                     9.007199254740992e15, 9.223372036854775808e18, .infinity]
        switch below(depth < 2 ? 12 : 10) {
        case 0: return .null
        case 1: return .bool(below(2) == 0)
        case 2: return .int(below(2) == 0 ? edgeInts[below(edgeInts.count)] : Int64(bitPattern: next()) >> Int64(below(64)))
        case 3: return .double(below(2) == 0 ? edgeDoubles[below(edgeDoubles.count)] : Double(bitPattern: next()))
        case 4: return .int(Int64(below(7)) - 3)
        case 5: return .timestamp(Timestamp(micros: Int64(below(5)) - 2))
        case 6: return .string(string())
        case 7: return .bytes((0..<below(3)).map { _ in [0, 1, 255][below(3)] })
        case 8: return .reference(QT.path(["a/b", "a/b/c/d", "a/b0", "b/a", "a/\u{0}"][below(5)]))
        case 9: return .geoPoint(GeoPoint(latitude: Double(below(3)) - 1, longitude: [-0.0, 0, 1][below(3)]))
        case 10: return .array((0..<below(3)).map { _ in value(depth: depth + 1) })
        default:
            var m = MapValue()
            for _ in 0..<below(3) { m[string()] = value(depth: depth + 1) }
            return .map(m)
        }
    }
}
