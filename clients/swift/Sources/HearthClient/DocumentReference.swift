import Foundation

/// A document location (Firestore's `DocumentReference`). Creating one sends nothing; each operation is one
/// request on the instance's connection. Async forms throw `HearthError`; callback forms call back on
/// `settings.dispatchQueue`, and calls made one after another are sent (and applied) in that order.
public final class DocumentReference: Sendable, Hashable, CustomStringConvertible {
    public let firestore: Hearth
    /// The slash-separated path, e.g. `users/u1`.
    public let path: String

    init(db: Hearth, path: String) {
        firestore = db
        self.path = path
    }

    /// The last path segment.
    public var documentID: String { path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path }
    /// The collection holding this document.
    public var parent: CollectionReference {
        CollectionReference(db: firestore, path: path.split(separator: "/").dropLast().joined(separator: "/"))
    }
    /// A subcollection of this document.
    public func collection(_ collectionPath: String) -> CollectionReference {
        CollectionReference(db: firestore, path: "\(path)/\(collectionPath)")
    }

    public var description: String { "DocumentReference(\(path))" }
    public static func == (a: DocumentReference, b: DocumentReference) -> Bool { a.path == b.path && a.firestore === b.firestore }
    public func hash(into h: inout Hasher) { h.combine(path) }

    // MARK: async

    /// Reads the document; a missing one gives a snapshot with `exists == false`.
    public func getDocument() async throws -> DocumentSnapshot {
        try await firestore.perform(getRequest, map: snapshot)
    }

    /// Reads and decodes the document (`getDocument().data(as:)`).
    public func getDocument<T: Decodable>(as type: T.Type, decoder: Hearth.Decoder = Hearth.Decoder()) async throws -> T {
        try await getDocument().data(as: type, decoder: decoder)
    }

    /// Replaces the document (or with `merge: true` writes only the fields given, nested maps merging).
    public func setData(_ documentData: [String: Any], merge: Bool = false) async throws {
        try await write(WriteEncoding.set(path, documentData, merge: merge))
    }

    /// Writes only the listed fields (`String` dotted paths or `FieldPath`s), each of which must be in `data`.
    public func setData(_ documentData: [String: Any], mergeFields: [Any]) async throws {
        try await write(WriteEncoding.set(path, documentData, mergeFields: mergeFields))
    }

    /// Encodes `value` with `Hearth.Encoder` and writes it like `setData(_:merge:)`.
    public func setData<T: Encodable>(from value: T, merge: Bool = false, encoder: Hearth.Encoder = Hearth.Encoder()) async throws {
        try await write(WriteEncoding.set(path, try encoder.encode(value), merge: merge))
    }

    /// Changes fields of an existing document (`.notFound` otherwise). Keys are dotted field paths
    /// (`"address.city"`) or `FieldPath`s; a map value replaces the field wholesale.
    public func updateData(_ fields: [AnyHashable: Any]) async throws {
        try await write(WriteEncoding.update(path, fields))
    }

    /// Deletes the document (succeeds when it does not exist).
    public func delete() async throws {
        try await write(WriteEncoding.delete(path))
    }

    // MARK: callbacks
    //
    // The completion argument has no default (as in the async variants Swift generates for Firestore's
    // Objective-C methods): a call without `completion:` can only be the async form, so `try await
    // ref.setData(...)` waits for the write in every context, top-level code included. Pass `completion: nil`
    // to send a write without waiting for its outcome.

    public func getDocument(completion: @escaping @Sendable (DocumentSnapshot?, Error?) -> Void) {
        firestore.perform(getRequest, map: snapshot, completion: completion)
    }

    public func setData(_ documentData: [String: Any], merge: Bool = false, completion: (@Sendable (Error?) -> Void)?) {
        write({ try WriteEncoding.set(path, documentData, merge: merge) }, completion)
    }

    public func setData(_ documentData: [String: Any], mergeFields: [Any], completion: (@Sendable (Error?) -> Void)?) {
        write({ try WriteEncoding.set(path, documentData, mergeFields: mergeFields) }, completion)
    }

    /// Firestore's form: encoding errors throw here; the write's outcome goes to `completion` (`nil`: not
    /// reported). Firestore lets `completion` default to nil; here it must be written, so that `try await
    /// ref.setData(from: value)` is always the async form.
    public func setData<T: Encodable>(from value: T, merge: Bool = false, encoder: Hearth.Encoder = Hearth.Encoder(),
                                      completion: (@Sendable (Error?) -> Void)?) throws {
        let request = try WriteEncoding.set(path, try encoder.encode(value), merge: merge)
        write({ request }, completion)
    }

    public func updateData(_ fields: [AnyHashable: Any], completion: (@Sendable (Error?) -> Void)?) {
        write({ try WriteEncoding.update(path, fields) }, completion)
    }

    public func delete(completion: (@Sendable (Error?) -> Void)?) {
        write({ WriteEncoding.delete(path) }, completion)
    }

    // MARK: plumbing

    var getRequest: [String: JSON] { ["op": .string("get"), "path": .string(path)] }

    @Sendable func snapshot(_ obj: [String: JSON]) throws -> DocumentSnapshot {
        DocumentSnapshot(reference: self, document: obj["doc"].flatMap { WireDocument($0) })
    }

    private func write(_ request: [String: JSON]) async throws {
        _ = try await firestore.connection.call(request)
    }

    private func write(_ build: () throws -> [String: JSON], _ completion: (@Sendable (Error?) -> Void)?) {
        let done = Hearth.ignoringValue(completion)
        do {
            firestore.perform(try build(), map: { _ in true }, completion: done)
        } catch {
            firestore.fail(error, done)
        }
    }
}
