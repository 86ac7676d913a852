import Foundation

#if !canImport(Darwin)
/// Firestore's transaction blocks report errors through an `NSErrorPointer`; Linux Foundation has no such
/// type, so this alias lets the same code compile there (`errorPointer?.pointee = error as NSError`).
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?
#endif

/// The reads and buffered writes of one transaction attempt (Firestore's `Transaction`).
///
/// Reads go to the server and record what they saw (each document's update time, or its absence); writes
/// are only buffered. At the end the attempt is one `commit`: every document read gets a precondition —
/// on its first write (`updateTime`, or `exists:false` if it was missing), or a `verify` when it is not
/// written (or is updated after being read as missing) — so the commit applies only if nothing read has
/// changed since. Reads must come before writes, as in Firestore.
public final class Transaction: @unchecked Sendable {
    let db: Hearth
    private let lock = NSLock()
    private var reads: [String: WireDocument?] = [:]
    private var readOrder: [String] = []
    private var writes: [[String: JSON]] = []
    private var error: Error?

    init(db: Hearth) { self.db = db }

    // MARK: reads

    /// Reads a document inside the transaction. Throws `.invalidArgument` after a write, and `.aborted`
    /// (retried by `runTransaction`) when a document read twice has changed in between.
    public func getDocument(_ document: DocumentReference) async throws -> DocumentSnapshot {
        try checkReadAllowed()
        return try record(try await document.getDocument())
    }

    /// Blocking form for the `NSErrorPointer` block of `runTransaction`, which runs on a background queue.
    /// Do not call it on `settings.dispatchQueue`'s thread from an async context.
    public func getDocument(_ document: DocumentReference) throws -> DocumentSnapshot {
        try checkReadAllowed()
        let box = ResultBox<DocumentSnapshot>()
        let done = DispatchSemaphore(value: 0)
        db.connection.send(document.getRequest) { result in
            box.result = result.flatMap { obj in Result { try document.snapshot(obj) }.mapError(HearthError.from) }
            done.signal()
        }
        done.wait()
        return try record(try box.result!.get())
    }

    private func checkReadAllowed() throws {
        try lock.withLock {
            guard writes.isEmpty else {
                throw HearthError.invalid("a transaction must do all of its reads before any write")
            }
        }
    }

    private func record(_ snapshot: DocumentSnapshot) throws -> DocumentSnapshot {
        try lock.withLock {
            let path = snapshot.reference.path
            if let earlier = reads[path] {
                guard earlier?.updateTime == snapshot.document?.updateTime else {
                    throw HearthError(.aborted, "\(path) changed between two reads of one transaction")
                }
            } else {
                reads[path] = snapshot.document
                readOrder.append(path)
            }
            return snapshot
        }
    }

    // MARK: writes

    private func add(_ build: () throws -> [String: JSON]) -> Transaction {
        lock.withLock {
            do { writes.append(try build()) } catch { self.error = self.error ?? error }
        }
        return self
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference) -> Transaction {
        add { try WriteEncoding.set(document.path, data, merge: false) }
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, merge: Bool) -> Transaction {
        add { try WriteEncoding.set(document.path, data, merge: merge) }
    }

    @discardableResult
    public func setData(_ data: [String: Any], forDocument document: DocumentReference, mergeFields: [Any]) -> Transaction {
        add { try WriteEncoding.set(document.path, data, mergeFields: mergeFields) }
    }

    @discardableResult
    public func setData<T: Encodable>(from value: T, forDocument document: DocumentReference, merge: Bool = false,
                                      encoder: Hearth.Encoder = Hearth.Encoder()) throws -> Transaction {
        let data = try encoder.encode(value)
        return add { try WriteEncoding.set(document.path, data, merge: merge) }
    }

    /// Creates the document; the commit fails with `.alreadyExists` if it exists.
    @discardableResult
    public func createDocument(_ data: [String: Any], forDocument document: DocumentReference) -> Transaction {
        add { try WriteEncoding.create(document.path, data) }
    }

    @discardableResult
    public func updateData(_ fields: [AnyHashable: Any], forDocument document: DocumentReference) -> Transaction {
        add { try WriteEncoding.update(document.path, fields) }
    }

    @discardableResult
    public func deleteDocument(_ document: DocumentReference) -> Transaction {
        add { WriteEncoding.delete(document.path) }
    }

    // MARK: commit

    /// The `commit` request with the read preconditions, or nil when there is nothing to check or write.
    func commitRequest() throws -> [String: JSON]? {
        try lock.withLock {
            if let error { throw error }
            var verifies: [[String: JSON]] = []
            var out: [[String: JSON]] = []
            var covered = Set<String>()
            for var w in writes {
                let path = w["path"]?.stringValue ?? ""
                if let read = reads[path], covered.insert(path).inserted {
                    switch w["op"]?.stringValue {
                    case "set", "delete":
                        w["precondition"] = WriteEncoding.precondition(readAs: read)
                    case "update" where read != nil:
                        w["precondition"] = WriteEncoding.precondition(readAs: read)
                    case "update":
                        verifies.append(WriteEncoding.verify(path, WriteEncoding.precondition(readAs: read)))
                    default:
                        break   // create: its implied exists:false is the precondition
                    }
                }
                out.append(w)
            }
            for path in readOrder where !covered.contains(path) {
                verifies.append(WriteEncoding.verify(path, WriteEncoding.precondition(readAs: reads[path] ?? nil)))
            }
            let all = verifies + out
            return all.isEmpty ? nil : ["op": .string("commit"), "writes": .array(all.map { .object($0) })]
        }
    }

    /// True when a document read by this attempt is no longer as it was read (so a NOT_FOUND or
    /// ALREADY_EXISTS came from a conflict rather than from the app's own writes).
    func readsChanged() async -> Bool {
        let (paths, seen) = lock.withLock { (readOrder, reads) }
        guard !paths.isEmpty, let now = try? await db.getAll(paths.map { db.document($0) }) else { return false }
        return zip(paths, now).contains { path, snap in (seen[path] ?? nil)?.updateTime != snap.document?.updateTime }
    }
}

/// A slot filled on one thread and read on another after a semaphore.
final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, HearthError>?
}
