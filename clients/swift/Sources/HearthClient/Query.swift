import Foundation

/// A query (Firestore's `Query`): immutable; each builder returns a new query. Firestore's rules apply and
/// are checked by the server when the query runs (an invalid query fails with `.invalidArgument`, one that
/// needs a composite index with `.failedPrecondition` whose message holds the `index` request to create it).
public class Query: @unchecked Sendable {
    public let firestore: Hearth
    let spec: QuerySpec

    init(db: Hearth, spec: QuerySpec) {
        firestore = db
        self.spec = spec
    }

    private func with(_ change: (inout QuerySpec) -> Void) -> Query {
        var s = spec
        change(&s)
        return Query(db: firestore, spec: s)
    }

    // MARK: building

    /// Adds a filter (ANDed with the others).
    public func whereFilter(_ filter: Filter) -> Query {
        with { s in
            switch filter.node {
            case .success(let node): s.filters.append(node)
            case .failure(let e): s.error = s.error ?? e
            }
        }
    }

    /// Orders by a dotted field path.
    public func order(by field: String, descending: Bool = false) -> Query {
        with { $0.orders.append(.init(field: field, descending: descending)) }
    }

    public func order(by path: FieldPath, descending: Bool = false) -> Query { order(by: path.dotted, descending: descending) }

    /// At most `limit` documents from the start of the order.
    public func limit(to limit: Int) -> Query { with { $0.limit = limit; $0.limitToLast = nil } }

    /// The last `limit` documents of the order (needs an order), returned in query order.
    public func limit(toLast limit: Int) -> Query { with { $0.limitToLast = limit; $0.limit = nil } }

    /// Cursors from values of the order fields (a prefix of the normalized order; see docs/queries.md).
    public func start(at fieldValues: [Any]) -> Query { cursor(fieldValues, inclusive: true, start: true) }
    public func start(after fieldValues: [Any]) -> Query { cursor(fieldValues, inclusive: false, start: true) }
    public func end(at fieldValues: [Any]) -> Query { cursor(fieldValues, inclusive: true, start: false) }
    public func end(before fieldValues: [Any]) -> Query { cursor(fieldValues, inclusive: false, start: false) }

    /// Cursors at a document: its values for every field of the normalized order, then its key, so paging
    /// is exact across ties. Computed when the query runs; the document must have each ordered field.
    public func start(atDocument document: DocumentSnapshot) -> Query { cursor(document, inclusive: true, start: true) }
    public func start(afterDocument document: DocumentSnapshot) -> Query { cursor(document, inclusive: false, start: true) }
    public func end(atDocument document: DocumentSnapshot) -> Query { cursor(document, inclusive: true, start: false) }
    public func end(beforeDocument document: DocumentSnapshot) -> Query { cursor(document, inclusive: false, start: false) }

    private func cursor(_ values: [Any], inclusive: Bool, start: Bool) -> Query {
        with { s in
            do {
                let c = QuerySpec.Cursor(values: .values(try values.map { try WireCodec.encode($0) }), inclusive: inclusive)
                if start { s.start = c } else { s.end = c }
            } catch {
                s.error = s.error ?? HearthError.from(error)
            }
        }
    }

    private func cursor(_ document: DocumentSnapshot, inclusive: Bool, start: Bool) -> Query {
        with { s in
            guard let doc = document.document else {
                s.error = s.error ?? .invalid("a cursor document must exist: \(document.reference.path)")
                return
            }
            let c = QuerySpec.Cursor(values: .document(doc), inclusive: inclusive)
            if start { s.start = c } else { s.end = c }
        }
    }

    // MARK: running

    /// Runs the query: the result exactly as of one commit.
    public func getDocuments() async throws -> QuerySnapshot {
        let request = try queryRequest()
        return try await firestore.perform(request, map: makeSnapshot)
    }

    public func getDocuments(completion: @escaping @Sendable (QuerySnapshot?, Error?) -> Void) {
        do {
            firestore.perform(try queryRequest(), map: makeSnapshot, completion: completion)
        } catch {
            firestore.fail(error, completion)
        }
    }

    /// Decodes every document of the result as `T`.
    public func getDocuments<T: Decodable>(as type: T.Type, decoder: Hearth.Decoder = Hearth.Decoder()) async throws -> [T] {
        try await getDocuments().documents.map { try $0.data(as: type, decoder: decoder) }
    }

    /// The number of matching documents, computed by the server (`count`).
    public var count: AggregateQuery { AggregateQuery(query: self, fields: [.count()]) }

    /// Aggregations computed by the server (at most 5).
    public func aggregate(_ fields: [AggregateField]) -> AggregateQuery { AggregateQuery(query: self, fields: fields) }

    func queryRequest() throws -> [String: JSON] {
        var r = try spec.wire()
        r["op"] = .string("query")
        return r
    }

    @Sendable func makeSnapshot(_ obj: [String: JSON]) throws -> QuerySnapshot {
        guard let docs = obj["docs"]?.arrayValue else { throw HearthError.internalError("query answered without docs") }
        let snaps = docs.compactMap(WireDocument.init).map { QueryDocumentSnapshot(reference: firestore.document($0.path), existing: $0) }
        let changes = snaps.enumerated().map {
            DocumentChange(type: .added, document: $0.element, oldIndex: DocumentChange.notFound, newIndex: UInt($0.offset))
        }
        return QuerySnapshot(query: self, documents: snaps, documentChanges: changes)
    }
}
