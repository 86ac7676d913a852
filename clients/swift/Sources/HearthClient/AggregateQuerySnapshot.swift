import Foundation

/// The values of an `AggregateQuery` (Firestore's `AggregateQuerySnapshot`).
public final class AggregateQuerySnapshot: Sendable {
    public let query: AggregateQuery
    let values: [AggregateField: JSON]

    init(query: AggregateQuery, values: [AggregateField: JSON]) {
        self.query = query
        self.values = values
    }

    /// The count (0 when the query did not ask for one), as an `NSNumber` like Firestore's.
    public var count: NSNumber { NSNumber(value: countValue) }

    /// The count as an `Int`.
    public var countValue: Int { Int(values[.count()]?.intValue ?? 0) }

    /// An aggregation's value: `Int` or `Double` (`NSNull` for an average of nothing); nil if not requested.
    public func get(_ field: AggregateField) -> Any? {
        guard let v = values[field] else { return nil }
        switch v {
        case .int(let i): return Int(i)
        case .double(let d): return d
        case .null: return NSNull()
        default: return nil
        }
    }
}
