import HearthEngine
import HearthModel
import Testing

/// Firestore's transform rules, one row per case.
@Suite struct TransformTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let current: Value?
        let transform: Transform
        let expected: Value
        var testDescription: String { "\(String(describing: current)) \(transform.name) -> \(expected)" }
    }

    static let t0 = Timestamp(micros: 1_000_000)

    static let cases: [Case] = [
        Case(current: nil, transform: .increment(5), expected: 5),
        Case(current: "text", transform: .increment(5), expected: 5),
        Case(current: 1, transform: .increment(2), expected: 3),
        Case(current: 1, transform: .increment(0.5), expected: 1.5),
        Case(current: 1.5, transform: .increment(1), expected: 2.5),
        Case(current: .int(Int64.max), transform: .increment(1), expected: .int(Int64.max)),
        Case(current: .int(Int64.min), transform: .increment(-1), expected: .int(Int64.min)),
        Case(current: .int(Int64.max - 1), transform: .increment(1), expected: .int(Int64.max)),
        Case(current: nil, transform: .maximum(3), expected: 3),
        Case(current: 3, transform: .maximum(3.0), expected: 3),
        Case(current: 3.0, transform: .maximum(3), expected: 3.0),
        Case(current: 3, transform: .maximum(4.5), expected: 4.5),
        Case(current: 5.5, transform: .maximum(4), expected: 5.5),
        Case(current: 1, transform: .maximum(.double(.nan)), expected: .double(.nan)),
        Case(current: .double(.nan), transform: .maximum(1), expected: .double(.nan)),
        Case(current: 0, transform: .maximum(-0.0), expected: 0),
        Case(current: -0.0, transform: .minimum(0), expected: -0.0),
        Case(current: 3, transform: .minimum(2.5), expected: 2.5),
        Case(current: "a", transform: .minimum(2), expected: 2),
        Case(current: 1, transform: .minimum(.double(.nan)), expected: .double(.nan)),
        Case(current: nil, transform: .arrayUnion([1, 2]), expected: [1, 2]),
        Case(current: "x", transform: .arrayUnion([1]), expected: [1]),
        Case(current: [1, 2], transform: .arrayUnion([2.0, 3, 3]), expected: [1, 2, 3]),
        Case(current: [.double(.nan)], transform: .arrayUnion([.double(.nan), nil, nil]), expected: [.double(.nan), nil]),
        Case(current: [1, 2, 1, 3], transform: .arrayRemove([1.0]), expected: [2, 3]),
        Case(current: nil, transform: .arrayRemove([1]), expected: []),
        Case(current: [["a": 1], ["a": 2]], transform: .arrayRemove([["a": 1.0]]), expected: [["a": 2]]),
        Case(current: 7, transform: .serverTimestamp, expected: .timestamp(t0)),
        // Array transforms compare by Firestore's value equality: 1 == 1.0, -0.0 == 0.0, NaN == NaN, maps
        // and arrays element by element; strings by bytes; different types never.
        Case(current: [0], transform: .arrayUnion([-0.0, 0.0]), expected: [0]),
        Case(current: [-0.0], transform: .arrayUnion([0]), expected: [-0.0]),
        Case(current: [0, 0.0, -0.0, 1], transform: .arrayRemove([-0.0]), expected: [1]),
        Case(current: [.double(.nan), 1, .double(-.nan)], transform: .arrayRemove([.double(.nan)]), expected: [1]),
        Case(current: [1, 1], transform: .arrayUnion([2, 1]), expected: [1, 1, 2]),     // existing repeats stay
        Case(current: [], transform: .arrayUnion([2.0, 2, 2]), expected: [2.0]),       // the first operand wins
        Case(current: [.int(9_007_199_254_740_993)], transform: .arrayUnion([.double(9_007_199_254_740_992.0)]),
             expected: [.int(9_007_199_254_740_993), .double(9_007_199_254_740_992.0)]),
        Case(current: ["é"], transform: .arrayUnion(["e\u{301}", "é"]), expected: ["é", "e\u{301}"]),
        Case(current: [1], transform: .arrayUnion(["1", true, nil, 1.0]), expected: [1, "1", true, nil]),
        Case(current: [["a": 1]], transform: .arrayUnion([["a": 1.0], ["a": [1.0]]]), expected: [["a": 1], ["a": [1.0]]]),
        Case(current: [["a": [1]], ["a": [2]]], transform: .arrayRemove([["a": [1.0]]]), expected: [["a": [2]]]),
        Case(current: [["a": 1, "b": 2]], transform: .arrayRemove([["a": 1]]), expected: [["a": 1, "b": 2]]),
        Case(current: [.bytes([1]), .reference(try! DocumentPath(parsing: "a/b")), .geoPoint(GeoPoint(latitude: 0, longitude: 0))],
             transform: .arrayUnion([.bytes([1]), .reference(try! DocumentPath(parsing: "a/b")), .geoPoint(GeoPoint(latitude: -0.0, longitude: 0))]),
             expected: [.bytes([1]), .reference(try! DocumentPath(parsing: "a/b")), .geoPoint(GeoPoint(latitude: 0, longitude: 0))]),
        Case(current: [.timestamp(t0), 1], transform: .arrayRemove([.timestamp(t0), .timestamp(Timestamp(micros: 1))]), expected: [1]),
        Case(current: [1, 2], transform: .arrayRemove([]), expected: [1, 2]),
        Case(current: "x", transform: .arrayRemove([1]), expected: []),
        Case(current: [1, 2], transform: .arrayUnion([]), expected: [1, 2]),
    ]

    @Test(arguments: cases)
    func transform(_ c: Case) {
        let (v, _) = FieldTransformer.transform(c.current, c.transform, commitTime: Self.t0)
        #expect(v == c.expected)
    }

    @Test func nestedFieldIsCreated() {
        var fields = MapValue()
        let r = FieldTransformer.apply([FieldTransform(field: fp("a.b.c"), transform: .increment(1))], to: &fields, commitTime: Self.t0)
        #expect(fields == m(["a": ["b": ["c": 1]]]))
        #expect(r == [1])
    }

    @Test func arrayTransformsReportNull() {
        var fields = MapValue()
        let r = FieldTransformer.apply([FieldTransform(field: fp("a"), transform: .arrayUnion([1]))], to: &fields, commitTime: Self.t0)
        #expect(r == [nil])
    }

    /// The array transforms as Firestore defines them, pairwise (quadratic): the reference the linear
    /// implementation must agree with.
    static func referenceUnion(_ array: [Value], _ elements: [Value]) -> [Value] {
        var out = array
        for e in elements where !out.contains(where: { ValueOrder.equal($0, e) }) { out.append(e) }
        return out
    }

    static func referenceRemove(_ elements: [Value], from array: [Value]) -> [Value] {
        array.filter { v in !elements.contains(where: { ValueOrder.equal($0, v) }) }
    }

    struct RNG: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Values with many equal pairs under `ValueOrder` that are not structurally identical.
    static let pool: [Value] = [
        nil, true, false, 0, 0.0, -0.0, 1, 1.0, 2, 2.5, .double(.nan), .double(-.nan), .double(.infinity),
        .int(Int64.max), .double(9.223372036854775808e18), "a", "b", "é", "e\u{301}", .bytes([]), .bytes([0]),
        .timestamp(t0), .geoPoint(GeoPoint(latitude: 0, longitude: 0)), .geoPoint(GeoPoint(latitude: -0.0, longitude: 0)),
        [], [1], [1.0], [1, "a"], [:], ["a": 1], ["a": 1.0], ["a": 1, "b": [0]], ["a": 1, "b": [-0.0]], ["b": 1],
    ]

    @Test(arguments: 0..<8)
    func arrayTransformsAgreeWithThePairwiseDefinition(seed: UInt64) {
        var r = RNG(state: seed)
        func randomArray(_ maxCount: Int) -> [Value] {
            (0..<Int(r.next() % UInt64(maxCount + 1))).map { _ in Self.pool[Int(r.next() % UInt64(Self.pool.count))] }
        }
        for _ in 0..<300 {
            let array = randomArray(24), elements = randomArray(24)
            let (u, _) = FieldTransformer.transform(.array(array), .arrayUnion(elements), commitTime: Self.t0)
            #expect(u == .array(Self.referenceUnion(array, elements)), "\(array) ∪ \(elements)")
            let (d, _) = FieldTransformer.transform(.array(array), .arrayRemove(elements), commitTime: Self.t0)
            #expect(d == .array(Self.referenceRemove(elements, from: array)), "\(array) - \(elements)")
        }
    }
}
