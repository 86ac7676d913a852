import Foundation

/// A query listener's client-side state: the ordered result, kept exact by applying the server's changes,
/// rebuilt and diffed on a fresh or reset subscription, so the app sees every state once, in order, with
/// changes relative to the previous snapshot it saw.
final class QueryListener: ListenerBase, ListenerCore, @unchecked Sendable {
    private let query: Query
    private let callback: @Sendable (QuerySnapshot?, Error?) -> Void
    private var docs: [WireDocument] = []

    init(query: Query, wireQuery: [String: JSON], registration: Registration,
         callback: @escaping @Sendable (QuerySnapshot?, Error?) -> Void) {
        self.query = query
        self.callback = callback
        super.init(target: ["query": .object(wireQuery)], registration: registration)
    }

    func apply(snapshot obj: [String: JSON]) -> ApplyOutcome {
        guard let seq = obj["seq"]?.intValue else { return divergence() }
        let fresh = obj["reset"]?.boolValue == true || obj["initial"]?.boolValue == true || !hasState
        if isStale(seq: seq, fresh: fresh) { return .applied }
        let changes = obj["changes"]?.arrayValue ?? []
        var next: [WireDocument]
        var records: [SnapshotDiff.Record] = []
        if fresh {
            // The whole state from scratch; relative to what the app saw it is a diff (none yet: the
            // server's own additions).
            next = []
            var fromScratch: [SnapshotDiff.Record] = []
            guard SnapshotDiff.apply(changes, to: &next, records: &fromScratch) else { return divergence() }
            records = hasState ? SnapshotDiff.diff(old: docs, new: next) : fromScratch
        } else {
            next = docs
            guard SnapshotDiff.apply(changes, to: &next, records: &records) else { return divergence() }
        }
        if let size = obj["size"]?.intValue, Int(size) != next.count { return divergence() }
        let first = !hasState
        docs = next
        applied(seq: seq)
        if first || !records.isEmpty { deliver(records) }
        return .applied
    }

    private func deliver(_ records: [SnapshotDiff.Record]) {
        let db = query.firestore
        let snaps = docs.map { QueryDocumentSnapshot(reference: db.document($0.path), existing: $0) }
        let changes = records.map { r in
            DocumentChange(type: r.type,
                           document: QueryDocumentSnapshot(reference: db.document(r.document.path), existing: r.document),
                           oldIndex: r.oldIndex < 0 ? DocumentChange.notFound : UInt(r.oldIndex),
                           newIndex: r.newIndex < 0 ? DocumentChange.notFound : UInt(r.newIndex))
        }
        let snapshot = QuerySnapshot(query: query, documents: snaps, documentChanges: changes)
        let callback = self.callback
        registration.deliver { callback(snapshot, nil) }
    }

    override func fail(_ error: HearthError) {
        let callback = self.callback
        registration.deliverFinal { callback(nil, error) }
    }
}

extension Query {
    /// Listens to the query's result: the callback gets the initial result, then one snapshot per commit
    /// that changes it, with `documentChanges` relative to the previous snapshot delivered. The listener
    /// survives lost connections (resuming where it was, so no state is skipped or repeated) and ends only
    /// with `remove()` or an error (an invalid query, a missing index, or the server dropping a subscriber
    /// that falls too far behind), delivered once as `(nil, error)`.
    public func addSnapshotListener(_ listener: @escaping @Sendable (QuerySnapshot?, Error?) -> Void) -> ListenerRegistration {
        let registration = Registration(queue: firestore.settings.dispatchQueue, connection: firestore.connection)
        do {
            let core = QueryListener(query: self, wireQuery: try spec.wire(), registration: registration, callback: listener)
            registration.start(core)
        } catch {
            registration.deliverFinal { listener(nil, error) }
        }
        return registration
    }

    /// Firestore's form; Hearth has no metadata-only changes, so the flag changes nothing.
    public func addSnapshotListener(includeMetadataChanges: Bool,
                                    listener: @escaping @Sendable (QuerySnapshot?, Error?) -> Void) -> ListenerRegistration {
        addSnapshotListener(listener)
    }

    /// Firestore's form; Hearth has no metadata-only changes, so the flag changes nothing.
    public func snapshots(includeMetadataChanges: Bool) -> AsyncThrowingStream<QuerySnapshot, Error> { snapshots }

    /// The listener's snapshots as an async sequence; ending the iteration removes the listener.
    public var snapshots: AsyncThrowingStream<QuerySnapshot, Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }
}
