import COpenSSL

/// A key that verifies signatures: an HMAC secret, or an RSA or P-256 public key (from a JWK's components or
/// from PEM). It owns an OpenSSL handle, freed when the last reference goes. Immutable, and safe to use from
/// several threads at once (each verification makes its own OpenSSL context).
///
/// A key verifies exactly one algorithm, the one of its kind (`SignatureAlgorithm.keyKind`): asking an RSA
/// key to check an HS256 signature answers false, so a token's header cannot turn a public key into an HMAC
/// secret (algorithm confusion).
public final class SignatureKey: @unchecked Sendable {
    public enum Kind: String, Sendable {
        case hmac = "HMAC"
        case rsa = "RSA"
        case ecP256 = "EC P-256"

        /// The one algorithm a key of this kind verifies.
        public var algorithm: SignatureAlgorithm {
            switch self {
            case .hmac: return .hs256
            case .rsa: return .rs256
            case .ecP256: return .es256
            }
        }
    }

    private let handle: OpaquePointer

    /// What the key is.
    public let kind: Kind
    /// The key's size: the secret's length × 8, the RSA modulus's bits, or 256.
    public let bits: Int

    private init(_ handle: OpaquePointer) {
        self.handle = handle
        switch hearth_verify_key_type(handle) {
        case HEARTH_KEY_HMAC: kind = .hmac
        case HEARTH_KEY_RSA: kind = .rsa
        default: kind = .ecP256
        }
        bits = Int(hearth_verify_key_bits(handle))
    }

    deinit { hearth_verify_key_free(handle) }

    /// An HMAC-SHA256 key; the secret is copied (and the copy wiped when the key goes). Any non-empty length
    /// is accepted here; callers that load secrets enforce their own minimum.
    public static func hmac(secret: [UInt8]) throws(SignatureKeyError) -> SignatureKey {
        try make { err, n in
            secret.withUnsafeBufferPointer { hearth_verify_key_hmac($0.baseAddress, $0.count, err, n) }
        }
    }

    /// An RSA public key from the big-endian modulus and public exponent (a JWK's decoded `n` and `e`). The
    /// modulus must have at least 2048 bits and the key must pass OpenSSL's public-key check.
    public static func rsaPublic(modulus: [UInt8], exponent: [UInt8]) throws(SignatureKeyError) -> SignatureKey {
        try make { err, n in
            modulus.withUnsafeBufferPointer { m in
                exponent.withUnsafeBufferPointer { e in
                    hearth_verify_key_rsa(m.baseAddress, m.count, e.baseAddress, e.count, err, n)
                }
            }
        }
    }

    /// A P-256 public key from its affine coordinates (a JWK's decoded `x` and `y`, 32 bytes each); the point
    /// must be on the curve.
    public static func ecPublic(x: [UInt8], y: [UInt8]) throws(SignatureKeyError) -> SignatureKey {
        try make { err, n in
            x.withUnsafeBufferPointer { xb in
                y.withUnsafeBufferPointer { yb in
                    hearth_verify_key_ec_p256(xb.baseAddress, xb.count, yb.baseAddress, yb.count, err, n)
                }
            }
        }
    }

    /// An RSA (≥ 2048 bits) or P-256 public key from PEM text holding a SubjectPublicKeyInfo
    /// (`-----BEGIN PUBLIC KEY-----`, as `openssl pkey -pubout` writes).
    public static func publicKey(pem: String) throws(SignatureKeyError) -> SignatureKey {
        var pem = pem
        return try make { err, n in
            pem.withUTF8 { p in
                p.withMemoryRebound(to: CChar.self) { hearth_verify_key_pem($0.baseAddress, $0.count, err, n) }
            }
        }
    }

    private static func make(
        _ create: (UnsafeMutablePointer<CChar>, Int) -> OpaquePointer?
    ) throws(SignatureKeyError) -> SignatureKey {
        var err = [CChar](repeating: 0, count: 320)
        let handle = err.withUnsafeMutableBufferPointer { create($0.baseAddress!, $0.count) }
        guard let handle else {
            let message = err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw SignatureKeyError(message: message)
        }
        return SignatureKey(handle)
    }

    /// True when `signature` is a valid `algorithm` signature of `message` under this key; false when it is
    /// not, or when `algorithm` is not this key's (`kind.algorithm`).
    public func verify(algorithm: SignatureAlgorithm, message: UnsafeRawBufferPointer,
                       signature: UnsafeRawBufferPointer) -> Bool {
        guard algorithm == kind.algorithm else { return false }
        return hearth_verify(handle, algorithm.cValue,
                             message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                             signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count) == 1
    }

    /// `verify` over byte arrays.
    public func verify(algorithm: SignatureAlgorithm, message: [UInt8], signature: [UInt8]) -> Bool {
        message.withUnsafeBytes { m in
            signature.withUnsafeBytes { s in verify(algorithm: algorithm, message: m, signature: s) }
        }
    }
}

/// Why a key could not be made, in OpenSSL's words where it gave some.
public struct SignatureKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
