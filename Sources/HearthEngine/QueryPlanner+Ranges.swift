import HearthModel

extension QueryPlanner {
    /// One range over keys `prefix + components + docKey`: range filters on the first component (type
    /// bracketed), `__name__` filters when the doc key comes right after the prefix, and the cursors when
    /// they line up with the components. Sets `parts.residual` for anything left to the post-filter.
    /// `reverse` (default: the direction of the query's last order entry versus the key's) says how the scan
    /// runs; query order must equal key order read in that direction.
    static func keyOrderedBranch(_ name: QueryPlan.IndexUsed, prefix: [UInt8], components: [(FieldPath, Bool)], nameDescending: Bool,
                                 _ q: ValidQuery, _ parts: inout Parts, cursorsAlign: Bool,
                                 reverse explicitReverse: Bool? = nil) -> QueryPlan.Branch {
        let nameOrder = q.orderBy.last!
        let reverse = explicitReverse ?? ((nameOrder.direction == .descending) != nameDescending)
        var range = QueryPlan.Range.prefix(prefix)
        var exact = !parts.residual

        // Range filters: only on the first component (further ones are checked after the scan).
        for f in parts.ranges {
            guard let first = components.first, first.0 == f.field else { exact = false; continue }
            let desc = first.1
            let typeStart = prefix + IndexKey.typePrefix(f.value.typeOrder, descending: desc)
            range.raiseLower(typeStart)
            range.lowerUpper(IndexKey.prefixSuccessor(typeStart))
            let at = prefix + IndexKey.key(f.value, descending: desc)
            let after = IndexKey.prefixSuccessor(at)
            // In value space: > v, >= v, < v, <= v; a descending component inverts the key order.
            let wantsAbove = f.op == .greaterThan || f.op == .greaterThanOrEqual
            let inclusive = f.op == .greaterThanOrEqual || f.op == .lessThanOrEqual
            if wantsAbove != desc {
                // Keys above the value's encoding.
                range.raiseLower(inclusive ? at : (after ?? at))
            } else {
                range.lowerUpper(inclusive ? after : at)
            }
        }
        if !parts.ranges.isEmpty && components.count > 1 { exact = exact && parts.ranges.allSatisfy { $0.field == components[0].0 } }

        // __name__ filters: as bounds when the doc key follows the prefix directly.
        for f in parts.nameFilters {
            guard components.isEmpty, case .reference(let ref) = f.value else { exact = false; continue }
            let at = prefix + keyOf(ref, descending: nameDescending)
            let after = IndexKey.prefixSuccessor(at)
            switch f.op {
            case .equal:
                range.raiseLower(at)
                range.lowerUpper(after)
            case .greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual:
                let wantsAbove = f.op == .greaterThan || f.op == .greaterThanOrEqual
                let inclusive = f.op == .greaterThanOrEqual || f.op == .lessThanOrEqual
                if wantsAbove != nameDescending { range.raiseLower(inclusive ? at : (after ?? at)) }
                else { range.lowerUpper(inclusive ? after : at) }
            default:
                exact = false
            }
        }

        // Cursors: values line up with components, then the doc key.
        if cursorsAlign {
            if let start = q.startAt { apply(start, isStart: true, prefix, components, nameDescending, reverse, &range) }
            if let end = q.endAt { apply(end, isStart: false, prefix, components, nameDescending, reverse, &range) }
        } else if q.startAt != nil || q.endAt != nil {
            exact = false
        }
        return QueryPlan.Branch(index: name, ranges: range.isEmpty ? [] : [range], reverse: reverse, exact: exact)
    }

    private static func keyOf(_ path: DocumentPath, descending: Bool) -> [UInt8] {
        var k: [UInt8] = []
        IndexKey.encodeDocumentKey(path, descending: descending, into: &k)
        return k
    }

    private static func apply(_ bound: Query.Bound, isStart: Bool, _ prefix: [UInt8], _ components: [(FieldPath, Bool)],
                              _ nameDescending: Bool, _ reverse: Bool, _ range: inout QueryPlan.Range) {
        var bytes = prefix
        for (i, v) in bound.values.enumerated() {
            if i < components.count {
                IndexKey.encode(v, descending: components[i].1, into: &bytes)
            } else if case .reference(let ref) = v {
                bytes += keyOf(ref, descending: nameDescending)
            }
        }
        let after = IndexKey.prefixSuccessor(bytes)
        // In query order: a start cursor bounds from below, an end cursor from above; a reverse scan flips.
        let boundsBelow = isStart != reverse
        // Keys starting with `bytes` are the documents at the cursor: inclusive keeps them, exclusive skips them.
        if boundsBelow {
            range.raiseLower(bound.inclusive ? bytes : (after ?? bytes))
        } else {
            range.lowerUpper(bound.inclusive ? after : bytes)
        }
    }
}
