import Foundation

/// Where an aggregation is computed; Hearth always asks the server (Firestore's `AggregateSource`).
public enum AggregateSource: Sendable { case server }

/// One aggregation (Firestore's `AggregateField`): `count()`, `sum(field)`, `average(field)`.
public struct AggregateField: Sendable, Hashable {
    enum Kind: Hashable, Sendable { case count, sum(String), average(String) }
    let kind: Kind

    public static func count() -> AggregateField { AggregateField(kind: .count) }
    /// Sum of the numeric values of `field` (an integer while every input is one and it does not overflow).
    public static func sum(_ field: String) -> AggregateField { AggregateField(kind: .sum(field)) }
    public static func sum(_ path: FieldPath) -> AggregateField { AggregateField(kind: .sum(path.dotted)) }
    /// Average of the numeric values of `field` (a double, or `NSNull` when there is nothing to average).
    public static func average(_ field: String) -> AggregateField { AggregateField(kind: .average(field)) }
    public static func average(_ path: FieldPath) -> AggregateField { AggregateField(kind: .average(path.dotted)) }

    var wire: JSON {
        switch kind {
        case .count: return .object(["count": .object([:])])
        case .sum(let f): return .object(["sum": .string(f)])
        case .average(let f): return .object(["avg": .string(f)])
        }
    }
}
