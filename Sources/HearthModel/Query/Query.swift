/// A structured query in Firestore's shape, as the wire layer builds it. Nothing is checked here:
/// `validated()` enforces Firestore's rules and normalizes the query into a `ValidQuery`, the only form the
/// matcher, comparator and evaluator accept.
public struct Query: Sendable, Equatable {
    /// Which documents the query ranges over.
    public enum Target: Sendable, Hashable {
        /// The documents directly inside one collection.
        case collection(CollectionPath)
        /// Every document in a collection with this ID at any depth, optionally only under `parent`.
        case collectionGroup(id: String, parent: DocumentPath?)
    }

    public enum Direction: String, Sendable, Hashable {
        case ascending = "asc"
        case descending = "desc"

        public var reversed: Direction { self == .ascending ? .descending : .ascending }
    }

    /// One sort key: a field (or `__name__`, the document key) and a direction.
    public struct Order: Sendable, Hashable {
        public var field: FieldPath
        public var direction: Direction
        public init(_ field: FieldPath, _ direction: Direction = .ascending) {
            self.field = field
            self.direction = direction
        }
    }

    /// A cursor: values for a prefix of the normalized order. `startAt` is inclusive, `startAfter` not;
    /// `endAt` is inclusive, `endBefore` not.
    public struct Bound: Sendable, Hashable {
        public var values: [Value]
        public var inclusive: Bool
        public init(_ values: [Value], inclusive: Bool) {
            self.values = values
            self.inclusive = inclusive
        }
    }

    public var target: Target
    public var filter: Filter?
    public var orderBy: [Order]
    public var limit: Int?
    public var limitToLast: Int?
    public var offset: Int
    public var startAt: Bound?
    public var endAt: Bound?
    /// Field paths to keep in results; nil keeps every field, an empty list keeps none.
    public var select: [FieldPath]?

    public init(target: Target, filter: Filter? = nil, orderBy: [Order] = [], limit: Int? = nil,
                limitToLast: Int? = nil, offset: Int = 0, startAt: Bound? = nil, endAt: Bound? = nil,
                select: [FieldPath]? = nil) {
        self.target = target
        self.filter = filter
        self.orderBy = orderBy
        self.limit = limit
        self.limitToLast = limitToLast
        self.offset = offset
        self.startAt = startAt
        self.endAt = endAt
        self.select = select
    }

    /// A query over one collection.
    public static func collection(_ path: CollectionPath) -> Query { Query(target: .collection(path)) }

    /// A collection-group query over every collection named `id` (under `parent` when given).
    public static func collectionGroup(_ id: String, parent: DocumentPath? = nil) -> Query {
        Query(target: .collectionGroup(id: id, parent: parent))
    }
}

/// A filter tree: field comparisons joined by `and` / `or`.
public indirect enum Filter: Sendable, Hashable {
    /// The comparison operators, with Firestore's spellings as raw values.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case lessThan = "<"
        case lessThanOrEqual = "<="
        case greaterThan = ">"
        case greaterThanOrEqual = ">="
        case arrayContains = "array-contains"
        case arrayContainsAny = "array-contains-any"
        case `in` = "in"
        case notIn = "not-in"

        /// The operators that order the query by their field (Firestore's "inequality" filters).
        public var isInequality: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn: return true
            default: return false
            }
        }

        /// `<`, `<=`, `>`, `>=`.
        public var isRange: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: return true
            default: return false
            }
        }

        /// The operators whose operand is a list of values.
        public var takesList: Bool { self == .in || self == .notIn || self == .arrayContainsAny }
    }

    public enum CompositeOperator: String, Sendable, Hashable {
        case and
        case or
    }

    case field(FieldPath, Operator, Value)
    case composite(CompositeOperator, [Filter])
}

/// One field comparison of a filter tree, as a value (the atoms of `ValidQuery.disjuncts`).
public struct FieldFilter: Sendable, Hashable {
    public var field: FieldPath
    public var op: Filter.Operator
    public var value: Value
    public init(_ field: FieldPath, _ op: Filter.Operator, _ value: Value) {
        self.field = field
        self.op = op
        self.value = value
    }

    public var filter: Filter { .field(field, op, value) }
}

extension Filter {
    /// Every field comparison in the tree, depth first.
    public var fieldFilters: [FieldFilter] {
        switch self {
        case .field(let f, let op, let v): return [FieldFilter(f, op, v)]
        case .composite(_, let children): return children.flatMap(\.fieldFilters)
        }
    }
}
