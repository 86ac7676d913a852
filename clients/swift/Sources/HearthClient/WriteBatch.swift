import Foundation

/// Writes committed atomically as one `commit` request (Firestore's `WriteBatch`): all or none, in one
/// commit with one `seq`, later writes seeing earlier ones; at most 10,000 (Firestore: 500). A value that cannot be encoded is
/// reported by `commit()`, which then sends nothing. A batch commits once; committing an empty batch
/// succeeds without a request.
public final class WriteBatch: @unchecked Sendable {
    let db: Hearth
    private let lock = NSLock()
    private var writes: [[String: JSON]] = []
    private var error: Error?
    private var committed = false

    init(db: Hearth) { self.db = db }

    private func add(_ build: () throws -> [String: JSON]) -> WriteBatch {
        lock.withLock {
            do { writes.append(try build()) } catch { self.error = self.error ?? error }
        }
        return self
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference) -> WriteBatch {
        add { try WriteEncoding.set(document.path, data, merge: false) }
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, merge: Bool) -> WriteBatch {
        add { try WriteEncoding.set(document.path, data, merge: merge) }
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, mergeFields: [Any]) -> WriteBatch {
        add { try WriteEncoding.set(document.path, data, mergeFields: mergeFields) }
    }

    @discardableResult
    public func setData<T: Encodable>(from value: T, forDocument document: DocumentReference, merge: Bool = false,
                                      encoder: Hearth.Encoder = Hearth.Encoder()) throws -> WriteBatch {
        let data = try encoder.encode(value)
        return add { try WriteEncoding.set(document.path, data, merge: merge) }
    }

    /// Creates the document; the whole batch fails with `.alreadyExists` if it exists (Hearth's `create`).
    @discardableResult
    public func createDocument(_ data: [String: Any], forDocument document: DocumentReference) -> WriteBatch {
        add { try WriteEncoding.create(document.path, data) }
    }

    @discardableResult
    public func updateData(_ fields: [AnyHashable: Any], forDocument document: DocumentReference) -> WriteBatch {
        add { try WriteEncoding.update(document.path, fields) }
    }

    @discardableResult
    public func deleteDocument(_ document: DocumentReference) -> WriteBatch {
        add { WriteEncoding.delete(document.path) }
    }

    /// Commits every write atomically. Throws the server's error (naming the failing write's index) and
    /// then nothing was written.
    public func commit() async throws {
        guard let request = try takeRequest() else { return }
        _ = try await db.connection.call(request)
    }

    /// Callback form; `completion` (required, `nil` allowed, so that `try await batch.commit()` is always
    /// the async form) runs on `settings.dispatchQueue`.
    public func commit(completion: (@Sendable (Error?) -> Void)?) {
        let done = Hearth.ignoringValue(completion)
        do {
            guard let request = try takeRequest() else { return db.settings.dispatchQueue.async { completion?(nil) } }
            db.perform(request, map: { _ in true }, completion: done)
        } catch {
            db.fail(error, done)
        }
    }

    private func takeRequest() throws -> [String: JSON]? {
        try lock.withLock {
            guard !committed else { throw HearthError.invalid("a write batch can only be committed once") }
            committed = true
            if let error { throw error }
            return writes.isEmpty ? nil : ["op": .string("commit"), "writes": .array(writes.map { .object($0) })]
        }
    }
}
