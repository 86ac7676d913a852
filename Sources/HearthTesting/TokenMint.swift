import Foundation

/// The files a daemon under test trusts, made at test time, and tokens for it (signed by the `openssl`
/// command through `TestJWT`): an HS256 secret file, and an RSA key published in a JWKS file.
public final class TokenMint {
    /// A directory of its own (secret file, JWKS), removed by `cleanUp()`.
    public let dir: String
    public let secret: [UInt8]
    public var secretFile: String { dir + "/secret" }
    public var jwksFile: String { dir + "/jwks.json" }
    public let kid = "test-rsa-1"
    private var rsa: SigningKeyPair?

    public init() throws {
        dir = try OpenSSLCommand.temporaryDirectory().path
        var rng = SystemRandomNumberGenerator()
        secret = (0..<48).map { _ in UInt8.random(in: 33...126, using: &rng) }   // printable: the file holds it as text
        try Data(secret).write(to: URL(fileURLWithPath: secretFile))
    }

    public func cleanUp() {
        try? FileManager.default.removeItem(atPath: dir)
        if let rsa { try? FileManager.default.removeItem(at: rsa.directory) }
    }

    /// Claims for `uid` valid for `ttl` seconds from now (iat now), plus `extra`.
    public static func claims(_ uid: String, ttl: Int = 3600, extra: [String: Any] = [:]) -> [String: Any] {
        let now = Int(Date().timeIntervalSince1970)
        var c: [String: Any] = ["sub": uid, "iat": now, "exp": now + ttl]
        for (k, v) in extra { c[k] = v }
        return c
    }

    /// An HS256 token over `claims`, signed with this mint's secret unless another is given.
    public func hs256(_ claims: [String: Any], secret other: [UInt8]? = nil) throws -> String {
        try TestJWT.hs256(secret: other ?? secret, payload: claims)
    }

    /// An RS256 token signed with the key `writeJWKS()` publishes.
    public func rs256(_ claims: [String: Any]) throws -> String {
        try TestJWT.signed(by: try rsaKey(), alg: "RS256", kid: kid, payload: claims)
    }

    /// Writes `jwks.json` publishing the RSA key (generated on first use) and returns its path.
    @discardableResult
    public func writeJWKS() throws -> String {
        let jwks: [String: Any] = ["keys": [try rsaKey().jwk(kid: kid, alg: "RS256", use: "sig")]]
        try JSONSerialization.data(withJSONObject: jwks).write(to: URL(fileURLWithPath: jwksFile))
        return jwksFile
    }

    private func rsaKey() throws -> SigningKeyPair {
        if let rsa { return rsa }
        let k = try SigningKeyPair(.rsa(bits: 2048))
        rsa = k
        return k
    }
}
