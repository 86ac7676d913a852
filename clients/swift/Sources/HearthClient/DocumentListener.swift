import Foundation

/// A document listener's state: the document (or its absence) at `lastSeq`. A fresh or reset snapshot (a
/// resume the server could not honour: another history, a seq it never reached) replaces it whole. A
/// snapshot equal to the one already delivered (as a resumed, fresh or reset subscription may send) is not
/// delivered again.
final class DocumentListener: ListenerBase, ListenerCore, @unchecked Sendable {
    private let reference: DocumentReference
    private let callback: @Sendable (DocumentSnapshot?, Error?) -> Void
    private var document: WireDocument?

    init(reference: DocumentReference, registration: Registration, callback: @escaping @Sendable (DocumentSnapshot?, Error?) -> Void) {
        self.reference = reference
        self.callback = callback
        super.init(target: ["path": .string(reference.path)], registration: registration)
    }

    func apply(snapshot obj: [String: JSON]) -> ApplyOutcome {
        guard let seq = obj["seq"]?.intValue, let docJSON = obj["doc"] else { return divergence() }
        let fresh = obj["reset"]?.boolValue == true || obj["initial"]?.boolValue == true || !hasState
        if isStale(seq: seq, fresh: fresh) { return .applied }
        let next = WireDocument(docJSON)
        if !docJSON.isNull && next == nil { return divergence() }
        let changed = !hasState || next != document
        document = next
        applied(seq: seq)
        if changed {
            let snapshot = DocumentSnapshot(reference: reference, document: next)
            let callback = self.callback
            registration.deliver { callback(snapshot, nil) }
        }
        return .applied
    }

    override func fail(_ error: HearthError) {
        let callback = self.callback
        registration.deliverFinal { callback(nil, error) }
    }
}

extension DocumentReference {
    /// Listens to the document: the callback gets its current state (`exists == false` when missing), then
    /// one snapshot per commit that changes it. Survives lost connections like query listeners; ends only
    /// with `remove()` or an error, delivered once as `(nil, error)`.
    public func addSnapshotListener(_ listener: @escaping @Sendable (DocumentSnapshot?, Error?) -> Void) -> ListenerRegistration {
        let registration = Registration(queue: firestore.settings.dispatchQueue, connection: firestore.connection)
        registration.start(DocumentListener(reference: self, registration: registration, callback: listener))
        return registration
    }

    /// Firestore's form; Hearth has no metadata-only changes, so the flag changes nothing.
    public func addSnapshotListener(includeMetadataChanges: Bool,
                                    listener: @escaping @Sendable (DocumentSnapshot?, Error?) -> Void) -> ListenerRegistration {
        addSnapshotListener(listener)
    }

    /// Firestore's form; Hearth has no metadata-only changes, so the flag changes nothing.
    public func snapshots(includeMetadataChanges: Bool) -> AsyncThrowingStream<DocumentSnapshot, Error> { snapshots }

    /// The listener's snapshots as an async sequence; ending the iteration removes the listener.
    public var snapshots: AsyncThrowingStream<DocumentSnapshot, Error> {
        AsyncThrowingStream { continuation in
            let registration = addSnapshotListener { snapshot, error in
                if let snapshot { continuation.yield(snapshot) } else { continuation.finish(throwing: error) }
            }
            continuation.onTermination = { _ in registration.remove() }
        }
    }
}
