import HearthModel
import Testing

struct NumberCase: Sendable, CustomTestStringConvertible {
    let a: Value
    let b: Value
    let expected: Int
    init(_ a: Value, _ b: Value, _ expected: Int) { self.a = a; self.b = b; self.expected = expected }
    var testDescription: String { "\(show(a)) vs \(show(b)) → \(expected)" }
}

let twoTo53: Int64 = 9_007_199_254_740_992
let twoTo63 = 9.223372036854775808e18

let numberCases: [NumberCase] = [
    // 2^53 boundary: doubles cannot hold 2^53 + 1, the comparison must not round the int.
    NumberCase(.int(twoTo53), .double(9_007_199_254_740_992.0), 0),
    NumberCase(.int(twoTo53 + 1), .double(9_007_199_254_740_992.0), 1),
    NumberCase(.int(twoTo53 - 1), .double(9_007_199_254_740_992.0), -1),
    NumberCase(.int(twoTo53 + 1), .double(9_007_199_254_740_994.0), -1),
    NumberCase(.int(-twoTo53 - 1), .double(-9_007_199_254_740_992.0), -1),
    NumberCase(.int(-twoTo53 - 1), .double(-9_007_199_254_740_994.0), 1),
    // Int64.max vs 9.223372036854775807e18, which is 2^63 as a double (greater than Int64.max).
    NumberCase(.int(.max), .double(9.223372036854775807e18), -1),
    NumberCase(.int(.max), .double(twoTo63), -1),
    NumberCase(.int(.max), .double(9.223372036854774784e18), 1),  // largest double < 2^63
    NumberCase(.int(.max - 1023), .double(9.223372036854774784e18), 0),   // 2^63 - 1024 exactly
    NumberCase(.int(.max - 1024), .double(9.223372036854774784e18), -1),
    NumberCase(.int(9_223_372_036_854_774_784), .double(9.223372036854774784e18), 0),
    NumberCase(.int(.max), .double(1e300), -1),
    NumberCase(.int(.max), .double(.infinity), -1),
    // Int64.min is exactly -2^63.
    NumberCase(.int(.min), .double(-9.223372036854775808e18), 0),
    NumberCase(.int(.min + 1), .double(-9.223372036854775808e18), 1),
    NumberCase(.int(.min), .double(-9.223372036854777856e18), 1),  // next double below -2^63
    NumberCase(.int(.min), .double(-1e300), 1),
    NumberCase(.int(.min), .double(-.infinity), 1),
    // Small values and fractions.
    NumberCase(.int(42), .double(42.0), 0),
    NumberCase(.int(42), .double(42.5), -1),
    NumberCase(.int(43), .double(42.5), 1),
    NumberCase(.int(-42), .double(-42.5), 1),
    NumberCase(.int(-43), .double(-42.5), -1),
    NumberCase(.int(0), .double(0.5), -1),
    NumberCase(.int(0), .double(-0.5), 1),
    NumberCase(.int(-1), .double(-0.5), -1),
    NumberCase(.int(1), .double(0.9999999999999999), 1),
    NumberCase(.int(1), .double(1.0000000000000002), -1),
    // Zeros and subnormals.
    NumberCase(.int(0), .double(-0.0), 0),
    NumberCase(.int(0), .double(0.0), 0),
    NumberCase(.double(-0.0), .double(0.0), 0),
    NumberCase(.int(0), .double(.leastNonzeroMagnitude), -1),
    NumberCase(.int(0), .double(-.leastNonzeroMagnitude), 1),
    NumberCase(.int(0), .double(2 * .leastNonzeroMagnitude), -1),
    // NaN is below every number, including -infinity and Int64.min, and equal to every NaN.
    NumberCase(.double(.nan), .double(.nan), 0),
    NumberCase(.double(.nan), .double(Double(nan: 0x1234, signaling: false)), 0),
    NumberCase(.double(.nan), .double(.signalingNaN), 0),
    NumberCase(.double(.nan), .double(-.infinity), -1),
    NumberCase(.double(.nan), .int(.min), -1),
    NumberCase(.double(.nan), .int(0), -1),
    NumberCase(.double(.nan), .double(0), -1),
    // Infinities.
    NumberCase(.double(.infinity), .double(.infinity), 0),
    NumberCase(.double(-.infinity), .double(-.infinity), 0),
    NumberCase(.double(-.infinity), .double(.infinity), -1),
    NumberCase(.double(.infinity), .double(.greatestFiniteMagnitude), 1),
    // Ints against ints.
    NumberCase(.int(.min), .int(.max), -1),
    NumberCase(.int(-1), .int(0), -1),
    NumberCase(.int(5), .int(5), 0),
]

@Suite("Number comparison")
struct NumberOrderTests {
    @Test("exact int/double comparison", arguments: numberCases)
    func compare(c: NumberCase) {
        let ab = sign(ValueOrder.compare(c.a, c.b))
        let ba = sign(ValueOrder.compare(c.b, c.a))
        #expect(ab == c.expected, "compare(\(show(c.a)), \(show(c.b))) = \(ab), expected \(c.expected)")
        #expect(ba == -c.expected, "compare(\(show(c.b)), \(show(c.a))) = \(ba), expected \(-c.expected)")
    }

    @Test("an int and a double are never structurally equal, even when numerically equal", arguments: numberCases)
    func structuralIdentityDiffers(c: NumberCase) {
        switch (c.a, c.b) {
        case (.int, .double), (.double, .int):
            #expect(c.a != c.b, "\(show(c.a)) == \(show(c.b)) structurally")
        default:
            break
        }
    }

    struct DoublePair: Sendable, CustomTestStringConvertible {
        let x: Double, y: Double, expected: Int
        var testDescription: String { "\(x) vs \(y) → \(expected)" }
    }

    @Test("compareDoubles: NaN lowest and equal to itself, -0 == 0", arguments: [
        DoublePair(x: .nan, y: .nan, expected: 0),
        DoublePair(x: .nan, y: -.infinity, expected: -1),
        DoublePair(x: -.infinity, y: .nan, expected: 1),
        DoublePair(x: -0.0, y: 0.0, expected: 0),
        DoublePair(x: 1, y: 2, expected: -1),
        DoublePair(x: 2, y: 1, expected: 1),
        DoublePair(x: .infinity, y: .infinity, expected: 0),
    ])
    func compareDoubles(p: DoublePair) {
        #expect(sign(ValueOrder.compareDoubles(p.x, p.y)) == p.expected)
    }

    struct IntDouble: Sendable, CustomTestStringConvertible {
        let i: Int64, d: Double, expected: Int
        var testDescription: String { "\(i) vs \(d) → \(expected)" }
    }

    @Test("compareIntDouble directly", arguments: [
        IntDouble(i: .max, d: 9.223372036854775807e18, expected: -1),
        IntDouble(i: .min, d: -9.223372036854775808e18, expected: 0),
        IntDouble(i: 9_007_199_254_740_993, d: 9_007_199_254_740_992.0, expected: 1),
        IntDouble(i: 0, d: .nan, expected: 1),
        IntDouble(i: 0, d: -0.0, expected: 0),
        IntDouble(i: -3, d: -2.5, expected: -1),
        IntDouble(i: -2, d: -2.5, expected: 1),
    ])
    func compareIntDouble(p: IntDouble) {
        #expect(sign(ValueOrder.compareIntDouble(p.i, p.d)) == p.expected)
    }
}
