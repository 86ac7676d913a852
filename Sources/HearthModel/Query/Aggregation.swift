/// An aggregation over a query's results.
public enum Aggregation: Sendable, Hashable {
    case count
    case sum(FieldPath)
    case avg(FieldPath)
}

/// Firestore's aggregation rules, over the documents a query returns (after cursors, offset and limit):
/// - `count`: the number of documents, as an integer;
/// - `sum`: numeric values only (others and missing fields are skipped); an integer while every input is an
///   integer and the running sum does not overflow Int64, else a double (from the first double input or the
///   overflowing step on); the sum of nothing is integer 0; NaN propagates; +inf + -inf is NaN;
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

    /// Integer while possible, double after the first double input or integer overflow.
    struct Accumulator {
        var int: Int64 = 0
        var double: Double? = nil
        var count = 0

        mutating func add(_ v: Value) {
            switch v {
            case .int(let i):
                count += 1
                if let d = double { double = d + Double(i); return }
                let (r, overflow) = int.addingReportingOverflow(i)
                if overflow { double = Double(int) + Double(i) } else { int = r }
            case .double(let x):
                count += 1
                double = (double ?? Double(int)) + x
            default:
                break
            }
        }

        var value: Value { double.map(Value.double) ?? .int(int) }
        var asDouble: Double { double ?? Double(int) }
    }
}
