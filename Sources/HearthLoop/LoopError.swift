import CLibUV

/// A failed libuv operation.
///
/// Every libuv status code in HearthLoop passes through ``LoopError/check(_:_:)`` or
/// ``LoopError/init(code:operation:)``: this is the single funnel from C status codes to Swift errors.
public struct LoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The negative libuv error code (for example `UV_EADDRINUSE`, which is `-EADDRINUSE` on Unix).
    public let code: Int32
    /// The symbolic libuv name of the code, for example `"EADDRINUSE"` (from `uv_err_name`).
    public let name: String
    /// The human-readable message, for example `"address already in use"` (from `uv_strerror`).
    public let message: String
    /// The operation that failed, for example `"uv_listen"` or `"connect 127.0.0.1:9"`.
    public let operation: String

    /// Builds an error from a negative libuv status code.
    public init(code: Int32, operation: String) {
        self.code = code
        self.name = String(cString: uv_err_name(code))
        self.message = String(cString: uv_strerror(code))
        self.operation = operation
    }

    /// An error whose message is not libuv's text for the code: a TLS failure (`EPROTO`, with the reason in
    /// `message`), for example.
    public init(code: Int32, operation: String, message: String) {
        self.code = code
        self.name = String(cString: uv_err_name(code))
        self.message = message
        self.operation = operation
    }

    /// Returns `status` unchanged when it is not negative; throws a `LoopError` otherwise.
    @discardableResult
    @inline(__always)
    public static func check(_ status: Int32, _ operation: @autoclosure () -> String) throws(LoopError) -> Int32 {
        if status < 0 { throw LoopError(code: status, operation: operation()) }
        return status
    }

    public var description: String { "\(operation): \(name) (\(message))" }

    /// `true` when the peer reset the connection or the pipe broke; normal for clients that vanish.
    public var isConnectionReset: Bool {
        code == UV_ECONNRESET.rawValue || code == UV_EPIPE.rawValue
    }

    // Codes used by HearthLoop itself and handy for callers comparing errors.
    /// `UV_EOF`: the peer closed its side of the connection.
    public static let eof: Int32 = UV_EOF.rawValue
    /// `UV_ECANCELED`: the operation was cancelled because its handle was closed.
    public static let canceled: Int32 = UV_ECANCELED.rawValue
    /// `UV_EINVAL`: an argument (for example an address literal) was invalid.
    public static let invalidArgument: Int32 = UV_EINVAL.rawValue
    /// `UV_ETIMEDOUT`: a deadline passed.
    public static let timedOut: Int32 = UV_ETIMEDOUT.rawValue
    /// `UV_EPROTO`: the peer broke the protocol (a failed TLS handshake, a peer that does not speak TLS).
    public static let protocolError: Int32 = UV_EPROTO.rawValue
}
