/// An aggregation over a query's results.
public enum Aggregation: Sendable, Hashable {
    case count
    case sum(FieldPath)
    case avg(FieldPath)
}

/// Firestore's aggregation rules, over the documents a query returns (after cursors, offset and limit):
/// - `count`: the number of documents, as an integer;
/// - `sum`: numeric values only (others and missing fields are skipped); an integer when every input is an
///   integer and the sum fits Int64 (whatever the partial sums on the way: the integers are summed exactly), else
///   a double: the exact integer sum as a double plus the doubles' sum, so the integers' order never changes the
///   result; the sum of nothing is integer 0; NaN propagates; +inf + -inf is NaN;
/// - `avg`: a double (the sum as a double over the number of numeric values); null when there are none.
public enum AggregateEvaluator {
    /// Runs the query (without projection) and computes each aggregation over its results, in order.
    public static func run(_ q: ValidQuery, _ aggregations: [Aggregation], over docs: [QueryEvaluator.Doc]) -> [Value] {
        compute(aggregations, over: QueryEvaluator.results(q, over: docs).map(\.fields))
    }

    /// Computes each aggregation over already-selected documents' fields.
    public static func compute(_ aggregations: [Aggregation], over docs: [MapValue]) -> [Value] {
        aggregations.map { a in
            switch a {
            case .count: return .int(Int64(docs.count))
            case .sum(let f): return sum(docs.compactMap { $0.value(at: f) }).value
            case .avg(let f):
                var s = Accumulator()
                for d in docs { if let v = d.value(at: f) { s.add(v) } }
                guard s.count > 0 else { return .null }
                return .double(s.asDouble / Double(s.count))
            }
        }
    }

    /// The running sum of the numeric values among `values` and how many there were.
    public static func sum(_ values: [Value]) -> (value: Value, count: Int) {
        var acc = Accumulator()
        for v in values { acc.add(v) }
        return (acc.value, acc.count)
    }

    /// The integers summed exactly, as `wraps` × 2^64 + `int` (`int` wrapping around; fewer than 2^63 values
    /// cannot overflow `wraps`), and the doubles apart: an integer when there were no doubles and the sum fits
    /// Int64 (no wrap left over), else the two as one double.
    struct Accumulator {
        var int: Int64 = 0
        var wraps: Int64 = 0
        var double: Double? = nil
        var count = 0

        mutating func add(_ v: Value) {
            switch v {
            case .int(let i):
                count += 1
                let (r, overflow) = int.addingReportingOverflow(i)
                if overflow { wraps += i < 0 ? -1 : 1 }
                int = r
            case .double(let x):
                count += 1
                double = (double ?? 0) + x
            default:
                break
            }
        }

        var value: Value {
            if double == nil, wraps == 0 { return .int(int) }
            return .double(asDouble)
        }

        /// The integers' sum as a double (2^64 × `wraps` is exact), plus the doubles.
        var asDouble: Double { Double(wraps) * 18_446_744_073_709_551_616.0 + Double(int) + (double ?? 0) }
    }
}
