import HearthModel
import Testing

/// Groups of values in ascending Firestore order; values within a group compare equal
/// (in the spirit of firebase-js-sdk values.test.ts "orders types correctly").
let orderedGroups: [[Value]] = [
    // null
    [.null],
    // booleans
    [false],
    [true],
    // numbers: NaN lowest (all NaNs equal), then by exact numeric value, ints and doubles interleaved
    [.double(.nan), .double(Double(nan: 0x1234, signaling: false)), .double(-.nan)],
    [.double(-.infinity)],
    [.double(-.greatestFiniteMagnitude)],
    [.int(.min), .double(-9.223372036854775808e18)],
    [.int(.min + 1)],
    [.double(-1.1)],
    [.int(-1), .double(-1.0)],
    [.double(-.leastNormalMagnitude)],
    [.double(-.leastNonzeroMagnitude)],
    [.double(-0.0), .double(0.0), .int(0)],
    [.double(.leastNonzeroMagnitude)],
    [.double(2 * .leastNonzeroMagnitude)],  // 1e-323 rounds to this
    [.double(.leastNormalMagnitude)],
    [.double(0.1)],
    [.int(1), .double(1.0)],
    [.double(1.1)],
    [.int(9_007_199_254_740_992), .double(9_007_199_254_740_992.0)],  // 2^53
    [.int(9_007_199_254_740_993)],                                    // 2^53 + 1 (not a double)
    [.int(9_007_199_254_740_994), .double(9_007_199_254_740_994.0)],
    [.double(9.223372036854774784e18)],                               // largest double below 2^63
    [.int(.max)],
    [.double(9.223372036854775807e18)],                               // rounds to 2^63 > Int64.max
    [.double(.greatestFiniteMagnitude)],
    [.double(.infinity)],
    // timestamps
    [ts(Timestamp.minMicros)],
    [ts(-1_000_001)],
    [ts(-1)],
    [ts(0), .timestamp(Timestamp(seconds: 0, nanos: 999))],
    [ts(1), .timestamp(Timestamp(seconds: 0, nanos: 1_000))],
    [ts(1_000_000), .timestamp(Timestamp(seconds: 1))],
    [ts(Timestamp.maxMicros)],
    // strings, by UTF-8 bytes
    [""],
    ["\u{0}"],
    ["\u{1}"],
    [" "],
    ["A"],
    ["Z"],
    ["a"],
    ["a\u{0}"],
    ["aa"],
    ["ab"],
    ["b"],
    ["e"],
    ["e\u{301}"],          // 65 CC 81
    ["\u{7F}"],
    ["\u{80}"],            // C2 80
    ["é"],                 // C3 A9 (precomposed)
    ["\u{7FF}"],           // DF BF
    ["\u{800}"],           // E0 A0 80
    ["\u{D7FF}"],          // ED 9F BF
    ["\u{E000}"],          // EE 80 80 (UTF-16 0xE000 sorts above surrogates; UTF-8 agrees here)
    ["\u{FF5F}"],          // EF BD 9F — UTF-16 would put this after the emoji (0xFF5F > 0xD83D)
    ["\u{FFFF}"],          // EF BF BF
    ["\u{10000}"],         // F0 90 80 80
    ["😀"],                // F0 9F 98 80
    ["😀a"],
    ["\u{10FFFF}"],        // F4 8F BF BF
    // bytes
    [.bytes([])],
    [.bytes([0])],
    [.bytes([0, 0])],
    [.bytes([0, 1])],
    [.bytes([1])],
    [.bytes([127])],
    [.bytes([128])],
    [.bytes([255])],
    [.bytes([255, 0])],
    // references, segment by segment
    [ref("a/b")],
    [ref("a/b/c/d")],
    [ref("a/b/c/e")],
    [ref("a/b0")],         // "b" < "b0", so a/b/c/d < a/b0 (string order would agree here)
    [ref("a/b0/x/y")],
    [ref("a-c/d")],        // "a" < "a-c" segment-wise; as a whole string "a-c/d" < "a/b" ('-' < '/')
    [ref("a.b/c")],
    [ref("b/a")],
    [ref("e\u{301}/x")],
    [ref("é/x")],
    // geopoints: latitude, then longitude
    [geo(-90, -180)],
    [geo(-90, 0)],
    [geo(-90, 180)],
    [geo(-1, 100)],
    [geo(0, -180)],
    [geo(0, 0), geo(-0.0, -0.0)],
    [geo(0, 1)],
    [geo(1, -180)],
    [geo(90, 180)],
    // arrays: element-wise, then length
    [[]],
    [[nil]],
    [[nil, nil]],
    [[false]],
    [[.double(.nan)]],
    [[.int(1)], [.double(1.0)]],
    [[1, 2]],
    [[1, 2, nil]],
    [[1, "a"]],
    [[1, []]],
    [[2]],
    [["a"]],
    [[[]]],
    [[[:]]],
    // maps: sorted keys, then values, then size
    [[:]],
    [["": nil]],
    [["a": nil]],
    [["a": false]],
    [["a": .int(1)], ["a": .double(1.0)]],
    [["a": 1, "b": nil]],
    [["a": 1, "b": 2], ["b": 2, "a": 1]],
    [["a": 1, "b": 2, "c": 0]],
    [["a": 1, "c": 0]],
    [["a": 2]],
    [["a": "x"]],
    [["a0": nil]],
    [["ab": nil]],
    [["b": nil]],
    [["b": nil, "c": nil]],
    [["e\u{301}": 0]],
    [["é": 0]],
    [["😀": 0]],
]

/// One representative per type, in type order.
let typeRepresentatives: [Value] = [
    nil, true, .int(-5), ts(0), "", .bytes([]), ref("a/b"), geo(0, 0), [], [:],
]

@Suite("ValueOrder")
struct ValueOrderTests {
    @Test("groups are in strictly ascending order and equal within", arguments: orderedGroups.indices)
    func orderedTable(i: Int) {
        for (j, other) in orderedGroups.enumerated() {
            let expected = i < j ? -1 : (i > j ? 1 : 0)
            for a in orderedGroups[i] {
                for b in other {
                    let c = sign(ValueOrder.compare(a, b))
                    #expect(c == expected, "compare(\(show(a)), \(show(b))) = \(c), expected \(expected) (groups \(i), \(j))")
                }
            }
        }
    }

    @Test("antisymmetry and helpers agree with compare", arguments: orderedGroups.indices)
    func antisymmetry(i: Int) {
        for a in orderedGroups[i] {
            #expect(ValueOrder.compare(a, a) == 0, "compare(\(show(a)), itself) != 0")
            for group in orderedGroups {
                for b in group {
                    let ab = ValueOrder.compare(a, b), ba = ValueOrder.compare(b, a)
                    #expect(sign(ab) == -sign(ba), "compare(\(show(a)), \(show(b))) = \(ab) but reversed = \(ba)")
                    #expect(ValueOrder.less(a, b) == (ab < 0))
                    #expect(ValueOrder.equal(a, b) == (ab == 0))
                }
            }
        }
    }

    @Test("sorting a shuffled table reproduces the group order")
    func sortShuffled() {
        var rng = SplitMix(seed: 0x5EED)
        let flat = orderedGroups.enumerated().flatMap { (g, vs) in vs.map { (g, $0) } }
        for _ in 0..<20 {
            let sorted = flat.shuffled(using: &rng).sorted { ValueOrder.less($0.1, $1.1) }
            let groups = sorted.map(\.0)
            #expect(groups == groups.sorted(), "sorted order does not follow the table")
        }
    }

    @Test("type order: null < bool < number < timestamp < string < bytes < reference < geopoint < array < map",
          arguments: typeRepresentatives.indices)
    func typeOrder(i: Int) {
        let a = typeRepresentatives[i]
        #expect(a.typeOrder.rawValue == i)
        for (j, b) in typeRepresentatives.enumerated() {
            #expect(sign(ValueOrder.compare(a, b)) == (i < j ? -1 : (i > j ? 1 : 0)),
                    "\(show(a)) vs \(show(b))")
            #expect((a.typeOrder < b.typeOrder) == (i < j))
        }
    }

    @Test("the smallest value of a later type sorts after the largest of an earlier one")
    func typeOrderExtremes() {
        let pairs: [(Value, Value)] = [
            (true, .double(.nan)),
            (true, .double(-.infinity)),
            (.double(.infinity), ts(Timestamp.minMicros)),
            (.int(.max), ts(Timestamp.minMicros)),
            (ts(Timestamp.maxMicros), ""),
            ("\u{10FFFF}\u{10FFFF}", .bytes([])),
            (.bytes([255, 255, 255]), ref("a/a")),
            (ref("\u{10FFFF}/\u{10FFFF}"), geo(-90, -180)),
            (geo(90, 180), []),
            ([[:]], [:]),
        ]
        for (a, b) in pairs {
            #expect(ValueOrder.compare(a, b) < 0, "\(show(a)) should sort before \(show(b))")
            #expect(ValueOrder.compare(b, a) > 0)
        }
    }
}

/// Deterministic RNG so shuffles are reproducible.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
