import Foundation

/// Where a read is served from (Firestore's `FirestoreSource`). Hearth keeps no local cache, so the server
/// is the only source: `.default` and `.server` both ask it; `.cache` fails with `.unavailable`, as a
/// Firestore read from a cache that lacks the document does.
public enum HearthSource: Sendable {
    case `default`
    case server
    case cache

    func check() throws {
        if self == .cache {
            throw HearthError.unavailable("Hearth keeps no local cache: read with source .server or .default")
        }
    }
}

extension DocumentReference {
    /// `getDocument()` with Firestore's `source:` argument (see `HearthSource`).
    public func getDocument(source: HearthSource) async throws -> DocumentSnapshot {
        try source.check()
        return try await getDocument()
    }

    /// Callback form of `getDocument(source:)`.
    public func getDocument(source: HearthSource, completion: @escaping @Sendable (DocumentSnapshot?, Error?) -> Void) {
        do { try source.check() } catch { return firestore.fail(error, completion) }
        getDocument(completion: completion)
    }
}

extension Query {
    /// `getDocuments()` with Firestore's `source:` argument (see `HearthSource`).
    public func getDocuments(source: HearthSource) async throws -> QuerySnapshot {
        try source.check()
        return try await getDocuments()
    }

    /// Callback form of `getDocuments(source:)`.
    public func getDocuments(source: HearthSource, completion: @escaping @Sendable (QuerySnapshot?, Error?) -> Void) {
        do { try source.check() } catch { return firestore.fail(error, completion) }
        getDocuments(completion: completion)
    }
}
