import COpenSSL

/// The JWS signature algorithms Hearth verifies (RFC 7518 §3): names as a token header's `alg` spells them.
public enum SignatureAlgorithm: String, Sendable, CaseIterable {
    /// HMAC with SHA-256, a shared secret.
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256, an RSA public key of at least 2048 bits.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256; the signature is r||s, 64 bytes.
    case es256 = "ES256"

    /// The kind of key that verifies this algorithm, and no other.
    public var keyKind: SignatureKey.Kind {
        switch self {
        case .hs256: return .hmac
        case .rs256: return .rsa
        case .es256: return .ecP256
        }
    }

    var cValue: hearth_sig_alg {
        switch self {
        case .hs256: return HEARTH_ALG_HS256
        case .rs256: return HEARTH_ALG_RS256
        case .es256: return HEARTH_ALG_ES256
        }
    }
}
