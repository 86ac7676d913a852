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
}
