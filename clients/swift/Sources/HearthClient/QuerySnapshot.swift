import Foundation

/// The result of a query (Firestore's `QuerySnapshot`): its documents in query order and, for listener
/// snapshots, the changes since the previous snapshot (for `getDocuments()`, every document as added).
public final class QuerySnapshot: Sendable {
    public let query: Query
    public let documents: [QueryDocumentSnapshot]
    public let documentChanges: [DocumentChange]

    init(query: Query, documents: [QueryDocumentSnapshot], documentChanges: [DocumentChange]) {
        self.query = query
        self.documents = documents
        self.documentChanges = documentChanges
    }

    public var count: Int { documents.count }
    public var isEmpty: Bool { documents.isEmpty }
    public var metadata: SnapshotMetadata { SnapshotMetadata(hasPendingWrites: false, isFromCache: false) }

    /// Firestore's form; Hearth has no metadata-only changes, so the flag changes nothing.
    public func documentChanges(includeMetadataChanges: Bool) -> [DocumentChange] { documentChanges }
}
