import HearthModel

/// A commit as it would land, shown to a reviewer (the server's security rules) before anything changes: one
/// entry per document the commit touches, in first-touch order, with its fields before (the newest version,
/// pending commits included) and after every write of the commit (transforms applied). A reviewer that throws
/// refuses the whole commit; nothing is queued or changed.
public struct CommitReview {
    public struct Document {
        public let path: DocumentPath
        /// The document before the commit; nil when absent.
        public let before: MapValue?
        /// The document after the commit; nil when absent (deleted, or never there).
        public let after: MapValue?
        /// False when the commit only verifies the document (`verify` writes, preconditions only): it reads
        /// it and changes nothing.
        public let written: Bool
        /// Index of the first write of the commit on this document (for error messages).
        public let firstWrite: Int

        /// Firestore's method for the write: create (absent → present), update (present → present),
        /// delete (→ absent); nil for a document the commit only verifies.
        public var method: Method? {
            guard written else { return nil }
            if after == nil { return .delete }
            return before == nil ? .create : .update
        }
    }

    public enum Method: String, Sendable { case create, update, delete }

    public let documents: [Document]
    public let commitTime: Timestamp
    private let slots: [DocumentPath: Int]

    init(documents: [Document], commitTime: Timestamp) {
        self.documents = documents
        self.commitTime = commitTime
        var slots: [DocumentPath: Int] = [:]
        slots.reserveCapacity(documents.count)
        for (i, d) in documents.enumerated() { slots[d.path] = i }
        self.slots = slots
    }

    /// The commit's own result for `path`: `.some(fields or nil)` when the commit touches it, nil when it
    /// does not (the reader then looks at the current state).
    public func after(_ path: DocumentPath) -> MapValue?? {
        guard let i = slots[path] else { return nil }
        return .some(documents[i].after)
    }
}
