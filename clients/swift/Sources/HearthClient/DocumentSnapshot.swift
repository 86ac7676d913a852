import Foundation

/// What a snapshot's metadata says (Firestore's `SnapshotMetadata`). Hearth has no local cache or latency
/// compensation, so both flags are always false; they exist so Firestore code reading them compiles.
public struct SnapshotMetadata: Sendable, Hashable {
    public let hasPendingWrites: Bool
    public let isFromCache: Bool
}

/// A document read at one point in time (Firestore's `DocumentSnapshot`); `exists` is false for a missing
/// document, whose `data()` is nil.
public class DocumentSnapshot: @unchecked Sendable {
    public let reference: DocumentReference
    let document: WireDocument?

    init(reference: DocumentReference, document: WireDocument?) {
        self.reference = reference
        self.document = document
    }

    public var exists: Bool { document != nil }
    public var documentID: String { reference.documentID }
    public var metadata: SnapshotMetadata { SnapshotMetadata(hasPendingWrites: false, isFromCache: false) }
    /// When the document was created (nil when it does not exist).
    public var createTime: Timestamp? { document?.createTime }
    /// When the document's content last changed (nil when it does not exist).
    public var updateTime: Timestamp? { document?.updateTime }

    /// The fields, decoded (see `WireCodec`: integers are `Int`, timestamps `Timestamp`, bytes `Data`,
    /// references `DocumentReference`); nil when the document does not exist.
    public func data() -> [String: Any]? {
        document.map { WireCodec.decodeMap($0.data, db: reference.firestore) }
    }

    /// The value at a dotted field path (`"address.city"`, backticks quoting odd names) or a `FieldPath`;
    /// nil when absent (a stored null is `NSNull`).
    public func get(_ field: Any) -> Any? {
        guard let document, let segments = try? FieldPath.segments(of: field) else { return nil }
        return document.value(at: segments).map { WireCodec.decode($0, db: reference.firestore) }
    }

    public subscript(field: Any) -> Any? { self.get(field) }

    /// Decodes the document into `T` with `Hearth.Decoder` (timestamps decode as `Date` or `Timestamp`,
    /// `@DocumentID` properties get the document's ID). A missing document throws `DecodingError.valueNotFound`.
    public func data<T: Decodable>(as type: T.Type, decoder: Hearth.Decoder = Hearth.Decoder()) throws -> T {
        guard let data = data() else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: [], debugDescription: "document \(reference.path) does not exist"))
        }
        return try decoder.decode(T.self, from: data, in: reference)
    }
}

/// A snapshot of a document known to exist, as queries return them: `data()` is not optional.
public final class QueryDocumentSnapshot: DocumentSnapshot, @unchecked Sendable {
    init(reference: DocumentReference, existing: WireDocument) {
        super.init(reference: reference, document: existing)
    }

    public override func data() -> [String: Any] { super.data() ?? [:] }
}

extension FieldPath {
    /// The segments of a field given as a dotted `String` or a `FieldPath`.
    static func segments(of field: Any) throws -> [String] {
        if let p = field as? FieldPath { return p.segments }
        if let s = field as? String, let segs = segments(ofDotted: s) { return segs }
        throw HearthError.invalid("\(field) is not a valid field path")
    }
}
