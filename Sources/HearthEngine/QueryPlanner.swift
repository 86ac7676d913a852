import HearthModel

/// Chooses an index for each disjunct of a query and turns filters and cursors into key ranges. Queries
/// that no automatic single-field index can serve in order need a declared composite index; without one
/// they fail with FAILED_PRECONDITION naming the exact index to create — never a silent full scan.
enum QueryPlanner {
    /// `q` must be in execution form (`ValidQuery.execution.query`: no limitToLast).
    static func plan(_ q: ValidQuery, indexes: [IndexDefinition]) throws(HearthError) -> QueryPlan {
        // Every plan below reads the order as its fields, then `__name__` (`QueryValidator` guarantees it).
        assert(q.orderBy.last?.field.isDocumentID == true && !q.orderBy.dropLast().contains { $0.field.isDocumentID },
               "a valid query's order ends with __name__ and names it once: \(q.orderBy)")
        var branches: [QueryPlan.Branch] = []
        for conjunct in q.disjuncts {
            branches.append(try planConjunct(conjunct, q, indexes: indexes))
        }
        return QueryPlan(branches: branches)
    }

    struct Parts {
        var equalities: [(FieldPath, [Value])] = []
        var contains: (FieldPath, [Value])?
        var nameFilters: [FieldFilter] = []
        var ranges: [FieldFilter] = []
        var residual = false     // something only the post-filter enforces
    }

    private static func split(_ conjunct: [FieldFilter]) -> Parts {
        var p = Parts()
        for f in conjunct {
            // `in`, `array-contains` and `array-contains-any` never match null or NaN operands, but the index
            // holds such values: leave those to the post-filter.
            if f.op == .in || f.op == .arrayContains || f.op == .arrayContainsAny {
                let values = f.op == .arrayContains ? [f.value] : (f.value.arrayValue ?? [])
                if values.contains(where: { $0 == .null || $0.isNaN }) { p.residual = true }
            }
            if f.field.isDocumentID { p.nameFilters.append(f); continue }
            switch f.op {
            case .equal: p.equalities.append((f.field, [f.value]))
            case .in: p.equalities.append((f.field, f.value.arrayValue ?? []))
            case .arrayContains, .arrayContainsAny:
                let values = f.op == .arrayContains ? [f.value] : (f.value.arrayValue ?? [])
                if p.contains == nil { p.contains = (f.field, values) } else { p.residual = true }
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: p.ranges.append(f)
            case .notEqual, .notIn: p.residual = true
            }
        }
        // An equality and an `in` on one field, or two equalities: keep the first, check the rest after.
        var seen: [FieldPath] = []
        p.equalities = p.equalities.filter { e in
            if seen.contains(e.0) { p.residual = true; return false }
            seen.append(e.0)
            return true
        }
        return p
    }

    private static func planConjunct(_ conjunct: [FieldFilter], _ q: ValidQuery,
                                     indexes: [IndexDefinition]) throws(HearthError) -> QueryPlan.Branch {
        var parts = split(conjunct)
        let nameOrder = q.orderBy.last!
        let equalityFields = parts.equalities.map(\.0)
        // Ordering by a field fixed by an equality changes nothing: drop it from the index's order.
        let orderFields = q.orderBy.dropLast().filter { !equalityFields.contains($0.field) }
        let cursorsAlign = !q.orderBy.dropLast().contains { equalityFields.contains($0.field) }
        let (collection, groupID, parent) = target(q)

        if orderFields.isEmpty && parts.equalities.isEmpty && parts.contains == nil {
            // Only __name__ order: the membership index.
            let prefix: [UInt8]
            let name: QueryPlan.IndexUsed
            if let collection {
                prefix = IndexLayout.collectionPrefix(collection)
                name = .collection(collection)
            } else {
                prefix = IndexLayout.groupPrefix(groupID)
                name = .collectionGroup(groupID)
            }
            // `__name__` filters and cursors are whole document keys after the prefix; a parent narrows the
            // range they give to the keys of documents strictly below it.
            var branch = keyOrderedBranch(name, prefix: prefix, components: [], nameDescending: false, q, &parts,
                                          cursorsAlign: cursorsAlign)
            if collection == nil, let parent {
                let below = IndexLayout.documentKeysBelow(parent)
                branch.ranges = branch.ranges.compactMap { r in
                    var r = r
                    r.raiseLower(prefix + below.lower)
                    r.lowerUpper(below.upper.map { prefix + $0 })
                    return r.isEmpty ? nil : r
                }
            }
            return branch
        }

        // A declared composite index matching equalities/contains then the order exactly.
        if let (def, reverseScan) = matchComposite(indexes, parts, orderFields, nameOrder, groupID: groupID,
                                                   group: collection == nil) {
            var prefixes: [[UInt8]] = [IndexLayout.compositePrefix(def, collection ?? CollectionPath.placeholder)]
            let prefixCount = def.fields.count - orderFields.count
            for f in def.fields.prefix(prefixCount) {
                let values: [Value]
                if f.mode == .arrayContains { values = parts.contains!.1 }
                else { values = parts.equalities.first { $0.0 == f.path }!.1 }
                prefixes = prefixes.flatMap { p in values.map { p + IndexKey.key($0, descending: f.mode == .descending) } }
            }
            let components = def.fields.suffix(orderFields.count).map { ($0.path, $0.mode == .descending) }
            if collection == nil, let parent { _ = parent; parts.residual = true }
            var branch = QueryPlan.Branch(index: .composite(def), ranges: [], reverse: reverseScan, exact: true)
            for p in prefixes {
                var one = keyOrderedBranch(branch.index, prefix: p, components: components, nameDescending: def.nameDescending, q, &parts,
                                           cursorsAlign: cursorsAlign, reverse: reverseScan)
                branch.ranges += one.ranges
                branch.exact = branch.exact && one.exact
                one.ranges = []
            }
            if prefixes.count > 1 || parts.contains.map({ $0.1.count > 1 }) == true { branch.exact = false }
            return branch
        }

        if let collection {
            if orderFields.isEmpty {
                // Equality (or array-contains) on one field, ordered by __name__: that field's single-field index.
                let (field, values, isContains): (FieldPath, [Value], Bool) =
                    parts.equalities.first.map { ($0.0, $0.1, false) } ?? (parts.contains!.0, parts.contains!.1, true)
                if parts.equalities.count + (parts.contains == nil ? 0 : 1) > 1 { parts.residual = true }
                let base = isContains ? IndexLayout.arrayContainsPrefix(collection, field) : IndexLayout.singleFieldPrefix(collection, field)
                var branch = QueryPlan.Branch(index: .singleField(collection, field, arrayContains: isContains),
                                              ranges: [], reverse: nameOrder.direction == .descending, exact: true)
                for v in values {
                    let one = keyOrderedBranch(branch.index, prefix: base + IndexKey.key(v), components: [], nameDescending: false, q, &parts,
                                               cursorsAlign: cursorsAlign)
                    branch.ranges += one.ranges
                    branch.exact = branch.exact && one.exact
                }
                if values.count > 1 { branch.exact = false }
                return branch
            }
            if parts.equalities.isEmpty && parts.contains == nil && orderFields.count == 1
                && orderFields[0].direction == nameOrder.direction {
                let f = orderFields[0]
                return keyOrderedBranch(.singleField(collection, f.field, arrayContains: false),
                                        prefix: IndexLayout.singleFieldPrefix(collection, f.field),
                                        components: [(f.field, false)], nameDescending: false, q, &parts,
                                        cursorsAlign: cursorsAlign)
            }
        }
        if let last = orderFields.last, last.direction != nameOrder.direction {
            // An index orders documents with equal fields by name in the direction of its last field: none
            // can serve a name ordered against it, so no index is worth suggesting.
            let why: String
            if q.explicitOrderBy.last?.field.isDocumentID != true, let named = q.orderBy.dropLast().last, named.field != last.field {
                // The implicit name order follows the last orderBy, here a field an equality fixes.
                why = "its last orderBy, \"\(named.field)\" \(named.direction.rawValue), fixed by an equality, orders the "
                    + "document name \(nameOrder.direction.rawValue) after \"\(last.field)\" \(last.direction.rawValue); "
                    + "order \"\(named.field)\" \(last.direction.rawValue) or leave it out"
            } else {
                why = "it orders the document name \(nameOrder.direction.rawValue) after \"\(last.field)\" "
                    + "\(last.direction.rawValue); order __name__ \(last.direction.rawValue) or leave it out"
            }
            throw HearthError(.unimplemented, "no index can serve this query: an index orders documents with equal "
                + "fields by name in the direction of its last field, and \(why) (and reverse the ties in the client)")
        }
        throw missingIndex(parts, orderFields, q, collectionID: collection?.id ?? groupID, indexes: indexes)
    }

    private static func target(_ q: ValidQuery) -> (CollectionPath?, String, DocumentPath?) {
        switch q.target {
        case .collection(let c): return (c, c.id, nil)
        case .collectionGroup(let id, let parent): return (nil, id, parent)
        }
    }

    private static func matchComposite(_ indexes: [IndexDefinition], _ parts: Parts, _ orderFields: [Query.Order],
                                       _ nameOrder: Query.Order, groupID: String, group: Bool) -> (IndexDefinition, Bool)? {
        let eqCount = parts.equalities.count + (parts.contains == nil ? 0 : 1)
        for def in indexes where def.state == .ready && def.collectionID == groupID
            && (def.scope == .collectionGroup) == group && def.fields.count == eqCount + orderFields.count {
            let head = def.fields.prefix(eqCount)
            let prefixOK = head.allSatisfy { f in
                if f.mode == .arrayContains { return parts.contains?.0 == f.path }
                return parts.equalities.contains { $0.0 == f.path }
            }
            guard prefixOK, head.filter({ $0.mode == .arrayContains }).count == (parts.contains == nil ? 0 : 1) else { continue }
            let tail = Array(def.fields.suffix(orderFields.count))
            guard tail.allSatisfy({ $0.mode != .arrayContains }),
                  zip(tail, orderFields).allSatisfy({ $0.path == $1.field }) else { continue }
            let same = zip(tail, orderFields).allSatisfy { ($0.mode == .descending) == ($1.direction == .descending) }
            let opposite = zip(tail, orderFields).allSatisfy { ($0.mode == .descending) != ($1.direction == .descending) }
            let reverse: Bool
            if orderFields.isEmpty { reverse = def.nameDescending != (nameOrder.direction == .descending) }
            else if same { reverse = false } else if opposite { reverse = true } else { continue }
            guard (def.nameDescending != reverse) == (nameOrder.direction == .descending) else { continue }
            return (def, reverse)
        }
        return nil
    }

    private static func missingIndex(_ parts: Parts, _ orderFields: [Query.Order], _ q: ValidQuery,
                                     collectionID: String, indexes: [IndexDefinition]) -> HearthError {
        let fieldNames = parts.equalities.map { $0.0.description } + (parts.contains.map { [$0.0.description] } ?? [])
            + orderFields.map { $0.field.description }
        var fields: [String] = parts.equalities.map { "[\"\($0.0)\",\"asc\"]" }
        if let c = parts.contains { fields.append("[\"\(c.0)\",\"array-contains\"]") }
        fields += orderFields.map { "[\"\($0.field)\",\"\($0.direction.rawValue)\"]" }
        if fields.count > IndexDefinition.maxFields {
            return .invalid("the query needs an index of \(fields.count) fields (its equalities, array-contains and "
                + "orderBy); an index holds at most \(IndexDefinition.maxFields)")
        }
        let scope = q.isCollectionGroup ? "collectionGroup" : "collection"
        if let building = indexes.first(where: { $0.state == .building && $0.collectionID == collectionID
                                                 && $0.scope == (q.isCollectionGroup ? .collectionGroup : .collection)
                                                 && Set($0.fields.map(\.path.description)) == Set(fieldNames) }) {
            return HearthError(.failedPrecondition, "the query requires index #\(building.id) \(building.summary), which is still building; retry shortly")
        }
        let spec = "{\"op\":\"index\",\"action\":\"create\",\"collection\":\"\(collectionID)\",\"scope\":\"\(scope)\",\"fields\":[\(fields.joined(separator: ","))]}"
        return HearthError(.failedPrecondition, "the query requires an index; create it with \(spec)")
    }
}

extension CollectionPath {
    /// Unused scope for group-scoped composite prefixes (which ignore the collection path).
    static let placeholder = try! CollectionPath(parsing: "_")
}
