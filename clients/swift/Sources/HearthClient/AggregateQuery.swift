import Foundation

/// A query's aggregations, run by `getAggregation(source:)` (Firestore's `AggregateQuery`).
public final class AggregateQuery: Sendable {
    public let query: Query
    let fields: [AggregateField]

    init(query: Query, fields: [AggregateField]) {
        self.query = query
        self.fields = fields
    }

    /// Runs the aggregations on the server: a plain count uses the `count` op, others `aggregate`.
    public func getAggregation(source: AggregateSource = .server) async throws -> AggregateQuerySnapshot {
        let request = try self.request()
        return try await query.firestore.perform(request, map: makeSnapshot)
    }

    public func getAggregation(source: AggregateSource = .server,
                               completion: @escaping @Sendable (AggregateQuerySnapshot?, Error?) -> Void) {
        do {
            query.firestore.perform(try request(), map: makeSnapshot, completion: completion)
        } catch {
            query.firestore.fail(error, completion)
        }
    }

    private var isPlainCount: Bool { fields == [.count()] }

    private func request() throws -> [String: JSON] {
        var q = try query.spec.wire()
        if isPlainCount {
            q["op"] = .string("count")
            return q
        }
        var aggs: [String: JSON] = [:]
        for (i, f) in fields.enumerated() { aggs["a\(i)"] = f.wire }
        return ["op": .string("aggregate"), "query": .object(q), "aggregations": .object(aggs)]
    }

    @Sendable private func makeSnapshot(_ obj: [String: JSON]) throws -> AggregateQuerySnapshot {
        var values: [AggregateField: JSON] = [:]
        if isPlainCount {
            guard let n = obj["count"] else { throw HearthError.internalError("count answered without count") }
            values[.count()] = n
        } else {
            guard let result = obj["result"]?.objectValue else { throw HearthError.internalError("aggregate answered without result") }
            for (i, f) in fields.enumerated() { values[f] = result["a\(i)"] ?? .null }
        }
        return AggregateQuerySnapshot(query: self, values: values)
    }
}
