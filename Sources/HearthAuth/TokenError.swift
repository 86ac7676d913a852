import HearthModel
import HearthProtocol

/// Why a token was refused: a short machine reason and a message for people. Messages name the claim or
/// header field at fault and the values compared (claim values cut to 64 bytes), never the token itself.
public struct TokenError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        /// Not three base64url parts, a part that is not a JSON object, a claim of the wrong type, no `exp`.
        case malformed = "malformed"
        /// `alg` is `none`, not one of HS256/RS256/ES256, or one no configured key verifies.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// No key in the JWKS has the token's `kid` (or, without a `kid`, not exactly one key fits).
        case unknownKeyID = "unknown_key_id"
        case badSignature = "bad_signature"
        case expired = "expired"
        /// `nbf` is later than now + skew.
        case notYetValid = "not_yet_valid"
        /// `iat` is later than now + skew.
        case issuedInFuture = "issued_in_future"
        case wrongIssuer = "wrong_issuer"
        case wrongAudience = "wrong_audience"
        /// `sub` is missing, not a string, empty or longer than 128 bytes.
        case missingSubject = "missing_subject"
    }

    public let reason: Reason
    public let message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// "expired: token expired at 1767225600, now 1767225700 (clock skew 60 s)".
    public var description: String { "\(reason.rawValue): \(message)" }

    /// The error a server answers with: UNAUTHENTICATED, with the reason and the message.
    public var hearthError: HearthError { HearthError(.unauthenticated, description) }

    /// A claim or header value quoted for a message: at most 64 bytes of it, cut at a character boundary.
    static func quote(_ text: String) -> String {
        var cut = ""
        var bytes = 0
        for ch in text {
            bytes += ch.utf8.count
            if bytes > 64 { return "\"\(cut)…\"" }
            cut.append(ch)
        }
        return "\"\(cut)\""
    }
}

extension JSONRef.Kind {
    /// The kind's name with its article, for messages: "an integer", "a string", "null".
    var withArticle: String {
        switch self {
        case .null: return "null"
        case .int, .array, .object: return "an \(name)"
        default: return "a \(name)"
        }
    }
}
