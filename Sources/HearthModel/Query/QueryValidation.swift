/// Firestore's limits on filters, as `Query.validated()` enforces them.
public enum QueryLimits {
    /// Most disjunctions after expansion to disjunctive normal form.
    public static let maxDisjunctions = 30
    /// Most values in an `in` or `array-contains-any` list.
    public static let maxInValues = 30
    /// Most values in a `not-in` list.
    public static let maxNotInValues = 10
    /// Most field filters in a query (before expansion), so that planning and judging one is bounded.
    public static let maxFilters = 100
    /// Largest `limit`, `limitToLast` and `offset` (2^31 - 1).
    public static let maxCount = Int(Int32.max)
}

extension Query {
    /// Checks the query against Firestore's rules and normalizes it. Every failure is INVALID_ARGUMENT
    /// with a message naming the rule; the rules and their order are listed in `QueryValidator`.
    public func validated() throws(HearthError) -> ValidQuery {
        try QueryValidator(query: self).run()
    }
}

/// The checks behind `Query.validated()`, in the order they run:
/// 1. target: a collection-group ID must be a valid ID;
/// 2. `limit`, `limitToLast` and `offset` must not be negative; `limit` and `limitToLast` exclude each
///    other; `limitToLast` needs an explicit orderBy;
/// 3. orderBy: no field twice, nothing after `__name__`;
/// 4. each field filter: list operators need a non-empty array (≤ 30 values, ≤ 10 for `not-in`);
///    `<`, `<=`, `>`, `>=` not on null or NaN; no array operators on `__name__`; `__name__` operands are
///    document IDs (collection) or document paths (group, inside `parent`) or references;
///    composites need at least one filter;
/// 5. across the query: at most one `!=`, at most one `not-in`, not both; `not-in` not with `in`,
///    `array-contains-any` or an `or` filter; an explicit orderBy `__name__` only after every inequality
///    field (checked after 6);
/// 6. at most 100 field filters, and at most 30 disjunctions in DNF; per DNF term at most one
///    `array-contains` or `array-contains-any`;
/// 7. cursors: at least one value and no more than the normalized order has; `__name__` positions
///    converted like operands.
struct QueryValidator {
    let query: Query

    func run() throws(HearthError) -> ValidQuery {
        try checkTarget()
        try checkLimits()
        try checkOrderBy()
        let filter: Filter? = try query.filter.map { f throws(HearthError) in try normalize(f) }
        let atoms = filter?.fieldFilters ?? []
        if atoms.count > QueryLimits.maxFilters {
            throw .invalid("the filter has \(atoms.count) field filters; at most \(QueryLimits.maxFilters) are allowed")
        }
        try checkOperatorCombinations(atoms, hasOr: filter.map(containsOr) ?? false)
        let count = filter.map(disjunctionCount) ?? 1
        if count > QueryLimits.maxDisjunctions {
            let shown = count == Int.max ? "more than \(QueryLimits.maxDisjunctions)" : "\(count)"
            throw .invalid("the filter has \(shown) disjunctions in disjunctive normal form ('in' and "
                + "'array-contains-any' count one per value); at most \(QueryLimits.maxDisjunctions) are allowed")
        }
        let dnf = filter.map(disjunctiveNormalForm) ?? [[]]
        for term in dnf { try checkArrayContains(term) }
        let inequality = Array(Set(atoms.filter { $0.op.isInequality }.map(\.field))).sorted()
        try checkInequalityOrder(inequality)
        let order = normalizedOrder(inequality)
        let startAt = try query.startAt.map { b throws(HearthError) in try cursor(b, order, "startAt") }
        let endAt = try query.endAt.map { b throws(HearthError) in try cursor(b, order, "endAt") }
        return ValidQuery(target: query.target, filter: filter, explicitOrderBy: query.orderBy, orderBy: order,
                          limit: query.limit, limitToLast: query.limitToLast, offset: query.offset,
                          startAt: startAt, endAt: endAt, select: query.select, disjuncts: dnf,
                          disjunctionCount: count, inequalityFields: inequality)
    }

    // MARK: Target, limits, order

    func checkTarget() throws(HearthError) {
        if case .collectionGroup(let id, _) = query.target, let problem = ResourcePath.problem(withID: id) {
            throw .invalid("collection group ID \"\(id)\" is invalid: \(problem)")
        }
    }

    func checkLimits() throws(HearthError) {
        if let n = query.limit, n < 0 { throw .invalid("limit must not be negative (got \(n))") }
        if let n = query.limitToLast, n < 0 { throw .invalid("limitToLast must not be negative (got \(n))") }
        if query.offset < 0 { throw .invalid("offset must not be negative (got \(query.offset))") }
        if query.limit != nil && query.limitToLast != nil {
            throw .invalid("limit and limitToLast cannot be used together")
        }
        if query.limitToLast != nil && query.orderBy.isEmpty {
            throw .invalid("limitToLast requires at least one orderBy")
        }
    }

    func checkOrderBy() throws(HearthError) {
        var seen: Set<FieldPath> = []
        for (i, o) in query.orderBy.enumerated() {
            if !seen.insert(o.field).inserted {
                throw .invalid("orderBy names field '\(o.field)' more than once")
            }
            if o.field.isDocumentID && i != query.orderBy.count - 1 {
                throw .invalid("orderBy after __name__ is not allowed")
            }
        }
    }

    /// An inequality field is ordered before `__name__` (implicitly, when the explicit orderBy does not name
    /// it): an explicit `__name__` order, which must come last, leaves it no place. The message gives the
    /// orderBy that would: the implicit order written out.
    func checkInequalityOrder(_ inequality: [FieldPath]) throws(HearthError) {
        guard let last = query.orderBy.last, last.field.isDocumentID else { return }
        let explicit = Set(query.orderBy.map(\.field))
        let missing = inequality.filter { !$0.isDocumentID && !explicit.contains($0) }
        guard let f = missing.first else { return }
        let order = query.orderBy.dropLast() + missing.map { Query.Order($0, last.direction) } + [last]
        let text = order.map { "[\"\($0.field)\",\"\($0.direction.rawValue)\"]" }.joined(separator: ",")
        throw .invalid("the inequality filter on '\(f)' orders the results by '\(f)' before __name__, so an "
            + "explicit orderBy __name__ must follow an orderBy on '\(f)': \"orderBy\":[\(text)]")
    }

    func normalizedOrder(_ inequality: [FieldPath]) -> [Query.Order] {
        var order = query.orderBy
        let direction = order.last?.direction ?? .ascending
        let explicit = Set(order.map(\.field))
        for f in inequality where !explicit.contains(f) && !f.isDocumentID {
            order.append(Query.Order(f, direction))
        }
        if !explicit.contains(.documentID) { order.append(Query.Order(.documentID, direction)) }
        return order
    }

    // MARK: Filters

    /// Checks one filter tree and returns it normalized: `__name__` operands as references, composites
    /// with one child replaced by the child, children of the same kind spliced into their parent.
    func normalize(_ filter: Filter) throws(HearthError) -> Filter {
        switch filter {
        case .field(let field, let op, let value):
            return .field(field, op, try checkFieldFilter(field, op, value))
        case .composite(let kind, let children):
            if children.isEmpty { throw .invalid("an '\(kind.rawValue)' filter needs at least one filter") }
            var out: [Filter] = []
            for child in children {
                let n = try normalize(child)
                if case .composite(kind, let grand) = n { out.append(contentsOf: grand) } else { out.append(n) }
            }
            return out.count == 1 ? out[0] : .composite(kind, out)
        }
    }

    func checkFieldFilter(_ field: FieldPath, _ op: Filter.Operator, _ value: Value) throws(HearthError) -> Value {
        let name = { "'\(op.rawValue)' filter on '\(field)'" }   // formatted only for an error
        if op.takesList {
            guard case .array(let list) = value else {
                throw .invalid("\(name()) requires an array of values, got \(value.typeName)")
            }
            if list.isEmpty { throw .invalid("\(name()) requires a non-empty array") }
            let max = op == .notIn ? QueryLimits.maxNotInValues : QueryLimits.maxInValues
            if list.count > max { throw .invalid("\(name()) has \(list.count) values; at most \(max) are allowed") }
        }
        if op.isRange {
            if case .null = value { throw .invalid("\(name()): null supports only '==' and '!=' filters") }
            if value.isNaN { throw .invalid("\(name()): NaN supports only '==' and '!=' filters") }
        }
        guard field.isDocumentID else { return value }
        if op == .arrayContains || op == .arrayContainsAny {
            throw .invalid("'\(op.rawValue)' filters are not allowed on __name__")
        }
        if case .array(let list) = value, op.takesList {
            var refs: [Value] = []
            for v in list { refs.append(try documentKey(v, what: name())) }
            return .array(refs)
        }
        return try documentKey(value, what: name())
    }

    /// Converts a `__name__` operand or cursor value: an ID (collection query) or a document path
    /// (collection group, relative to the root, inside `parent` when the group has one) becomes a reference;
    /// a reference is kept as is.
    func documentKey(_ value: Value, what: String) throws(HearthError) -> Value {
        switch value {
        case .reference:
            return value
        case .string(let s):
            switch query.target {
            case .collection(let c):
                if s.utf8.contains(47) {
                    throw .invalid("\(what): a document ID for a collection query must not contain \"/\" (got \"\(s)\")")
                }
                if let problem = ResourcePath.problem(withID: s) {
                    throw .invalid("\(what): \"\(s)\" is not a valid document ID: \(problem)")
                }
                return .reference(DocumentPath(unchecked: c.path.appending(s)))
            case .collectionGroup(_, let parent):
                let path: ResourcePath
                do { path = try ResourcePath.parse(s, what: "document path") } catch {
                    throw .invalid("\(what): \(error.message)")
                }
                guard path.count % 2 == 0 else {
                    throw .invalid("\(what): \"\(s)\" is not a document path (it needs an even number of segments)")
                }
                if let parent, !parent.path.isPrefix(of: path) {
                    throw .invalid("\(what): document path \"\(s)\" is not inside the collection group's parent \"\(parent)\"")
                }
                return .reference(DocumentPath(unchecked: path))
            }
        default:
            throw .invalid("\(what): a __name__ value must be a document ID string or a reference, got \(value.typeName)")
        }
    }

    func containsOr(_ f: Filter) -> Bool {
        guard case .composite(let kind, let children) = f else { return false }
        return kind == .or || children.contains(where: containsOr)
    }

    func checkOperatorCombinations(_ atoms: [FieldFilter], hasOr: Bool) throws(HearthError) {
        func count(_ op: Filter.Operator) -> Int { atoms.reduce(0) { $0 + ($1.op == op ? 1 : 0) } }
        let notEqual = count(.notEqual), notIn = count(.notIn)
        if notEqual > 1 { throw .invalid("at most one '!=' filter is allowed per query") }
        if notIn > 1 { throw .invalid("at most one 'not-in' filter is allowed per query") }
        guard notIn == 1 else { return }
        if notEqual > 0 { throw .invalid("'not-in' cannot be combined with '!=' in the same query") }
        if count(.in) > 0 { throw .invalid("'not-in' cannot be combined with 'in' in the same query") }
        if count(.arrayContainsAny) > 0 {
            throw .invalid("'not-in' cannot be combined with 'array-contains-any' in the same query")
        }
        if hasOr { throw .invalid("'not-in' cannot be combined with 'or' filters in the same query") }
    }

    /// Firestore's count: `in` / `array-contains-any` count their values, AND multiplies, OR adds
    /// (saturating at Int.max).
    func disjunctionCount(_ f: Filter) -> Int {
        switch f {
        case .field(_, let op, let v):
            if op == .in || op == .arrayContainsAny, case .array(let list) = v { return list.count }
            return 1
        case .composite(let kind, let children):
            var total = kind == .and ? 1 : 0
            for c in children {
                let n = disjunctionCount(c)
                let (r, overflow) = kind == .and ? total.multipliedReportingOverflow(by: n)
                                                 : total.addingReportingOverflow(n)
                total = overflow ? Int.max : r
            }
            return total
        }
    }

    /// OR of ANDs of atoms; only called once the count is within the limit, so it stays small.
    func disjunctiveNormalForm(_ f: Filter) -> [[FieldFilter]] {
        switch f {
        case .field(let field, let op, let v):
            return [[FieldFilter(field, op, v)]]
        case .composite(.or, let children):
            return children.flatMap(disjunctiveNormalForm)
        case .composite(.and, let children):
            var terms: [[FieldFilter]] = [[]]
            for c in children {
                let sub = disjunctiveNormalForm(c)
                if sub.count == 1 {
                    // The usual child (one atom, or an AND): appended in place. Copying every term for it made a
                    // long AND quadratic (20,000 filters held the loop for 3 s).
                    for i in terms.indices { terms[i].append(contentsOf: sub[0]) }
                } else {
                    terms = terms.flatMap { t in sub.map { t + $0 } }
                }
            }
            return terms
        }
    }

    func checkArrayContains(_ term: [FieldFilter]) throws(HearthError) {
        let contains = term.filter { $0.op == .arrayContains }.count
        let any = term.filter { $0.op == .arrayContainsAny }.count
        if contains > 1 { throw .invalid("at most one 'array-contains' filter is allowed per disjunction") }
        if any > 1 { throw .invalid("at most one 'array-contains-any' filter is allowed per disjunction") }
        if contains > 0 && any > 0 {
            throw .invalid("'array-contains' cannot be combined with 'array-contains-any' in the same disjunction")
        }
    }

    // MARK: Cursors

    func cursor(_ b: Query.Bound, _ order: [Query.Order], _ name: String) throws(HearthError) -> Query.Bound {
        if b.values.isEmpty { throw .invalid("\(name) cursor needs at least one value") }
        if b.values.count > order.count {
            throw .invalid("\(name) cursor has \(b.values.count) values but the query is ordered by only "
                + "\(order.count) fields (explicit orderBys, inequality fields and __name__)")
        }
        var values = b.values
        for i in values.indices where order[i].field.isDocumentID {
            values[i] = try documentKey(values[i], what: "\(name) cursor")
        }
        return Query.Bound(values, inclusive: b.inclusive)
    }
}
