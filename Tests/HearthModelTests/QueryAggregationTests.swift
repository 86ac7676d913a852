import HearthModel
import Testing

@Suite struct QueryAggregationTests {
    static func sum(_ values: [Value]) -> Value { AggregateEvaluator.sum(values).value }
    static func avg(_ values: [Value]) -> Value {
        AggregateEvaluator.compute([.avg(QT.field("v"))], over: values.map { QT.fields(["v": $0]) })[0]
    }

    static func isNaN(_ v: Value) -> Bool { v.isNaN }

    @Test func sumStaysIntegerUntilADoubleOrOverflow() {
        #expect(Self.sum([]) == .int(0))
        #expect(Self.sum([1, 2, 3]) == .int(6))
        #expect(Self.sum([1, 2.5]) == .double(3.5))
        #expect(Self.sum([2.5, 1]) == .double(3.5))
        #expect(Self.sum([1.0, 2.0]) == .double(3.0))
        #expect(Self.sum([-5, 3]) == .int(-2))
        #expect(Self.sum([.int(.max), 1]) == .double(Double(Int64.max) + 1))
        #expect(Self.sum([.int(.max), .int(.max)]) == .double(2 * Double(Int64.max)))
        #expect(Self.sum([.int(.min), -1]) == .double(Double(Int64.min) - 1))
        // Integers are summed exactly: the result is an integer when the sum fits, whatever the order and the
        // partial sums on the way (Firestore: "a 64-bit integer if all aggregated numbers are integers and the sum
        // result does not overflow").
        #expect(Self.sum([.int(.max), 1, .int(.min)]) == .int(0))
        #expect(Self.sum([1, .int(.min), .int(.max)]) == .int(0))
        #expect(Self.sum([.int(.max), .int(.max), .int(.min), .int(.min)]) == .int(-2))
        #expect(Self.sum([.int(.max), .int(.min)]) == .int(-1))
        // Past Int64, the exact sum rounded once: not a running double that lost the small terms.
        #expect(Self.sum([.int(.max), .int(.max), 2, -1]) == .double(18_446_744_073_709_551_616.0))   // 2^64 - 1, rounded
        #expect(Self.sum([.int(.min), .int(.min), .int(.min)]) == .double(-27_670_116_110_564_327_424.0))
        // A double makes the result a double: the integers' exact sum plus the doubles.
        #expect(Self.sum([.int(.max), 1, .int(.min), 0.5]) == .double(0.5))
        #expect(Self.sum([0.5, .int(.max), 1, .int(.min)]) == .double(0.5))
        // Non-numeric values are skipped.
        #expect(Self.sum(["1", true, .null, [1], ["a": 1], 4]) == .int(4))
        #expect(Self.sum(["x"]) == .int(0))
        #expect(AggregateEvaluator.sum(["x", 1, 2.0]).count == 2)
    }

    /// The same values in any order give the same sum when they are integers (exact), and the same type always.
    @Test func sumOfIntegersDoesNotDependOnTheirOrder() {
        var rng = SystemRandomNumberGenerator()
        let big: [Int64] = [.max, .min, .max - 1, .min + 1, 1 << 62, -(1 << 62), 1, -1, 0]
        for _ in 0..<500 {
            let values: [Value] = (0..<Int.random(in: 1...8, using: &rng)).map { _ in .int(big.randomElement(using: &rng)!) }
            // The exact sum in 128 bits, two's complement: hi × 2^64 + lo.
            var hi: Int64 = 0, lo: UInt64 = 0
            for case .int(let i) in values {
                let (l, carry) = lo.addingReportingOverflow(UInt64(bitPattern: i))
                lo = l
                hi += (i < 0 ? -1 : 0) + (carry ? 1 : 0)
            }
            let fits = (hi == 0 && lo < 1 << 63) || (hi == -1 && lo >= 1 << 63)
            let first = Self.sum(values)
            if fits {
                #expect(first == .int(Int64(bitPattern: lo)), "\(values)")
            } else {
                guard case .double(let d) = first else { Issue.record("\(values): \(first)"); continue }
                let exact = Double(hi) * 18_446_744_073_709_551_616.0 + Double(lo)
                #expect(abs(d - exact) <= abs(exact) / Double(1 << 52), "\(values): \(d)")
            }
            for _ in 0..<4 {
                #expect(Self.sum(values.shuffled(using: &rng)) == first, "\(values)")
            }
        }
    }

    @Test func sumPropagatesNaNAndInfinities() {
        #expect(Self.isNaN(Self.sum([1, .double(.nan), 2])))
        #expect(Self.isNaN(Self.sum([.double(.infinity), .double(-.infinity)])))
        #expect(Self.sum([.double(.infinity), 1]) == .double(.infinity))
        #expect(Self.sum([.double(-.infinity), .int(.max)]) == .double(-.infinity))
    }

    @Test func average() {
        #expect(Self.avg([]) == .null)
        #expect(Self.avg(["a", .null, true]) == .null)
        #expect(Self.avg([1, 2]) == .double(1.5))
        #expect(Self.avg([4]) == .double(4.0))
        #expect(Self.avg([1, "skip", 2.5]) == .double(1.75))
        #expect(Self.avg([.int(.max), .int(.max)]) == .double(Double(Int64.max)))
        #expect(Self.isNaN(Self.avg([1, .double(.nan)])))
        #expect(Self.isNaN(Self.avg([.double(.infinity), .double(-.infinity)])))
    }

    @Test func aggregatesReadTheQueryResults() {
        let docs: [QueryEvaluator.Doc] = [
            QT.doc("c/a", ["p": 10, "r": 1]), QT.doc("c/b", ["p": 20, "r": 2]), QT.doc("c/c", ["p": "x", "r": 3]),
            QT.doc("c/d", ["r": 4]), QT.doc("c/e", ["p": 5.5, "r": 5]), QT.doc("other/f", ["p": 100, "r": 6]),
        ]
        let aggs: [Aggregation] = [.count, .sum(QT.field("p")), .avg(QT.field("p"))]
        #expect(AggregateEvaluator.run(QT.valid(QT.query()), aggs, over: docs) == [.int(5), .double(35.5), .double(35.5 / 3)])
        // Cursors, offset and limit apply before aggregating; select does not hide aggregated fields.
        let q = QT.query(orderBy: [QT.asc("r")], limit: 2, offset: 1, startAt: .init([1], inclusive: false), select: [])
        #expect(AggregateEvaluator.run(QT.valid(q), aggs, over: docs) == [.int(2), .int(0), .null])
        let q2 = QT.query(filter: QT.f("r", .lessThanOrEqual, 2), select: [])
        #expect(AggregateEvaluator.run(QT.valid(q2), aggs, over: docs) == [.int(2), .int(30), .double(15)])
        #expect(AggregateEvaluator.run(QT.valid(QT.query(filter: QT.f("r", .greaterThan, 9))), aggs, over: docs) == [.int(0), .int(0), .null])
    }
}
