import HearthModel

/// Which documents an export reads (`StoreSnapshot.documents(in:after:limit:)`).
public enum DocumentScope: Sendable, Equatable {
    /// Every document of the store.
    case all
    /// The documents directly in one collection (not in its subcollections).
    case collection(CollectionPath)
    /// The documents of every collection with this ID, wherever it is (a collection group).
    case collectionGroup(String)

    /// True when a document at `path` belongs to the scope.
    public func contains(_ path: DocumentPath) -> Bool {
        switch self {
        case .all: return true
        case .collection(let c): return path.collection == c
        case .collectionGroup(let id): return path.collection.id.utf8.elementsEqual(id.utf8)   // bytes, as SQL compares
        }
    }

    /// Document order for exports: parent collection path, then ID, both compared as UTF-8 bytes.
    public static func precedes(_ a: DocumentPath, _ b: DocumentPath) -> Bool {
        let ca = Array(a.collection.description.utf8), cb = Array(b.collection.description.utf8)
        if ca != cb { return ca.lexicographicallyPrecedes(cb) }
        return Array(a.id.utf8).lexicographicallyPrecedes(Array(b.id.utf8))
    }
}

/// How far an online backup has gone: units copied so far of the total (database pages for SQLite).
public struct BackupProgress: Sendable, Equatable {
    public var done: Int
    public var total: Int

    public init(done: Int, total: Int) {
        self.done = done
        self.total = total
    }
}

/// A finished online backup: the seq it holds, the pages copied and the bytes of the copy.
public struct BackupResult: Sendable, Equatable {
    public var seq: UInt64
    public var pages: Int
    public var bytes: Int64

    public init(seq: UInt64, pages: Int, bytes: Int64) {
        self.seq = seq
        self.pages = pages
        self.bytes = bytes
    }
}

extension StoreSnapshot {
    public func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        throw HearthError(.unimplemented, "storage: this backend cannot enumerate documents for an export")
    }

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        throw HearthError(.unimplemented, "storage: this backend cannot read the change log in a snapshot")
    }

    public func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        throw HearthError(.unimplemented, "storage: this backend cannot look request IDs up in a snapshot")
    }

    public func indexCatalog() throws(HearthError) -> [UInt8]? {
        throw HearthError(.unimplemented, "storage: this backend cannot read the index catalog in a snapshot")
    }
}
