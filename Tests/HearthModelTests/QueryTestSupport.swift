import HearthModel

/// Helpers for the Query* and IndexKey test files (namespaced to stay clear of other test helpers).
enum QT {
    static func path(_ s: String) -> DocumentPath { try! DocumentPath(parsing: s) }
    static func coll(_ s: String) -> CollectionPath { try! CollectionPath(parsing: s) }
    static func field(_ s: String) -> FieldPath { try! FieldPath.parse(s) }
    static func reference(_ s: String) -> Value { .reference(path(s)) }

    static func fields(_ pairs: KeyValuePairs<String, Value>) -> MapValue {
        MapValue(pairs.map { MapValue.Field(key: $0.key, value: $0.value) })
    }

    static func doc(_ p: String, _ pairs: KeyValuePairs<String, Value>) -> QueryEvaluator.Doc {
        (path(p), fields(pairs))
    }

    static func doc(_ p: String, _ m: MapValue) -> QueryEvaluator.Doc { (path(p), m) }

    static func f(_ field: String, _ op: Filter.Operator, _ value: Value) -> Filter {
        .field(QT.field(field), op, value)
    }

    static func and(_ fs: Filter...) -> Filter { .composite(.and, fs) }
    static func or(_ fs: Filter...) -> Filter { .composite(.or, fs) }

    static func asc(_ field: String) -> Query.Order { Query.Order(QT.field(field), .ascending) }
    static func desc(_ field: String) -> Query.Order { Query.Order(QT.field(field), .descending) }

    /// A query on collection `c` with the given parts.
    static func query(_ c: String = "c", filter: Filter? = nil, orderBy: [Query.Order] = [], limit: Int? = nil,
                      limitToLast: Int? = nil, offset: Int = 0, startAt: Query.Bound? = nil,
                      endAt: Query.Bound? = nil, select: [FieldPath]? = nil) -> Query {
        Query(target: .collection(coll(c)), filter: filter, orderBy: orderBy, limit: limit,
              limitToLast: limitToLast, offset: offset, startAt: startAt, endAt: endAt, select: select)
    }

    static func valid(_ q: Query) -> ValidQuery { try! q.validated() }

    /// The validation error of `q`, or nil when it is valid.
    static func error(_ q: Query) -> HearthError? {
        do { _ = try q.validated(); return nil } catch { return error }
    }

    /// IDs (last path segments) of the query's results over `docs`.
    static func ids(_ q: Query, _ docs: [QueryEvaluator.Doc]) -> [String] {
        QueryEvaluator.run(valid(q), over: docs).map(\.path.id)
    }

    /// Full paths of the query's results over `docs`.
    static func paths(_ q: Query, _ docs: [QueryEvaluator.Doc]) -> [String] {
        QueryEvaluator.run(valid(q), over: docs).map(\.path.description)
    }

    static func ints(_ r: ClosedRange<Int64>) -> Value { .array(r.map { .int($0) }) }
}
