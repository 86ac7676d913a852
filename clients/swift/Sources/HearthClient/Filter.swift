import Foundation

/// A query filter, composable with `orFilter`/`andFilter` (Firestore's `Filter`). Fields are dotted paths
/// (`String`) or `FieldPath`s; `FieldPath.documentID()` filters by document key (a String ID in a collection
/// query, a path or `DocumentReference` in a collection-group query). A value that cannot be encoded makes
/// the query fail with `.invalidArgument` when it runs.
public struct Filter: Sendable {
    let node: Result<FilterNode, HearthError>

    init(_ node: Result<FilterNode, HearthError>) { self.node = node }

    static func make(_ field: Any, _ op: String, _ value: Any) -> Filter {
        Filter(Result {
            let f = try FieldPath.wireForm(of: field)
            return .field(f, op, try WireCodec.encode(value, at: f))
        }.mapError(HearthError.from))
    }

    /// Documents matching any of `filters`.
    public static func orFilter(_ filters: [Filter]) -> Filter { composite("or", filters) }
    /// Documents matching all of `filters`.
    public static func andFilter(_ filters: [Filter]) -> Filter { composite("and", filters) }

    private static func composite(_ kind: String, _ filters: [Filter]) -> Filter {
        Filter(Result { .composite(kind, try filters.map { try $0.node.get() }) }.mapError(HearthError.from))
    }

    public static func whereField(_ field: String, isEqualTo value: Any) -> Filter { make(field, "==", value) }
    public static func whereField(_ field: String, isNotEqualTo value: Any) -> Filter { make(field, "!=", value) }
    public static func whereField(_ field: String, isLessThan value: Any) -> Filter { make(field, "<", value) }
    public static func whereField(_ field: String, isLessThanOrEqualTo value: Any) -> Filter { make(field, "<=", value) }
    public static func whereField(_ field: String, isGreaterThan value: Any) -> Filter { make(field, ">", value) }
    public static func whereField(_ field: String, isGreaterThanOrEqualTo value: Any) -> Filter { make(field, ">=", value) }
    public static func whereField(_ field: String, arrayContains value: Any) -> Filter { make(field, "array-contains", value) }
    public static func whereField(_ field: String, arrayContainsAny values: [Any]) -> Filter { make(field, "array-contains-any", values) }
    public static func whereField(_ field: String, in values: [Any]) -> Filter { make(field, "in", values) }
    public static func whereField(_ field: String, notIn values: [Any]) -> Filter { make(field, "not-in", values) }

    public static func whereField(_ path: FieldPath, isEqualTo value: Any) -> Filter { make(path, "==", value) }
    public static func whereField(_ path: FieldPath, isNotEqualTo value: Any) -> Filter { make(path, "!=", value) }
    public static func whereField(_ path: FieldPath, isLessThan value: Any) -> Filter { make(path, "<", value) }
    public static func whereField(_ path: FieldPath, isLessThanOrEqualTo value: Any) -> Filter { make(path, "<=", value) }
    public static func whereField(_ path: FieldPath, isGreaterThan value: Any) -> Filter { make(path, ">", value) }
    public static func whereField(_ path: FieldPath, isGreaterThanOrEqualTo value: Any) -> Filter { make(path, ">=", value) }
    public static func whereField(_ path: FieldPath, arrayContains value: Any) -> Filter { make(path, "array-contains", value) }
    public static func whereField(_ path: FieldPath, arrayContainsAny values: [Any]) -> Filter { make(path, "array-contains-any", values) }
    public static func whereField(_ path: FieldPath, in values: [Any]) -> Filter { make(path, "in", values) }
    public static func whereField(_ path: FieldPath, notIn values: [Any]) -> Filter { make(path, "not-in", values) }
}

extension Query {
    public func whereField(_ field: String, isEqualTo value: Any) -> Query { whereFilter(.whereField(field, isEqualTo: value)) }
    public func whereField(_ field: String, isNotEqualTo value: Any) -> Query { whereFilter(.whereField(field, isNotEqualTo: value)) }
    public func whereField(_ field: String, isLessThan value: Any) -> Query { whereFilter(.whereField(field, isLessThan: value)) }
    public func whereField(_ field: String, isLessThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(field, isLessThanOrEqualTo: value)) }
    public func whereField(_ field: String, isGreaterThan value: Any) -> Query { whereFilter(.whereField(field, isGreaterThan: value)) }
    public func whereField(_ field: String, isGreaterThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(field, isGreaterThanOrEqualTo: value)) }
    public func whereField(_ field: String, arrayContains value: Any) -> Query { whereFilter(.whereField(field, arrayContains: value)) }
    public func whereField(_ field: String, arrayContainsAny values: [Any]) -> Query { whereFilter(.whereField(field, arrayContainsAny: values)) }
    public func whereField(_ field: String, in values: [Any]) -> Query { whereFilter(.whereField(field, in: values)) }
    public func whereField(_ field: String, notIn values: [Any]) -> Query { whereFilter(.whereField(field, notIn: values)) }

    public func whereField(_ path: FieldPath, isEqualTo value: Any) -> Query { whereFilter(.whereField(path, isEqualTo: value)) }
    public func whereField(_ path: FieldPath, isNotEqualTo value: Any) -> Query { whereFilter(.whereField(path, isNotEqualTo: value)) }
    public func whereField(_ path: FieldPath, isLessThan value: Any) -> Query { whereFilter(.whereField(path, isLessThan: value)) }
    public func whereField(_ path: FieldPath, isLessThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(path, isLessThanOrEqualTo: value)) }
    public func whereField(_ path: FieldPath, isGreaterThan value: Any) -> Query { whereFilter(.whereField(path, isGreaterThan: value)) }
    public func whereField(_ path: FieldPath, isGreaterThanOrEqualTo value: Any) -> Query { whereFilter(.whereField(path, isGreaterThanOrEqualTo: value)) }
    public func whereField(_ path: FieldPath, arrayContains value: Any) -> Query { whereFilter(.whereField(path, arrayContains: value)) }
    public func whereField(_ path: FieldPath, arrayContainsAny values: [Any]) -> Query { whereFilter(.whereField(path, arrayContainsAny: values)) }
    public func whereField(_ path: FieldPath, in values: [Any]) -> Query { whereFilter(.whereField(path, in: values)) }
    public func whereField(_ path: FieldPath, notIn values: [Any]) -> Query { whereFilter(.whereField(path, notIn: values)) }
}
