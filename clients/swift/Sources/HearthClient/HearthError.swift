import Foundation

/// An error from Hearth: the server's code and message, or a client-side failure mapped onto the same codes
/// (a lost or refused connection is `.unavailable`; a value the client cannot encode is `.invalidArgument`).
public struct HearthError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The protocol's error codes (docs/protocol.md), named as Firestore names them.
    public enum Code: String, Sendable, CaseIterable {
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
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
    public var errorDescription: String? { description }

    static func invalid(_ message: String) -> HearthError { HearthError(.invalidArgument, message) }
    static func unavailable(_ message: String) -> HearthError { HearthError(.unavailable, message) }
    static func internalError(_ message: String) -> HearthError { HearthError(.internal, message) }

    /// The error carried by a failed response (`{"ok":false,"error":{"code","message"}}`). An unknown code
    /// (a newer server) maps to `.internal`, keeping the server's code in the message.
    init(response: JSON) {
        let err = response["error"]
        let raw = err?["code"]?.stringValue ?? "INTERNAL"
        let msg = err?["message"]?.stringValue ?? "the server answered ok:false without an error"
        if let c = Code(rawValue: raw) {
            self.init(c, msg)
        } else {
            self.init(.internal, "\(raw): \(msg)")
        }
    }

    /// Any error as a HearthError (others become `.internal` with their description).
    static func from(_ error: Error) -> HearthError {
        (error as? HearthError) ?? HearthError(.internal, String(describing: error))
    }
}
