import HearthCrypto
import HearthModel
import HearthProtocol

/// Verifies signed tokens (JWS compact JWTs) as a connection's `hello` presents them. Configured with an
/// HS256 secret, a JWKS of RS256/ES256 public keys, or both; optionally the expected issuer and audience;
/// and a clock skew (default 60 s) allowed on `exp`, `nbf` and `iat`.
///
/// A token is accepted when, in this order:
/// 1. it is at most 16 KiB of three base64url parts, the first two JSON objects (no repeated keys);
/// 2. the header's `alg` is HS256, RS256 or ES256 (never `none`), it has no `crit`, and a configured key
///    verifies that algorithm: HS256 only the secret, RS256/ES256 only JWKS keys of that type, chosen by the
///    header's `kid` (without a `kid`, the one JWKS key of that algorithm, if exactly one);
/// 3. the signature verifies;
/// 4. `exp` (required, a number) is later than now − skew; `nbf`, if present, is at most now + skew; `iat`,
///    if present, is at most now + skew;
/// 5. `iss` equals the configured issuer and `aud` (a string, or an array holding it) the configured
///    audience, when those are configured;
/// 6. `sub` is a non-empty string of at most 128 bytes.
///
/// Immutable and safe to share between threads.
public struct TokenVerifier: Sendable {
    public static let defaultClockSkew: Int64 = 60
    /// The largest clock skew accepted in a configuration (one hour).
    public static let maxClockSkew: Int64 = 3600
    /// The minimum length of an HS256 secret, in bytes.
    public static let minimumSecretBytes = 32
    /// The longest token accepted, in bytes.
    public static let maxTokenBytes = 16 * 1024
    /// The longest `sub` accepted, in bytes (Firebase's limit on a uid).
    public static let maxSubjectBytes = 128

    public let secret: SignatureKey?
    public let keySet: JSONWebKeySet?
    public let issuer: String?
    public let audience: String?
    public let clockSkew: Int64

    /// - Parameters:
    ///   - secret: an HMAC key for HS256 tokens.
    ///   - keySet: public keys for RS256 / ES256 tokens.
    ///   - clockSkew: seconds, 0...3600.
    public init(secret: SignatureKey? = nil, keySet: JSONWebKeySet? = nil, issuer: String? = nil,
                audience: String? = nil, clockSkew: Int64 = TokenVerifier.defaultClockSkew) throws(AuthConfigError) {
        guard secret != nil || keySet != nil else {
            throw AuthConfigError("token verification needs an HS256 secret or a JWKS (or both)")
        }
        if let secret, secret.kind != .hmac {
            throw AuthConfigError("the HS256 secret must be an HMAC key, not \(secret.kind.rawValue)")
        }
        guard (0...TokenVerifier.maxClockSkew).contains(clockSkew) else {
            throw AuthConfigError("the clock skew must be 0...\(TokenVerifier.maxClockSkew) seconds, got \(clockSkew)")
        }
        if issuer == "" { throw AuthConfigError("the expected issuer is empty") }
        if audience == "" { throw AuthConfigError("the expected audience is empty") }
        self.secret = secret
        self.keySet = keySet
        self.issuer = issuer
        self.audience = audience
        self.clockSkew = clockSkew
    }

    /// A verifier from the daemon's flags: `--auth-secret-file`, `--auth-jwks`, `--auth-issuer`,
    /// `--auth-audience`, `--auth-clock-skew`. The secret file's bytes, less one trailing line break, are the
    /// secret (at least 32 bytes).
    public static func load(secretFile: String?, jwksFile: String?, issuer: String? = nil, audience: String? = nil,
                            clockSkew: Int64 = defaultClockSkew) throws(AuthConfigError) -> TokenVerifier {
        var secret: SignatureKey?
        if let secretFile {
            let bytes = try SecretFile.secret(secretFile, minimumBytes: minimumSecretBytes)
            do { secret = try SignatureKey.hmac(secret: bytes) } catch { throw AuthConfigError("\(secretFile): \(error.message)") }
        }
        let keySet = try jwksFile.map { (path) throws(AuthConfigError) in try JSONWebKeySet.load(file: path) }
        return try TokenVerifier(secret: secret, keySet: keySet, issuer: issuer, audience: audience, clockSkew: clockSkew)
    }

    /// Checks `token` at `now` (Unix seconds).
    public func verify(_ token: String, now: Int64) -> Result<VerifiedToken, TokenError> {
        do {
            return .success(try check(token, now: now))
        } catch {
            return .failure(error)
        }
    }

    private func check(_ token: String, now: Int64) throws(TokenError) -> VerifiedToken {
        let bytes = Array(token.utf8)
        guard bytes.count <= TokenVerifier.maxTokenBytes else {
            throw TokenError(.malformed, "token is \(bytes.count) bytes, over the \(TokenVerifier.maxTokenBytes)-byte limit")
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw TokenError(.malformed, "token has \(parts.count) part\(parts.count == 1 ? "" : "s"), expected 3 (header.payload.signature)")
        }
        guard let headerBytes = Base64URL.decode(parts[0]) else { throw TokenError(.malformed, "token header is not base64url") }
        guard let payloadBytes = Base64URL.decode(parts[1]) else { throw TokenError(.malformed, "token payload is not base64url") }
        guard let signature = Base64URL.decode(parts[2]) else { throw TokenError(.malformed, "token signature is not base64url") }

        let parser = JSONParser()
        return try withExtendedLifetime(parser) { () throws(TokenError) -> VerifiedToken in
            let header = try object(parser, headerBytes, "header")
            let (algorithm, keyID) = try readHeader(header)
            let (key, usedKeyID) = try selectKey(algorithm: algorithm, keyID: keyID)
            let signingInput = Array(bytes[..<parts[1].endIndex])
            guard key.verify(algorithm: algorithm, message: signingInput, signature: signature) else {
                throw TokenError(.badSignature, "token signature does not verify"
                    + (usedKeyID.map { " with key \(TokenError.quote($0))" } ?? (algorithm == .hs256 ? " with the HS256 secret" : "")))
            }
            let payload = try object(parser, payloadBytes, "payload")
            let expiresAt = try checkTimes(payload, now: now)
            try checkIssuerAndAudience(payload)
            let uid = try subject(payload)
            let claims = try ClaimsDecoder.map(payload)
            return VerifiedToken(uid: uid, claims: claims, expiresAt: expiresAt, algorithm: algorithm, keyID: usedKeyID)
        }
    }

    private func object(_ parser: JSONParser, _ bytes: [UInt8], _ what: String) throws(TokenError) -> JSONRef {
        let root: JSONRef
        do throws(HearthError) {
            root = try parser.parse(bytes)
        } catch {
            throw TokenError(.malformed, "token \(what) is not JSON: \(error.message)")
        }
        guard root.isObject else { throw TokenError(.malformed, "token \(what) is \(root.kind.withArticle), expected an object") }
        return root
    }

    private func readHeader(_ header: JSONRef) throws(TokenError) -> (SignatureAlgorithm, String?) {
        guard let algRef = header["alg"] else { throw TokenError(.malformed, "token header has no alg") }
        guard let alg = algRef.string else { throw TokenError(.malformed, "token header alg is \(algRef.kind.withArticle), expected a string") }
        guard let algorithm = SignatureAlgorithm(rawValue: alg) else {
            if alg.lowercased() == "none" { throw TokenError(.unsupportedAlgorithm, "unsigned tokens (alg none) are refused") }
            throw TokenError(.unsupportedAlgorithm, "token alg \(TokenError.quote(alg)) is not supported (HS256, RS256, ES256)")
        }
        if header["crit"] != nil {
            throw TokenError(.malformed, "token header has crit (critical extensions are not supported)")
        }
        var keyID: String?
        if let k = header["kid"] {
            guard let s = k.string else { throw TokenError(.malformed, "token header kid is \(k.kind.withArticle), expected a string") }
            keyID = s
        }
        return (algorithm, keyID)
    }

    /// The key for `algorithm`: HS256 only ever uses the secret, RS256/ES256 only JWKS keys of their type.
    private func selectKey(algorithm: SignatureAlgorithm, keyID: String?) throws(TokenError) -> (SignatureKey, String?) {
        if algorithm == .hs256 {
            guard let secret else {
                throw TokenError(.unsupportedAlgorithm, "HS256 tokens are not accepted (no HS256 secret is configured)")
            }
            return (secret, nil)
        }
        guard let keySet else {
            throw TokenError(.unsupportedAlgorithm, "\(algorithm.rawValue) tokens are not accepted (no JWKS is configured)")
        }
        if let keyID {
            guard let k = keySet.keys.first(where: { $0.keyID == keyID }) else {
                throw TokenError(.unknownKeyID, "no key has kid \(TokenError.quote(keyID))")
            }
            guard k.algorithm == algorithm else {
                throw TokenError(.unsupportedAlgorithm,
                                 "token alg \(algorithm.rawValue) does not fit key \(TokenError.quote(keyID)) (\(k.algorithm.rawValue))")
            }
            return (k.key, keyID)
        }
        let fitting = keySet.keys.filter { $0.algorithm == algorithm }
        guard fitting.count == 1 else {
            throw TokenError(.unknownKeyID, fitting.isEmpty
                ? "no \(algorithm.rawValue) key is configured"
                : "token has no kid and \(fitting.count) \(algorithm.rawValue) keys could verify it")
        }
        return (fitting[0].key, fitting[0].keyID)
    }

    /// A NumericDate claim (RFC 7519 §2) as whole seconds, rounded down (`floor`) or up.
    private func seconds(_ payload: JSONRef, _ claim: String, roundUp: Bool) throws(TokenError) -> Int64? {
        guard let ref = payload[claim] else { return nil }
        if let i = ref.int64 {
            guard (-NumericDateLimit...NumericDateLimit).contains(i) else { throw TokenError(.malformed, "token \(claim) \(i) is out of range") }
            return i
        }
        guard let d = ref.double else {
            throw TokenError(.malformed, "token \(claim) is \(ref.kind.withArticle), expected a number of seconds")
        }
        guard d.isFinite, abs(d) <= Double(NumericDateLimit) else { throw TokenError(.malformed, "token \(claim) \(d) is out of range") }
        return Int64(roundUp ? d.rounded(.up) : d.rounded(.down))
    }

    private func checkTimes(_ payload: JSONRef, now: Int64) throws(TokenError) -> Int64 {
        guard let exp = try seconds(payload, "exp", roundUp: false) else {
            throw TokenError(.malformed, "token has no exp claim (an expiry is required)")
        }
        if now >= exp + clockSkew {
            throw TokenError(.expired, "token expired at \(exp), now \(now) (clock skew \(clockSkew) s)")
        }
        if let nbf = try seconds(payload, "nbf", roundUp: true), now + clockSkew < nbf {
            throw TokenError(.notYetValid, "token is not valid before \(nbf), now \(now) (clock skew \(clockSkew) s)")
        }
        if let iat = try seconds(payload, "iat", roundUp: true), iat > now + clockSkew {
            throw TokenError(.issuedInFuture, "token issued at \(iat), in the future: now \(now) (clock skew \(clockSkew) s)")
        }
        return exp
    }

    private func checkIssuerAndAudience(_ payload: JSONRef) throws(TokenError) {
        if let issuer {
            guard let iss = payload["iss"] else {
                throw TokenError(.wrongIssuer, "wrong issuer: expected \(TokenError.quote(issuer)), token has no iss")
            }
            guard iss.stringEquals(issuer) else {
                throw TokenError(.wrongIssuer, "wrong issuer: expected \(TokenError.quote(issuer)), got \(Self.describe(iss))")
            }
        }
        if let audience {
            guard let aud = payload["aud"] else {
                throw TokenError(.wrongAudience, "wrong audience: expected \(TokenError.quote(audience)), token has no aud")
            }
            let matches = aud.isArray ? aud.elements.contains { $0.stringEquals(audience) } : aud.stringEquals(audience)
            guard matches else {
                throw TokenError(.wrongAudience, "wrong audience: expected \(TokenError.quote(audience)), got \(Self.describe(aud))")
            }
        }
    }

    private func subject(_ payload: JSONRef) throws(TokenError) -> String {
        guard let sub = payload["sub"] else { throw TokenError(.missingSubject, "token has no sub claim (the user id)") }
        guard let uid = sub.string else {
            throw TokenError(.missingSubject, "token sub is \(sub.kind.withArticle), expected a string")
        }
        guard !uid.isEmpty else { throw TokenError(.missingSubject, "token sub is empty") }
        let n = uid.utf8.count
        guard n <= TokenVerifier.maxSubjectBytes else {
            throw TokenError(.missingSubject, "token sub is \(n) bytes, over the \(TokenVerifier.maxSubjectBytes)-byte limit")
        }
        return uid
    }

    /// A claim's value for a message: a quoted string, a list of up to 4 quoted strings, or its JSON kind.
    private static func describe(_ ref: JSONRef) -> String {
        if let s = ref.string { return TokenError.quote(s) }
        if ref.isArray {
            let items = ref.elements.prefix(4).map { $0.string.map(TokenError.quote) ?? $0.kind.withArticle }
            return "[" + items.joined(separator: ", ") + (ref.count > 4 ? ", …]" : "]")
        }
        return ref.kind.withArticle
    }
}

/// NumericDates beyond ±2^53 seconds (far past any real date) are refused, so arithmetic cannot overflow.
private let NumericDateLimit: Int64 = 1 << 53
