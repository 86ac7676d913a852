/// Ordering and cursors over the normalized order (Firestore's semantics):
/// - field values compare with `ValueOrder`, `__name__` compares document paths segment-wise
///   (`ResourcePath.compare`); a descending entry flips its comparison;
/// - a cursor compares its values with the document's values on the prefix of the normalized order it
///   covers, entry by entry, stopping at the first difference; a document equal on that prefix is inside an
///   inclusive cursor (`startAt`, `endAt`) and outside an exclusive one (`startAfter`, `endBefore`).
/// Matching documents have every ordered field; a missing field sorts before any value so the comparator
/// stays total on any input.
extension ValidQuery {
    /// -1, 0 or 1 as document `a` sorts before, with, or after document `b`. Only 0 for the same path.
    public func compare(_ a: DocumentPath, _ aFields: MapValue, _ b: DocumentPath, _ bFields: MapValue) -> Int {
        for o in orderBy {
            var c: Int
            if o.field.isDocumentID {
                c = ResourcePath.compare(a.path, b.path)
            } else {
                c = QueryOrdering.compare(aFields.value(at: o.field), bFields.value(at: o.field))
            }
            if o.direction == .descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }

    /// True when the document sorts before the start cursor (it is excluded by `startAt` / `startAfter`).
    public func beforeStart(_ path: DocumentPath, _ fields: MapValue) -> Bool {
        guard let b = startAt else { return false }
        let c = QueryOrdering.compare(bound: b, orderBy, path, fields)
        return b.inclusive ? c > 0 : c >= 0
    }

    /// True when the document sorts after the end cursor (it is excluded by `endAt` / `endBefore`).
    public func afterEnd(_ path: DocumentPath, _ fields: MapValue) -> Bool {
        guard let b = endAt else { return false }
        let c = QueryOrdering.compare(bound: b, orderBy, path, fields)
        return b.inclusive ? c < 0 : c <= 0
    }
}

/// The comparison helpers behind `ValidQuery.compare` and the cursor checks.
public enum QueryOrdering {
    /// `ValueOrder` with a missing value (nil) before every value.
    public static func compare(_ a: Value?, _ b: Value?) -> Int {
        switch (a, b) {
        case (.none, .none): return 0
        case (.none, .some): return -1
        case (.some, .none): return 1
        case (.some(let x), .some(let y)): return ValueOrder.compare(x, y)
        }
    }

    /// -1, 0 or 1 as the cursor position sorts before, with, or after the document, on the prefix of
    /// `order` the cursor covers (directions applied). `__name__` entries must hold references.
    public static func compare(bound: Query.Bound, _ order: [Query.Order], _ path: DocumentPath,
                               _ fields: MapValue) -> Int {
        for (i, v) in bound.values.enumerated() where i < order.count {
            var c: Int
            if order[i].field.isDocumentID {
                if case .reference(let r) = v {
                    c = ResourcePath.compare(r.path, path.path)
                } else {
                    c = ValueOrder.compare(v, .reference(path))
                }
            } else {
                c = compare(v, fields.value(at: order[i].field))
            }
            if order[i].direction == .descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }
}
