import HearthCrypto
import HearthModel

/// What a valid token says: the user's id (`sub`, which rules see as `request.auth.uid`), every claim as a
/// typed value (`request.auth.token`), and when it expires.
public struct VerifiedToken: Sendable, Equatable {
    /// The `sub` claim: non-empty, at most 128 bytes.
    public let uid: String
    /// All claims of the payload. JSON numbers that are integers within Int64 are `.int`, other numbers
    /// `.double`; objects are `.map`, arrays `.array` (nested arrays allowed), strings, booleans and null as
    /// such.
    public let claims: MapValue
    /// The `exp` claim in Unix seconds (a fractional `exp` rounded down).
    public let expiresAt: Int64
    /// The algorithm that verified the signature.
    public let algorithm: SignatureAlgorithm
    /// The `kid` of the JWKS key that verified it (nil for HS256 or a token without `kid`).
    public let keyID: String?

    public init(uid: String, claims: MapValue, expiresAt: Int64, algorithm: SignatureAlgorithm, keyID: String?) {
        self.uid = uid
        self.claims = claims
        self.expiresAt = expiresAt
        self.algorithm = algorithm
        self.keyID = keyID
    }
}
