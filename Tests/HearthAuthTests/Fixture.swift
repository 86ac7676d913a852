import Foundation
import HearthAuth
import HearthCrypto
import HearthTesting

/// Keys made once per test process by `openssl genpkey`, a JWKS built from their public components (as
/// `openssl` prints them), and an HS256 secret. Tokens are signed by `openssl dgst`.
enum Fixture {
    /// 2026-01-01T00:00:00Z.
    static let now: Int64 = 1_767_225_600
    static let secret = Array("hearth-test-secret-0123456789abcdef".utf8)
    static let rsa = try! SigningKeyPair(.rsa(bits: 2048))
    static let rsa2 = try! SigningKeyPair(.rsa(bits: 2048))
    static let ec = try! SigningKeyPair(.ec(curve: "P-256"))

    /// JWKS: "rsa-1" (RS256, with alg), "rsa-2" (RS256, no alg), "ec-1" (ES256).
    static let jwksJSON: String = try! TestJWT.json([
        "keys": [
            try! rsa.jwk(kid: "rsa-1", alg: "RS256", use: "sig"),
            try! rsa2.jwk(kid: "rsa-2", alg: nil),
            try! ec.jwk(kid: "ec-1", alg: "ES256"),
        ],
    ])
    static let keySet = try! JSONWebKeySet.parse(Array(jwksJSON.utf8))

    static func verifier(secret: Bool = true, jwks: Bool = true, issuer: String? = nil, audience: String? = nil,
                         skew: Int64 = TokenVerifier.defaultClockSkew) throws -> TokenVerifier {
        try TokenVerifier(secret: secret ? try SignatureKey.hmac(secret: Fixture.secret) : nil,
                          keySet: jwks ? keySet : nil, issuer: issuer, audience: audience, clockSkew: skew)
    }

    /// Claims valid at `now`: sub alice, exp in an hour, iat a minute ago, plus `extra` (nil values removed).
    static func claims(_ extra: [String: Any?] = [:]) -> [String: Any] {
        var c: [String: Any] = ["sub": "alice", "exp": now + 3600, "iat": now - 60]
        for (k, v) in extra {
            if let v { c[k] = v } else { c.removeValue(forKey: k) }
        }
        return c
    }

    static func hs256(_ extra: [String: Any?] = [:], header: [String: Any] = [:]) throws -> String {
        try TestJWT.hs256(secret: secret, payload: claims(extra), header: header)
    }

    /// Runs blocking work (openssl processes) on a GCD thread rather than the tests' small task pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    static func writeFile(_ contents: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-auth-\(UUID().uuidString)").path
        try Data(contents).write(to: URL(fileURLWithPath: path))
        return path
    }
}
