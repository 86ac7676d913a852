/// Why TLS could not be set up or went wrong: a kind to act on and a sentence naming what was wrong (a file,
/// the certificate check that failed, the peer speaking plain text).
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// A context could not be made: a certificate, key or CA file is missing, unreadable or wrong.
        case configuration
        /// The peer does not speak TLS: a client sent plain text to a TLS server, or a server answered a
        /// client's handshake in plain text.
        case plainTextPeer
        /// The handshake failed: the certificate check (wrong CA, expired, wrong host name, no client
        /// certificate), no common protocol version or cipher, or an alert from the peer.
        case handshake
        /// A fatal error after the handshake (a bad record, an alert from the peer).
        case connection
        /// Plaintext was written before the handshake finished.
        case notEstablished
        /// The handshake did not finish in time (reported by the connection layer, which owns the clock).
        case timedOut
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
