/// The error codes Hearth answers with: Firestore's names, one table shared by the server, the clients and
/// docs/protocol.md (a test checks that every code here is documented there and nothing else is).
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    case invalidArgument = "INVALID_ARGUMENT"
    case notFound = "NOT_FOUND"
    case alreadyExists = "ALREADY_EXISTS"
    case failedPrecondition = "FAILED_PRECONDITION"
    case aborted = "ABORTED"
    case resourceExhausted = "RESOURCE_EXHAUSTED"
    case permissionDenied = "PERMISSION_DENIED"
    case unauthenticated = "UNAUTHENTICATED"
    case unimplemented = "UNIMPLEMENTED"
    case unavailable = "UNAVAILABLE"
    case `internal` = "INTERNAL"
    case dataLoss = "DATA_LOSS"

    /// One line saying when the code is used; docs/protocol.md repeats it.
    public var summary: String {
        switch self {
        case .invalidArgument: return "The request is malformed (bad JSON, unknown op, missing or mistyped field, bad path or value) or over a data limit: document size, nesting, ID length, list lengths."
        case .notFound: return "The document does not exist (update, or a precondition exists:true)."
        case .alreadyExists: return "The document exists (create, or a precondition exists:false)."
        case .failedPrecondition: return "A precondition (updateTime) failed, or the query needs an index that does not exist."
        case .aborted: return "The commit conflicted with a concurrent one; retry it."
        case .resourceExhausted: return "A limit of the server was exceeded: request line size, an input or output budget, connections, or the disk is full."
        case .permissionDenied: return "The security rules refused the request (the message names the rule, or the field a query must constrain), or an admin op came without the admin key."
        case .unauthenticated: return "A token or admin key was refused (the message says why: expired, bad signature, wrong audience...), or the connection's token expired: send hello with a fresh one."
        case .unimplemented: return "The op or option is known but not available in this build."
        case .unavailable: return "The server is shutting down or the store cannot be written; retry later."
        case .internal: return "A bug or an unexpected storage failure; the message says which."
        case .dataLoss: return "Stored data is damaged (it fails its checksum or does not decode); the message names the document, which is not served."
        }
    }
}

/// An error with a Firestore-style code and a message naming what was wrong.
public struct HearthError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func invalid(_ message: String) -> HearthError { HearthError(.invalidArgument, message) }

    /// The same error with `prefix: ` put before its message (used to name a write's index in a commit).
    public func prefixed(_ prefix: String) -> HearthError { HearthError(code, "\(prefix): \(message)") }

    public var description: String { "\(code.rawValue): \(message)" }
}
