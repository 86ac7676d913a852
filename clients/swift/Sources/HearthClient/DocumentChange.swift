import Foundation

/// How a document changed between two snapshots of a query.
public enum DocumentChangeType: Sendable, Hashable {
    case added, modified, removed
}

/// One change of a query snapshot (Firestore's `DocumentChange`). Apply a snapshot's changes one at a
/// time, in order: `removed` deletes at `oldIndex`; `added` inserts at `newIndex`; `modified` removes at
/// `oldIndex` then inserts at `newIndex`. An index that does not apply (`oldIndex` of an added document,
/// `newIndex` of a removed one) is `DocumentChange.notFound` (`UInt(NSNotFound)`), as in Firestore.
public struct DocumentChange: Sendable {
    public static let notFound = UInt(NSNotFound)

    public let type: DocumentChangeType
    /// The document after the change (for `removed`, as it was last seen).
    public let document: QueryDocumentSnapshot
    public let oldIndex: UInt
    public let newIndex: UInt
}
