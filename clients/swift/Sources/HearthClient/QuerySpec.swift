import Foundation

/// The immutable description of a query, turned into the protocol's query fields by `wire()`.
struct QuerySpec: Sendable {
    enum Target: Sendable { case collection(String), group(String) }

    struct Order: Sendable {
        let field: String
        let descending: Bool
    }

    enum CursorValues: Sendable {
        case values([JSON])
        /// A document's values for the normalized order, computed when the query is sent.
        case document(WireDocument)
    }

    struct Cursor: Sendable {
        let values: CursorValues
        let inclusive: Bool
    }

    var target: Target
    var filters: [FilterNode] = []
    var orders: [Order] = []
    var limit: Int?
    var limitToLast: Int?
    var start: Cursor?
    var end: Cursor?
    /// The first error met while building (a value that cannot be encoded); thrown when the query is used.
    var error: HearthError?

    init(target: Target) { self.target = target }

    var isCollectionGroup: Bool { if case .group = target { return true }; return false }

    /// The query fields: `collection`|`collectionGroup`, `where`, `orderBy`, `limit`, `limitToLast`, cursors.
    func wire() throws -> [String: JSON] {
        if let error { throw error }
        var q: [String: JSON] = [:]
        switch target {
        case .collection(let path): q["collection"] = .string(path)
        case .group(let id): q["collectionGroup"] = .string(id)
        }
        if filters.count == 1, case .composite = filters[0] {
            q["where"] = filters[0].wire
        } else if !filters.isEmpty {
            q["where"] = filters.contains { if case .composite = $0 { return true }; return false }
                ? .object(["and": .array(filters.map(\.wire))])
                : .array(filters.map(\.wire))
        }
        if !orders.isEmpty {
            q["orderBy"] = .array(orders.map { .array([.string($0.field), .string($0.descending ? "desc" : "asc")]) })
        }
        if let limit { q["limit"] = .int(Int64(limit)) }
        if let limitToLast { q["limitToLast"] = .int(Int64(limitToLast)) }
        if let start { q[start.inclusive ? "startAt" : "startAfter"] = .array(try values(of: start)) }
        if let end { q[end.inclusive ? "endAt" : "endBefore"] = .array(try values(of: end)) }
        return q
    }

    private func values(of cursor: Cursor) throws -> [JSON] {
        switch cursor.values {
        case .values(let v): return v
        case .document(let doc):
            return try normalizedOrder().map { field in
                if field == "__name__" { return .object(["$ref": .string(doc.path)]) }
                guard let segs = FieldPath.segments(ofDotted: field), let v = doc.value(at: segs) else {
                    throw HearthError.invalid("the cursor document \(doc.path) has no field \(field), which the query orders by")
                }
                return v
            }
        }
    }

    /// The normalized order (docs/queries.md): explicit orders, then every inequality field not yet ordered
    /// (by field path), then `__name__`. Directions are not needed for cursor values.
    func normalizedOrder() -> [String] {
        var fields = orders.map(\.field)
        var inequality: [(segments: [String], dotted: String)] = []
        for f in filters { f.collectInequalityFields(into: &inequality) }
        inequality.sort { lexicographicallyPrecedes($0.segments, $1.segments) }
        for f in inequality where !fields.contains(f.dotted) && !fields.contains(where: { FieldPath.segments(ofDotted: $0) == f.segments }) {
            fields.append(f.dotted)
        }
        if !fields.contains("__name__") { fields.append("__name__") }
        return fields
    }

    private func lexicographicallyPrecedes(_ a: [String], _ b: [String]) -> Bool {
        for (x, y) in zip(a, b) where x != y { return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) }
        return a.count < b.count
    }
}

/// A filter tree in wire form.
enum FilterNode: Sendable {
    case field(String, String, JSON)
    case composite(String, [FilterNode])

    static let inequalityOps: Set<String> = ["<", "<=", ">", ">=", "!=", "not-in"]

    /// `[field, op, value]`, `{"and":[...]}` or `{"or":[...]}`.
    var wire: JSON {
        switch self {
        case .field(let f, let op, let v): return .array([.string(f), .string(op), v])
        case .composite(let kind, let children): return .object([kind: .array(children.map(\.wire))])
        }
    }

    func collectInequalityFields(into out: inout [(segments: [String], dotted: String)]) {
        switch self {
        case .field(let f, let op, _):
            if FilterNode.inequalityOps.contains(op), let segs = FieldPath.segments(ofDotted: f), !out.contains(where: { $0.segments == segs }) {
                out.append((segs, f))
            }
        case .composite(_, let children):
            for c in children { c.collectInequalityFields(into: &out) }
        }
    }
}
