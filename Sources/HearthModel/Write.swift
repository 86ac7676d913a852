/// A condition a document must meet for a write (or a `verify`) to apply.
public enum Precondition: Sendable, Equatable {
    case none
    /// The document must exist (`true`) or must not (`false`).
    case exists(Bool)
    /// The document must exist with exactly this update time.
    case updateTime(Timestamp)
}

/// A server-side change to one field, applied after the write's data, in the order given.
public enum Transform: Sendable, Equatable {
    case serverTimestamp
    case increment(Value)
    case maximum(Value)
    case minimum(Value)
    case arrayUnion([Value])
    case arrayRemove([Value])

    public var name: String {
        switch self {
        case .serverTimestamp: return "$serverTimestamp"
        case .increment: return "$increment"
        case .maximum: return "$maximum"
        case .minimum: return "$minimum"
        case .arrayUnion: return "$arrayUnion"
        case .arrayRemove: return "$arrayRemove"
        }
    }
}

public struct FieldTransform: Sendable, Equatable {
    public var field: FieldPath
    public var transform: Transform
    public init(field: FieldPath, transform: Transform) { self.field = field; self.transform = transform }
}

/// One write of a commit, in Firestore's shape: an operation on one document, field transforms applied after
/// it, and a precondition checked before it.
///
/// - `set` is `.update(fields, mask: nil)`: the document becomes `fields`.
/// - `set` with merge / `update` is `.update(fields, mask: paths)`: each masked path takes its value from
///   `fields`, or is deleted when `fields` lacks it; other fields are kept.
/// - `create` is `set` with precondition `exists(false)`; `update` carries `exists(true)`.
public struct Write: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        case update(fields: MapValue, mask: [FieldPath]?)
        case delete
        /// Checks the precondition only (optimistic transactions).
        case verify
    }

    /// Which op the client named, for messages and error codes (create → ALREADY_EXISTS, update → NOT_FOUND).
    public enum Kind: String, Sendable { case set, create, update, delete, verify }

    public var kind: Kind
    public var path: DocumentPath
    public var operation: Operation
    public var transforms: [FieldTransform]
    public var precondition: Precondition

    public init(kind: Kind, path: DocumentPath, operation: Operation, transforms: [FieldTransform] = [],
                precondition: Precondition = .none) {
        self.kind = kind
        self.path = path
        self.operation = operation
        self.transforms = transforms
        self.precondition = precondition
    }
}

/// The outcome of one write in a committed commit.
public struct WriteResult: Sendable, Equatable {
    public var path: DocumentPath
    /// The document's update time after the commit (unchanged when the write changed nothing; the commit
    /// time for a delete).
    public var updateTime: Timestamp
    /// The value each transform left in its field, in the write's transform order.
    public var transformResults: [Value]

    public init(path: DocumentPath, updateTime: Timestamp, transformResults: [Value] = []) {
        self.path = path
        self.updateTime = updateTime
        self.transformResults = transformResults
    }
}
