import Foundation
import HearthAuth
import HearthCrypto
import HearthModel
import HearthTesting
import Testing

@Suite struct TokenVerifierTests {
    let now = Fixture.now

    @Test func hs256TokenGivesUidClaimsAndExpiry() throws {
        let token = try Fixture.hs256([
            "email": "alice@example.com", "admin": false, "level": 3, "ratio": 0.5, "note": NSNull(),
            "firebase": ["sign_in_provider": "password", "identities": ["email": ["alice@example.com"]]],
            "roles": ["editor", "viewer"], "nested": [[1, 2], [3]],
        ])
        let verified = try Fixture.verifier().verify(token, now: now).get()
        #expect(verified.uid == "alice")
        #expect(verified.expiresAt == now + 3600)
        #expect(verified.algorithm == .hs256 && verified.keyID == nil)
        let c = verified.claims
        #expect(c["sub"] == .string("alice"))
        #expect(c["exp"] == .int(now + 3600))
        #expect(c["level"] == .int(3))
        #expect(c["ratio"] == .double(0.5))
        #expect(c["admin"] == .bool(false))
        #expect(c["note"] == .null)
        #expect(c["roles"] == .array([.string("editor"), .string("viewer")]))
        #expect(c["nested"] == .array([.array([.int(1), .int(2)]), .array([.int(3)])]))
        let firebase = try #require(c["firebase"]?.mapValue)
        #expect(firebase["sign_in_provider"] == .string("password"))
        #expect(firebase["identities"] == .map(MapValue([.init(key: "email", value: .array([.string("alice@example.com")]))])))
        #expect(c.count == 11)
    }

    @Test func rs256AndES256TokensPickTheirKeyByKid() throws {
        let v = try Fixture.verifier()
        let rs = try TestJWT.signed(by: Fixture.rsa, alg: "RS256", kid: "rsa-1", payload: Fixture.claims())
        let rs2 = try TestJWT.signed(by: Fixture.rsa2, alg: "RS256", kid: "rsa-2", payload: Fixture.claims(["sub": "bob"]))
        let es = try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: "ec-1", payload: Fixture.claims(["sub": "carol"]))
        let a = try v.verify(rs, now: now).get()
        #expect(a.uid == "alice" && a.algorithm == .rs256 && a.keyID == "rsa-1")
        let b = try v.verify(rs2, now: now).get()
        #expect(b.uid == "bob" && b.keyID == "rsa-2")
        let c = try v.verify(es, now: now).get()
        #expect(c.uid == "carol" && c.algorithm == .es256 && c.keyID == "ec-1")

        // Signed by rsa-2 but naming rsa-1: the named key decides.
        let swapped = try TestJWT.signed(by: Fixture.rsa2, alg: "RS256", kid: "rsa-1", payload: Fixture.claims())
        #expect(reason(v.verify(swapped, now: now)) == .badSignature)
    }

    @Test func withoutKidTheOneFittingKeyIsUsed() throws {
        let v = try Fixture.verifier()
        let es = try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: nil, payload: Fixture.claims())
        let ok = try v.verify(es, now: now).get()
        #expect(ok.keyID == "ec-1")
        // Two RS256 keys: a token without kid is ambiguous.
        let rs = try TestJWT.signed(by: Fixture.rsa, alg: "RS256", kid: nil, payload: Fixture.claims())
        let e = try #require(failure(v.verify(rs, now: now)))
        #expect(e.reason == .unknownKeyID && e.message.contains("2 RS256 keys"), "\(e)")
        // With a JWKS of that one key, it verifies.
        let one = try JSONWebKeySet.parse(Array(TestJWT.json(["keys": [Fixture.rsa.jwk(kid: "only", alg: nil)]]).utf8))
        let single = try TokenVerifier(keySet: one)
        #expect(try single.verify(rs, now: now).get().keyID == "only")
        // ES256 against a JWKS with no EC key.
        #expect(reason(single.verify(es, now: now)) == .unknownKeyID)
    }

    /// The classic confusion attack: take the server's RSA public key, HMAC a token with its bytes, call it
    /// HS256. HS256 only ever uses the configured secret, and public keys never verify HMACs.
    @Test func algorithmConfusionIsRefused() throws {
        for secretBytes in [Array(Fixture.rsa.publicPEM.utf8), try Fixture.rsa.rsaComponents().n] {
            let forged = try TestJWT.mint(header: ["alg": "HS256", "kid": "rsa-1"], payload: Fixture.claims()) {
                try OpenSSLCommand.hmacSHA256(key: secretBytes, message: $0)
            }
            #expect(reason(try Fixture.verifier().verify(forged, now: now)) == .badSignature)
            let jwksOnly = try Fixture.verifier(secret: false)
            let e = try #require(failure(jwksOnly.verify(forged, now: now)))
            #expect(e.reason == .unsupportedAlgorithm && e.message.contains("no HS256 secret"), "\(e)")
        }
        // An ES256 header on a token whose kid is an RSA key.
        let mixed = try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: "rsa-1", payload: Fixture.claims())
        let e = try #require(failure(try Fixture.verifier().verify(mixed, now: now)))
        #expect(e.reason == .unsupportedAlgorithm && e.message.contains("does not fit key"), "\(e)")
        // An RS256 token against a verifier with only an HS256 secret.
        let rs = try TestJWT.signed(by: Fixture.rsa, alg: "RS256", kid: "rsa-1", payload: Fixture.claims())
        #expect(reason(try Fixture.verifier(jwks: false).verify(rs, now: now)) == .unsupportedAlgorithm)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let token: @Sendable () throws -> String
        let verifier: @Sendable () throws -> TokenVerifier
        /// nil: the token verifies.
        let reason: TokenError.Reason?
        let says: String
        var testDescription: String { name }

        init(_ name: String, _ reason: TokenError.Reason?, _ says: String = "",
             verifier: @escaping @Sendable () throws -> TokenVerifier = { try Fixture.verifier() },
             token: @escaping @Sendable () throws -> String) {
            self.name = name
            self.reason = reason
            self.says = says
            self.verifier = verifier
            self.token = token
        }
    }

    static let hsHeader = #"{"alg":"HS256","typ":"JWT"}"#
    static func hsRaw(_ header: String = hsHeader, _ payload: String) throws -> String {
        try TestJWT.mint(headerJSON: header, payloadJSON: payload) { try OpenSSLCommand.hmacSHA256(key: Fixture.secret, message: $0) }
    }
    static let n = Fixture.now

    static let cases: [Case] = [
        // Shape.
        Case("one part", .malformed, "1 part") { "abc" },
        Case("two parts", .malformed, "2 parts") { "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0" },
        Case("five parts (JWE)", .malformed, "5 parts") { "a.b.c.d.e" },
        Case("header not base64url", .malformed, "header is not base64url") { "e+J.eyJ9.AAAA" },
        Case("signature padded", .malformed, "signature is not base64url") { try Fixture.hs256() + "=" },
        Case("signature with a non-zero unused bit", .malformed, "signature is not base64url") {
            // 32 bytes encode to 43 symbols whose last carries 2 unused bits; a symbol with them set.
            let t = try Fixture.hs256()
            let last = t.last!
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let i = alphabet.firstIndex(of: last)!
            return String(t.dropLast()) + String(alphabet[i | 1])
        },
        Case("header not JSON", .malformed, "header is not JSON") {
            Base64URLText.encode(Array("{alg".utf8)) + ".e30.AAAA"
        },
        Case("header an array", .malformed, "header is an array") {
            Base64URLText.encode(Array("[1]".utf8)) + ".e30.AAAA"
        },
        Case("no alg", .malformed, "no alg") { try hsRaw(#"{"typ":"JWT"}"#, "{}") },
        Case("alg a number", .malformed, "alg is an integer") { try hsRaw(#"{"alg":256}"#, "{}") },
        Case("kid a number", .malformed, "kid is an integer") { try hsRaw(#"{"alg":"HS256","kid":1}"#, "{}") },
        Case("crit header", .malformed, "crit") { try hsRaw(#"{"alg":"HS256","crit":["b64"],"b64":false}"#, "{}") },
        Case("payload an array", .malformed, "payload is an array") { try hsRaw(hsHeader, "[]") },
        Case("payload repeats a key", .malformed, "duplicate key") {
            try hsRaw(hsHeader, #"{"sub":"alice","sub":"admin","exp":\#(n + 60)}"#)
        },
        Case("no exp", .malformed, "no exp") { try Fixture.hs256(["exp": nil]) },
        Case("exp a string", .malformed, "exp is a string") { try Fixture.hs256(["exp": "tomorrow"]) },
        Case("exp out of range", .malformed, "out of range") { try hsRaw(hsHeader, #"{"sub":"a","exp":1e300}"#) },
        Case("too long", .malformed, "16384-byte limit") { try Fixture.hs256(["pad": String(repeating: "x", count: 13000)]) },
        Case("too deep", .malformed, "deeper than 32") {
            try hsRaw(hsHeader, #"{"sub":"a","exp":\#(n + 60),"x":"# + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}")
        },
        // Algorithms.
        Case("alg none", .unsupportedAlgorithm, "alg none") {
            Base64URLText.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URLText.encode(Array(try TestJWT.json(Fixture.claims()).utf8)) + "."
        },
        Case("alg NONE", .unsupportedAlgorithm, "alg none") { try hsRaw(#"{"alg":"NONE"}"#, "{}") },
        Case("alg HS512", .unsupportedAlgorithm, "\"HS512\" is not supported") { try hsRaw(#"{"alg":"HS512"}"#, "{}") },
        Case("alg PS256", .unsupportedAlgorithm, "\"PS256\" is not supported") { try hsRaw(#"{"alg":"PS256"}"#, "{}") },
        Case("HS256 without a secret", .unsupportedAlgorithm, "no HS256 secret", verifier: { try Fixture.verifier(secret: false) }) {
            try Fixture.hs256()
        },
        // Keys and signatures.
        Case("unknown kid", .unknownKeyID, "no key has kid \"rsa-9\"") {
            try TestJWT.signed(by: Fixture.rsa, alg: "RS256", kid: "rsa-9", payload: Fixture.claims())
        },
        Case("HS256 under another secret", .badSignature, "with the HS256 secret") {
            try TestJWT.hs256(secret: Array("another-secret-of-enough-length-0123".utf8), payload: Fixture.claims())
        },
        Case("RS256 by another key", .badSignature, "with key \"rsa-1\"") {
            try TestJWT.signed(by: Fixture.rsa2, alg: "RS256", kid: "rsa-1", payload: Fixture.claims())
        },
        Case("ES256 payload changed after signing", .badSignature, "with key \"ec-1\"") {
            let t = try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: "ec-1", payload: Fixture.claims())
            let parts = t.split(separator: ".")
            let other = Base64URLText.encode(Array(try TestJWT.json(Fixture.claims(["sub": "mallory"])).utf8))
            return "\(parts[0]).\(other).\(parts[2])"
        },
        Case("empty signature", .badSignature) { String(try Fixture.hs256().split(separator: ".", omittingEmptySubsequences: false).dropLast().joined(separator: ".")) + "." },
        // Times, with the default skew of 60 s.
        Case("exp one skew ago", .expired, "expired at \(n - 60), now \(n) (clock skew 60 s)") { try Fixture.hs256(["exp": n - 60]) },
        Case("exp just inside the skew", nil) { try Fixture.hs256(["exp": n - 59]) },
        Case("exp now, no skew", .expired, "clock skew 0 s", verifier: { try Fixture.verifier(skew: 0) }) { try Fixture.hs256(["exp": n]) },
        Case("exp next second, no skew", nil, verifier: { try Fixture.verifier(skew: 0) }) { try Fixture.hs256(["exp": n + 1]) },
        Case("fractional exp rounds down", .expired, verifier: { try Fixture.verifier(skew: 0) }) { try Fixture.hs256(["exp": Double(n) + 0.5]) },
        Case("nbf at the skew", nil) { try Fixture.hs256(["nbf": n + 60]) },
        Case("nbf beyond the skew", .notYetValid, "not valid before \(n + 61), now \(n)") { try Fixture.hs256(["nbf": n + 61]) },
        Case("nbf a string", .malformed, "nbf is a string") { try Fixture.hs256(["nbf": "now"]) },
        Case("iat at the skew", nil) { try Fixture.hs256(["iat": n + 60]) },
        Case("iat beyond the skew", .issuedInFuture, "issued at \(n + 61)") { try Fixture.hs256(["iat": n + 61]) },
        Case("fractional iat rounds up", .issuedInFuture, verifier: { try Fixture.verifier(skew: 0) }) { try Fixture.hs256(["iat": Double(n) + 0.25]) },
        // Issuer and audience.
        Case("issuer matches", nil, verifier: { try Fixture.verifier(issuer: "https://securetoken.google.com/demo") }) {
            try Fixture.hs256(["iss": "https://securetoken.google.com/demo"])
        },
        Case("wrong issuer", .wrongIssuer, #"expected "https://securetoken.google.com/demo", got "https://evil.example""#,
             verifier: { try Fixture.verifier(issuer: "https://securetoken.google.com/demo") }) {
            try Fixture.hs256(["iss": "https://evil.example"])
        },
        Case("no issuer", .wrongIssuer, "token has no iss", verifier: { try Fixture.verifier(issuer: "i") }) { try Fixture.hs256() },
        Case("issuer not checked unless configured", nil) { try Fixture.hs256(["iss": "anyone"]) },
        Case("audience string", nil, verifier: { try Fixture.verifier(audience: "demo") }) { try Fixture.hs256(["aud": "demo"]) },
        Case("audience array", nil, verifier: { try Fixture.verifier(audience: "demo") }) { try Fixture.hs256(["aud": ["other", "demo"]]) },
        Case("wrong audience array", .wrongAudience, #"expected "demo", got ["other", "demo2"]"#, verifier: { try Fixture.verifier(audience: "demo") }) {
            try Fixture.hs256(["aud": ["other", "demo2"]])
        },
        Case("wrong audience string", .wrongAudience, #"got "Demo""#, verifier: { try Fixture.verifier(audience: "demo") }) {
            try Fixture.hs256(["aud": "Demo"])
        },
        Case("audience a number", .wrongAudience, "got an integer", verifier: { try Fixture.verifier(audience: "demo") }) {
            try Fixture.hs256(["aud": 7])
        },
        Case("no audience", .wrongAudience, "token has no aud", verifier: { try Fixture.verifier(audience: "demo") }) { try Fixture.hs256() },
        // Subject.
        Case("no sub", .missingSubject, "no sub") { try Fixture.hs256(["sub": nil]) },
        Case("empty sub", .missingSubject, "sub is empty") { try Fixture.hs256(["sub": ""]) },
        Case("sub a number", .missingSubject, "sub is an integer") { try Fixture.hs256(["sub": 42]) },
        Case("sub of 128 bytes", nil) { try Fixture.hs256(["sub": String(repeating: "é", count: 64)]) },
        Case("sub of 129 bytes", .missingSubject, "129 bytes") { try Fixture.hs256(["sub": String(repeating: "é", count: 64) + "x"]) },
    ]

    @Test(arguments: cases)
    func table(_ c: Case) async throws {
        // Minting runs openssl: off the shared task pool, which other suites' callbacks need.
        let token = try await Fixture.offPool { try c.token() }
        let result = try c.verifier().verify(token, now: now)
        switch (result, c.reason) {
        case (.success, nil):
            break
        case (.success(let v), let expected?):
            Issue.record("verified as \(v.uid), expected \(expected)")
        case (.failure(let e), nil):
            Issue.record("expected success, got \(e)")
        case (.failure(let e), let expected?):
            #expect(e.reason == expected, "\(e)")
            #expect(c.says.isEmpty || e.message.contains(c.says), "\(e.message) should say \(c.says)")
            // Never the token, nor any of its parts longer than a few bytes.
            #expect(!e.description.contains(token))
            for part in token.split(separator: ".") where part.count > 8 {
                #expect(!e.description.contains(part), "\(e) echoes part of the token")
            }
            #expect(e.hearthError.code == .unauthenticated)
            #expect(e.hearthError.message.hasPrefix(expected.rawValue + ": "))
        }
    }

    @Test func everyReasonIsCoveredByTheTable() {
        let covered = Set(Self.cases.compactMap(\.reason))
        #expect(covered == Set(TokenError.Reason.allCases))
    }

    @Test func configurationErrors() throws {
        #expect(throws: AuthConfigError.self) { try TokenVerifier() }
        #expect(throws: AuthConfigError.self) { try Fixture.verifier(skew: -1) }
        #expect(throws: AuthConfigError.self) { try Fixture.verifier(skew: 3601) }
        #expect(throws: AuthConfigError.self) { try Fixture.verifier(issuer: "") }
        let rsaAsSecret = try SignatureKey.publicKey(pem: Fixture.rsa.publicPEM)
        #expect(throws: AuthConfigError.self) { try TokenVerifier(secret: rsaAsSecret) }
    }

    /// `--auth-secret-file`: the bytes less one trailing line break; at least 32 bytes.
    @Test func secretFile() throws {
        let secret = String(repeating: "k", count: 40)
        let token = try TestJWT.hs256(secret: Array(secret.utf8), payload: Fixture.claims())
        for contents in [secret, secret + "\n", secret + "\r\n"] {
            let path = try Fixture.writeFile(Array(contents.utf8))
            defer { unlink(path) }
            let v = try TokenVerifier.load(secretFile: path, jwksFile: nil)
            #expect(try v.verify(token, now: now).get().uid == "alice", "file \(contents.debugDescription)")
        }
        // Only one line break goes: a second one is part of the secret.
        let twice = try Fixture.writeFile(Array((secret + "\n\n").utf8))
        defer { unlink(twice) }
        #expect(reason(try TokenVerifier.load(secretFile: twice, jwksFile: nil).verify(token, now: now)) == .badSignature)

        let short = try Fixture.writeFile(Array((String(repeating: "k", count: 31) + "\n").utf8))
        defer { unlink(short) }
        let e = #expect(throws: AuthConfigError.self) { try TokenVerifier.load(secretFile: short, jwksFile: nil) }
        #expect(e?.message.contains("31 bytes") == true && e?.message.contains(short) == true, "\(String(describing: e))")
        let missing = #expect(throws: AuthConfigError.self) { try TokenVerifier.load(secretFile: "/nonexistent/secret", jwksFile: nil) }
        #expect(missing?.message == "cannot read /nonexistent/secret: No such file or directory")
    }

    @Test func jwksFile() throws {
        let path = try Fixture.writeFile(Array(Fixture.jwksJSON.utf8))
        defer { unlink(path) }
        let v = try TokenVerifier.load(secretFile: nil, jwksFile: path, issuer: "iss", audience: "aud", clockSkew: 5)
        let token = try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: "ec-1", payload: Fixture.claims(["iss": "iss", "aud": "aud"]))
        #expect(try v.verify(token, now: now).get().uid == "alice")
        #expect(v.clockSkew == 5)
        #expect(reason(v.verify(try Fixture.hs256(), now: now)) == .unsupportedAlgorithm)
    }

    /// One verifier used from several threads at once.
    @Test func concurrentVerification() async throws {
        let v = try Fixture.verifier()
        let tokens = [
            try Fixture.hs256(),
            try TestJWT.signed(by: Fixture.rsa, alg: "RS256", kid: "rsa-1", payload: Fixture.claims()),
            try TestJWT.signed(by: Fixture.ec, alg: "ES256", kid: "ec-1", payload: Fixture.claims()),
        ]
        let now = self.now
        let verified = await withTaskGroup(of: Int.self) { group in
            for i in 0..<24 {
                group.addTask { (try? v.verify(tokens[i % 3], now: now).get()) != nil ? 1 : 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(verified == 24)
    }
}

func reason(_ r: Result<VerifiedToken, TokenError>) -> TokenError.Reason? { failure(r)?.reason }

func failure(_ r: Result<VerifiedToken, TokenError>) -> TokenError? {
    if case .failure(let e) = r { return e }
    return nil
}

/// A second independent HS256 implementation: tokens minted by Python's hmac/hashlib
/// (clients/python/tests/tokens.py) verify here, and a changed byte does not.
@Suite struct PythonMintedTokenTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("clients/python/tests/tokens.py").path

    @Test func pythonHS256TokensVerify() throws {
        let claims = #"{"sub":"alice","exp":\#(Fixture.now + 600),"iat":\#(Fixture.now),"email":"alice@example.com","n":1.5}"#
        let r = try CLIProcess.run(["python3", Self.script, Hex.encode(Fixture.secret), claims], binary: "/usr/bin/env")
        #expect(r.status == 0, "\(r.stderr)")
        let token = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try Fixture.verifier().verify(token, now: Fixture.now).get()
        #expect(verified.uid == "alice")
        #expect(verified.claims["email"] == .string("alice@example.com"))
        #expect(verified.claims["n"] == .double(1.5))
        var tampered = Array(token.utf8)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(reason(try Fixture.verifier().verify(String(decoding: tampered, as: UTF8.self), now: Fixture.now)) != nil)
    }
}
