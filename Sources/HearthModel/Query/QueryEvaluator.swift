/// The reference implementation of query execution over an in-memory set of documents: the oracle that
/// index-backed execution is tested against, and the server's post-filter. Input paths are assumed unique;
/// each matching document appears once in the result.
public enum QueryEvaluator {
    public typealias Doc = (path: DocumentPath, fields: MapValue)

    /// Filter, sort by the normalized order, apply cursors, then offset, then `limit` (or `limitToLast`:
    /// the last n in query order, executed as the reversed query with a limit), then the `select`
    /// projection.
    public static func run(_ q: ValidQuery, over docs: [Doc]) -> [Doc] {
        let rows = results(q, over: docs)
        guard let select = q.select else { return rows }
        return rows.map { ($0.path, project($0.fields, select)) }
    }

    /// `run` without the projection (what aggregations read).
    public static func results(_ q: ValidQuery, over docs: [Doc]) -> [Doc] {
        let (query, reverse) = q.execution
        var rows = docs.filter { query.matchesWithinCursors($0.path, $0.fields) }
        rows.sort { query.compare($0.path, $0.fields, $1.path, $1.fields) < 0 }
        var window = rows.dropFirst(min(query.offset, rows.count))
        if let n = query.limit { window = window.prefix(n) }
        return reverse ? Array(window.reversed()) : Array(window)
    }

    /// Keeps only the listed field paths (missing ones are skipped; `__name__` keeps nothing).
    public static func project(_ fields: MapValue, _ select: [FieldPath]) -> MapValue {
        var out = MapValue()
        for path in select where !path.isDocumentID {
            if let v = fields.value(at: path) { out.set(v, at: path) }
        }
        return out
    }
}
