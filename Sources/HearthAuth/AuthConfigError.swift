/// A key, secret or JWKS file that cannot be used, with what is wrong and where (the file's path, the
/// key's index and `kid`). The daemon prints it and does not start.
public struct AuthConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
