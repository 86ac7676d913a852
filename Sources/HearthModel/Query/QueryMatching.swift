/// Document matching with Firestore's semantics (what the backend returns, which is stricter than some
/// client caches):
/// - comparisons are type-bracketed: `<`, `<=`, `>`, `>=`, `==` only match values of the operand's type
///   (integers and doubles are one type: 42 == 42.0), compared with `ValueOrder`;
/// - `== null` matches exactly the null values, `== NaN` exactly the NaNs;
/// - `!=` and `not-in` never match a missing or null field; `!= null` matches every non-null value,
///   `!= NaN` every non-null non-NaN value; `not-in` with null in its list matches nothing, with NaN in its
///   list excludes NaN;
/// - only `==` and `!=` match null and NaN: null and NaN operands of `in`, `array-contains` and
///   `array-contains-any` match nothing (Firestore: `in [null]` and `array-contains-any [NaN]` return no
///   documents, `in [98101, null]` returns only 98101);
/// - `array-contains` and `array-contains-any` need an array field; elements compare with `ValueOrder`;
/// - `__name__` compares the document path segment-wise with the operand reference.
extension ValidQuery {
    /// True when the document is in the query's target, has every field of the normalized order, and
    /// passes the filter. Cursors are not applied (see `beforeStart` / `afterEnd`), nor offset and limits.
    public func matches(_ path: DocumentPath, _ fields: MapValue) -> Bool {
        guard contains(path) else { return false }
        for o in orderBy where !o.field.isDocumentID {
            if case .none = fields.value(at: o.field) { return false }
        }
        guard let filter else { return true }
        return QueryFilterMatcher.matches(filter, path, fields)
    }

    /// `matches` and within the cursors.
    public func matchesWithinCursors(_ path: DocumentPath, _ fields: MapValue) -> Bool {
        matches(path, fields) && !beforeStart(path, fields) && !afterEnd(path, fields)
    }

    /// True when the document is in the target: directly inside the collection, or (collection group) in a
    /// collection with the group's ID at any depth, below `parent` when there is one.
    public func contains(_ path: DocumentPath) -> Bool {
        switch target {
        case .collection(let c):
            return path.path.count == c.path.count + 1 && c.path.isPrefix(of: path.path)
        case .collectionGroup(let id, let parent):
            guard UTF8Order.equal(path.collectionID, id) else { return false }
            if let parent { return parent.path.isPrefix(of: path.path) }
            return true
        }
    }
}

/// Evaluates filter trees against one document (see `ValidQuery`'s matching extension for the semantics).
public enum QueryFilterMatcher {
    public static func matches(_ filter: Filter, _ path: DocumentPath, _ fields: MapValue) -> Bool {
        switch filter {
        case .field(let field, let op, let value):
            if field.isDocumentID { return matchesKey(path, op, value) }
            return matches(fields.value(at: field), op, value)
        case .composite(.and, let children):
            return children.allSatisfy { matches($0, path, fields) }
        case .composite(.or, let children):
            return children.contains { matches($0, path, fields) }
        }
    }

    /// One comparison of a field's value (nil when the field is missing) with an operand.
    public static func matches(_ field: Value?, _ op: Filter.Operator, _ operand: Value) -> Bool {
        guard let x = field else { return false }
        switch op {
        case .equal:
            if case .null = operand { if case .null = x { return true } else { return false } }
            if operand.isNaN { return x.isNaN }
            return ValueOrder.compare(x, operand) == 0
        case .notEqual:
            if case .null = x { return false }
            if case .null = operand { return true }
            if operand.isNaN { return !x.isNaN }
            return ValueOrder.compare(x, operand) != 0
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            guard x.typeOrder == operand.typeOrder else { return false }
            return satisfies(op, ValueOrder.compare(x, operand))
        case .arrayContains:
            guard case .array(let elements) = x, isMatchable(operand) else { return false }
            return elements.contains { ValueOrder.equal($0, operand) }
        case .arrayContainsAny:
            guard case .array(let elements) = x, case .array(let list) = operand else { return false }
            return list.contains { l in isMatchable(l) && elements.contains { ValueOrder.equal($0, l) } }
        case .in:
            guard case .array(let list) = operand else { return false }
            return list.contains { isMatchable($0) && ValueOrder.equal(x, $0) }
        case .notIn:
            guard case .array(let list) = operand else { return false }
            if case .null = x { return false }
            if list.contains(where: { if case .null = $0 { return true } else { return false } }) { return false }
            return !list.contains { ValueOrder.equal(x, $0) }
        }
    }

    /// A `__name__` comparison: the document's path against reference operands.
    static func matchesKey(_ path: DocumentPath, _ op: Filter.Operator, _ operand: Value) -> Bool {
        func cmp(_ v: Value) -> Int? {
            if case .reference(let r) = v { return ResourcePath.compare(path.path, r.path) }
            return nil
        }
        switch op {
        case .in, .notIn:
            guard case .array(let list) = operand else { return false }
            let found = list.contains { cmp($0) == 0 }
            return op == .in ? found : !found
        case .arrayContains, .arrayContainsAny:
            return false
        default:
            guard let c = cmp(operand) else { return false }
            return satisfies(op, c)
        }
    }

    /// Whether a comparison result `c` (document value vs operand) satisfies a scalar operator.
    static func satisfies(_ op: Filter.Operator, _ c: Int) -> Bool {
        switch op {
        case .equal: return c == 0
        case .notEqual: return c != 0
        case .lessThan: return c < 0
        case .lessThanOrEqual: return c <= 0
        case .greaterThan: return c > 0
        case .greaterThanOrEqual: return c >= 0
        default: return false
        }
    }

    /// Null and NaN operands match nothing outside `==` and `!=`.
    static func isMatchable(_ v: Value) -> Bool {
        if case .null = v { return false }
        return !v.isNaN
    }
}
