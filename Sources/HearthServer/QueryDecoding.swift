import HearthModel
import HearthProtocol

/// Builds a validated `ValidQuery` from the fields of a `query`-shaped object:
/// `{collection | collectionGroup[, parent], where, orderBy, limit, limitToLast, offset, startAt, startAfter,
/// endAt, endBefore, select}`. Errors are INVALID_ARGUMENT naming the field or rule.
package enum QueryDecoding {
    static let fields: Set<String> = ["collection", "collectionGroup", "parent", "where", "orderBy", "limit", "limitToLast",
                                      "offset", "startAt", "startAfter", "endAt", "endBefore", "select"]

    /// `context` is the prefix errors carry when the query is a field of the request (`query`); a query
    /// made of the request's own fields has none (the dispatcher names the op).
    package static func decode(_ obj: JSONRef, context: String? = nil) throws(HearthError) -> ValidQuery {
        guard let context else { return try decodeUnprefixed(obj) }
        do {
            return try decodeUnprefixed(obj)
        } catch {
            throw error.prefixed(context)
        }
    }

    private static func present(_ obj: JSONRef, _ name: String) -> JSONRef? {
        guard let v = obj[name], v.kind != .null else { return nil }
        return v
    }

    private static func decodeUnprefixed(_ obj: JSONRef) throws(HearthError) -> ValidQuery {
        for m in obj.members where !fields.contains(m.key) && m.key != "op" && m.key != "id" {
            throw .invalid("unknown query field \"\(m.key)\"")
        }
        var query: Query
        let collection = present(obj, "collection"), group = present(obj, "collectionGroup")
        switch (collection, group) {
        case (let c?, nil):
            guard c.kind == .string else { throw .invalid("field \"collection\" must be a collection path string") }
            do { query = Query.collection(try CollectionPath(parsing: c.string!)) } catch { throw .invalid("field \"collection\": \(error.message)") }
            if present(obj, "parent") != nil { throw .invalid("\"parent\" goes with collectionGroup only (put the parent in the collection path)") }
        case (nil, let g?):
            guard g.kind == .string else { throw .invalid("field \"collectionGroup\" must be a collection ID string") }
            var parent: DocumentPath?
            if let p = present(obj, "parent") {
                guard p.kind == .string else { throw .invalid("field \"parent\" must be a document path string") }
                do { parent = try DocumentPath(parsing: p.string!) } catch { throw .invalid("field \"parent\": \(error.message)") }
            }
            query = Query.collectionGroup(g.string!, parent: parent)
        case (nil, nil): throw .invalid("a query needs \"collection\" or \"collectionGroup\"")
        default: throw .invalid("give either \"collection\" or \"collectionGroup\", not both")
        }

        if let w = present(obj, "where") {
            if w.kind == .array {
                let parts = try filters(w, path: "where")
                query.filter = parts.count == 1 ? parts[0] : .composite(.and, parts)
            } else {
                query.filter = try filter(w, path: "where")
            }
        }
        if let o = present(obj, "orderBy") {
            guard o.kind == .array else { throw .invalid("field \"orderBy\" must be an array of \"field\" or [\"field\",\"asc\"|\"desc\"]") }
            for (i, el) in o.elements.enumerated() { query.orderBy.append(try order(el, path: "orderBy[\(i)]")) }
        }
        query.limit = try count(obj, "limit")
        query.limitToLast = try count(obj, "limitToLast")
        query.offset = try count(obj, "offset") ?? 0
        let startAt = try cursor(obj, "startAt"), startAfter = try cursor(obj, "startAfter")
        let endAt = try cursor(obj, "endAt"), endBefore = try cursor(obj, "endBefore")
        if startAt != nil && startAfter != nil { throw .invalid("give either startAt or startAfter, not both") }
        if endAt != nil && endBefore != nil { throw .invalid("give either endAt or endBefore, not both") }
        query.startAt = startAt.map { Query.Bound($0, inclusive: true) } ?? startAfter.map { Query.Bound($0, inclusive: false) }
        query.endAt = endAt.map { Query.Bound($0, inclusive: true) } ?? endBefore.map { Query.Bound($0, inclusive: false) }
        if let s = present(obj, "select") {
            guard s.kind == .array else { throw .invalid("field \"select\" must be an array of field paths") }
            query.select = try WriteDecoding.fieldPaths(s, "select")
        }
        return try query.validated()
    }

    private static func filters(_ list: JSONRef, path: @autoclosure () -> String) throws(HearthError) -> [Filter] {
        var out: [Filter] = []
        for (i, el) in list.elements.enumerated() { out.append(try filter(el, path: "\(path())[\(i)]")) }
        return out
    }

    private static func filter(_ ref: JSONRef, path: @autoclosure () -> String) throws(HearthError) -> Filter {
        if ref.kind == .object {
            guard ref.count == 1, let m = ref.members.first(where: { _ in true }), m.key == "and" || m.key == "or" else {
                throw .invalid("\(path()): a composite filter is {\"and\":[...]} or {\"or\":[...]}")
            }
            guard m.value.kind == .array else { throw .invalid("\(path()).\(m.key) must be an array of filters") }
            return .composite(m.key == "and" ? .and : .or, try filters(m.value, path: "\(path()).\(m.key)"))
        }
        guard ref.kind == .array, ref.count == 3 else {
            throw .invalid("\(path()): a filter is [\"field\", \"op\", value] or {\"and\"|\"or\":[...]}")
        }
        let items = Array(ref.elements)
        guard items[0].kind == .string else { throw .invalid("\(path())[0] must be a field path string") }
        let field: FieldPath
        do { field = try FieldPath.parse(items[0].string!) } catch { throw .invalid("\(path())[0]: \(error.message)") }
        guard items[1].kind == .string, let op = Filter.Operator(rawValue: items[1].string!) else {
            let ops = Filter.Operator.allCases.map(\.rawValue).joined(separator: " ")
            throw .invalid("\(path())[1] must be one of: \(ops)")
        }
        let value = try operand(items[2], path: "\(path())[2]")
        return .field(field, op, value)
    }

    private static func order(_ ref: JSONRef, path: @autoclosure () -> String) throws(HearthError) -> Query.Order {
        var name: JSONRef = ref
        var direction = Query.Direction.ascending
        if ref.kind == .array {
            let items = Array(ref.elements)
            guard (1...2).contains(items.count) else { throw .invalid("\(path()) must be \"field\" or [\"field\",\"asc\"|\"desc\"]") }
            name = items[0]
            if items.count == 2 {
                guard items[1].kind == .string, let d = Query.Direction(rawValue: items[1].string!) else {
                    throw .invalid("\(path())[1] must be \"asc\" or \"desc\"")
                }
                direction = d
            }
        }
        guard name.kind == .string else { throw .invalid("\(path()) must be \"field\" or [\"field\",\"asc\"|\"desc\"]") }
        do { return Query.Order(try FieldPath.parse(name.string!), direction) } catch { throw .invalid("\(path()): \(error.message)") }
    }

    /// `limit`, `limitToLast`, `offset`: an integer from 0 to `QueryLimits.maxCount`.
    private static func count(_ obj: JSONRef, _ name: String) throws(HearthError) -> Int? {
        guard let v = present(obj, name) else { return nil }
        let expected = { "an integer from 0 to \(QueryLimits.maxCount)" }
        guard v.kind == .int, let n = v.int64 else { throw .invalid("field \"\(name)\" must be \(expected()), not \(v.kind.article)") }
        guard n >= 0 && n <= Int64(QueryLimits.maxCount) else { throw .invalid("field \"\(name)\" must be \(expected()), got \(n)") }
        return Int(n)
    }

    private static func cursor(_ obj: JSONRef, _ name: String) throws(HearthError) -> [Value]? {
        guard let v = present(obj, name) else { return nil }
        guard v.kind == .array else { throw .invalid("field \"\(name)\" must be an array of values (a prefix of the order)") }
        var out: [Value] = []
        for (i, el) in v.elements.enumerated() { out.append(try operand(el, path: "\(name)[\(i)]")) }
        return out
    }

    /// A filter operand or cursor value: any value form (nested arrays allowed, as `in` lists need them);
    /// the value decoder refuses transforms and other write sentinels, naming them.
    private static func operand(_ ref: JSONRef, path: @autoclosure () -> String) throws(HearthError) -> Value {
        try ValueCodec.decodeValue(ref, path: path(), options: ValueCodec.Options(allowNestedArrays: true))
    }
}
