/// A query that passed `Query.validated()`: every rule checked, `__name__` operands and cursor positions
/// converted to `.reference` values, single-child and nested same-kind composites flattened, and the
/// normalized order computed. Matching (`matches`), ordering (`compare`) and cursor checks (`beforeStart`,
/// `afterEnd`) live in extensions; `QueryEvaluator` runs it over documents.
public struct ValidQuery: Sendable, Hashable {
    public internal(set) var target: Query.Target
    /// The normalized filter tree (nil: every document of the target matches).
    public internal(set) var filter: Filter?
    /// The orderBys the query named, in order.
    public internal(set) var explicitOrderBy: [Query.Order]
    /// Firestore's normalized order: the explicit orderBys, then every inequality field not already ordered
    /// (lexicographic field-path order), then `__name__` unless ordered; the implicit ones take the direction
    /// of the last explicit orderBy (ascending when there is none). Always ends the tie-breaking with a
    /// `__name__` entry somewhere, so it is a total order on documents.
    public internal(set) var orderBy: [Query.Order]
    public internal(set) var limit: Int?
    public internal(set) var limitToLast: Int?
    /// Results skipped after the cursors are applied (for `limitToLast`, counted from the end).
    public internal(set) var offset: Int
    public internal(set) var startAt: Query.Bound?
    public internal(set) var endAt: Query.Bound?
    public internal(set) var select: [FieldPath]?
    /// The filter in disjunctive normal form: an OR of ANDs of field filters, with `in` and
    /// `array-contains-any` kept as single atoms (Firestore counts each of their values as one disjunction;
    /// `disjunctionCount` is that count). `[[]]` when there is no filter. At most 30 terms.
    public internal(set) var disjuncts: [[FieldFilter]]
    /// The number of disjunctions Firestore counts for the filter (≤ 30): `in` and `array-contains-any`
    /// count one per value, AND multiplies, OR adds.
    public internal(set) var disjunctionCount: Int
    /// Fields under `<`, `<=`, `>`, `>=`, `!=` or `not-in` filters anywhere in the tree, sorted, unique.
    public internal(set) var inequalityFields: [FieldPath]

    /// True when the result is a window (`limit` or `limitToLast`): a listener's rows can leave it without a
    /// commit bringing others in, and it is then refilled from the store.
    public var isWindow: Bool { limit != nil || limitToLast != nil }

    /// True for a collection-group query.
    public var isCollectionGroup: Bool {
        if case .collectionGroup = target { return true }
        return false
    }

    /// The same query with every direction of the normalized and explicit order flipped and the cursors
    /// swapped (`startAt` becomes `endAt` and vice versa, each keeping its inclusivity). Its results are the
    /// original results in reverse order.
    public func reversed() -> ValidQuery {
        var q = self
        q.explicitOrderBy = explicitOrderBy.map { Query.Order($0.field, $0.direction.reversed) }
        q.orderBy = orderBy.map { Query.Order($0.field, $0.direction.reversed) }
        q.startAt = endAt
        q.endAt = startAt
        return q
    }

    /// The same query with its `limit` (or `limitToLast`) `extra` larger: its first (or last) results of the
    /// original count are the original's results.
    public func widened(by extra: Int) -> ValidQuery {
        var q = self
        if let n = limit { q.limit = n + extra }
        if let n = limitToLast { q.limitToLast = n + extra }
        return q
    }

    /// The original's results among `rows`, results of `widened(by:)` (in order).
    public func trimmed<T>(_ rows: [T]) -> [T] {
        if let n = limit, rows.count > n { return Array(rows.prefix(n)) }
        if let n = limitToLast, rows.count > n { return Array(rows.suffix(n)) }
        return rows
    }

    /// How to execute the query with only a forward `limit`: a `limitToLast` query becomes its `reversed()`
    /// form with `limit` = the `limitToLast` count, whose results must then be reversed. Other queries are
    /// returned unchanged with `reverseResults` false.
    public var execution: (query: ValidQuery, reverseResults: Bool) {
        guard let n = limitToLast else { return (self, false) }
        var q = reversed()
        q.limit = n
        q.limitToLast = nil
        return (q, true)
    }
}

extension ValidQuery {
    /// The query as a `Query` again: its target, normalized filter, the orderBys it named, limits, offset,
    /// cursors and projection (what security rules judge a query by).
    public var asQuery: Query {
        Query(target: target, filter: filter, orderBy: explicitOrderBy, limit: limit, limitToLast: limitToLast,
              offset: offset, startAt: startAt, endAt: endAt, select: select)
    }
}
