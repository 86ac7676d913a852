import Foundation

/// A collection location (Firestore's `CollectionReference`); also a query over all its documents.
public final class CollectionReference: Query, @unchecked Sendable {
    /// The slash-separated path, e.g. `users/u1/posts`.
    public let path: String

    init(db: Hearth, path: String) {
        self.path = path
        super.init(db: db, spec: QuerySpec(target: .collection(path)))
    }

    /// The last path segment.
    public var collectionID: String { path.split(separator: "/").last.map(String.init) ?? path }

    /// The document holding this subcollection; nil for a top-level collection.
    public var parent: DocumentReference? {
        let segs = path.split(separator: "/")
        guard segs.count >= 3 else { return nil }
        return DocumentReference(db: firestore, path: segs.dropLast().joined(separator: "/"))
    }

    /// A reference to a new document with a fresh 20-character ID from `[A-Za-z0-9]`, made here on the
    /// client (nothing is sent).
    public func document() -> DocumentReference { document(CollectionReference.autoID()) }

    /// The document with this ID (or relative path) in the collection.
    public func document(_ documentPath: String) -> DocumentReference {
        DocumentReference(db: firestore, path: "\(path)/\(documentPath)")
    }

    /// Creates a document with a new client-made ID (a `create`, so it can never overwrite) and returns its
    /// reference once written.
    @discardableResult
    public func addDocument(data: [String: Any]) async throws -> DocumentReference {
        let ref = document()
        _ = try await firestore.connection.call(try WriteEncoding.create(ref.path, data))
        return ref
    }

    /// Encodes `value` with `Hearth.Encoder` and adds it as a new document.
    @discardableResult
    public func addDocument<T: Encodable>(from value: T, encoder: Hearth.Encoder = Hearth.Encoder()) async throws -> DocumentReference {
        try await addDocument(data: try encoder.encode(value))
    }

    /// Callback form: the reference is returned at once (its ID is made here); `completion` reports the write
    /// (required, `nil` allowed, so that `try await addDocument(data:)` is always the async form).
    @discardableResult
    public func addDocument(data: [String: Any], completion: (@Sendable (Error?) -> Void)?) -> DocumentReference {
        let ref = document()
        let done = Hearth.ignoringValue(completion)
        do {
            firestore.perform(try WriteEncoding.create(ref.path, data), map: { _ in true }, completion: done)
        } catch {
            firestore.fail(error, done)
        }
        return ref
    }

    static let idAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    /// 20 characters from `[A-Za-z0-9]` drawn with the system's secure generator.
    static func autoID() -> String {
        var rng = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in idAlphabet[Int.random(in: 0..<idAlphabet.count, using: &rng)] })
    }
}
