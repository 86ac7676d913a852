import HearthModel

/// How a query is executed: for each disjunct (branch) of its filter, key ranges of one index scanned in
/// order, and whether the ranges alone enforce every filter and cursor (`exact`: the scan can stop after
/// `offset + limit` entries). Every fetched document is still checked against the whole query.
public struct QueryPlan: Sendable {
    public struct Range: Sendable, Equatable {
        /// Inclusive lower bound.
        public var lower: [UInt8]
        /// Exclusive upper bound; empty means unbounded.
        public var upper: [UInt8]
    }

    /// The index a branch scans. Its description is what explain shows (`single-field call_records.callDate`,
    /// `composite #3 call_records (customerId asc, callDate desc)`), formatted only when asked for.
    public enum IndexUsed: Sendable, CustomStringConvertible {
        case collection(CollectionPath)
        case collectionGroup(String)
        case singleField(CollectionPath, FieldPath, arrayContains: Bool)
        case composite(IndexDefinition)

        public var description: String {
            switch self {
            case .collection(let c): return "collection \(c)"
            case .collectionGroup(let id): return "collection group \(id)"
            case .singleField(let c, let f, let contains): return "single-field \(c).\(f)\(contains ? " array-contains" : "")"
            case .composite(let def): return "composite #\(def.id) \(def.summary)"
            }
        }
    }

    public struct Branch: Sendable {
        public var index: IndexUsed
        public var ranges: [Range]
        /// Scan each range from its upper end down.
        public var reverse: Bool
        public var exact: Bool
    }

    public var branches: [Branch]
}

/// Byte-range arithmetic for plans: bounds meet as the larger lower and the smaller upper (an empty upper
/// is +infinity).
extension QueryPlan.Range {
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in UTF8Order.compareBytes(pa, pb) } }
    }

    /// All keys starting with `prefix`.
    static func prefix(_ p: [UInt8]) -> QueryPlan.Range {
        QueryPlan.Range(lower: p, upper: IndexKey.prefixSuccessor(p) ?? [])
    }

    mutating func raiseLower(_ l: [UInt8]) {
        if QueryPlan.Range.compare(l, lower) > 0 { lower = l }
    }

    mutating func lowerUpper(_ u: [UInt8]?) {
        guard let u else { return }            // nil: no bound (successor of all-0xFF)
        if upper.isEmpty || QueryPlan.Range.compare(u, upper) < 0 { upper = u }
    }

    var isEmpty: Bool { !upper.isEmpty && QueryPlan.Range.compare(lower, upper) >= 0 }
}
