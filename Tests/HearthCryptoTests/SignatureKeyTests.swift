import Foundation
import HearthCrypto
import HearthTesting
import Testing

/// Keys generated once for the suite by `openssl genpkey`.
private enum Keys {
    static let rsa = try! SigningKeyPair(.rsa(bits: 2048))
    static let ec = try! SigningKeyPair(.ec(curve: "P-256"))
}

@Suite struct SignatureKeyTests {
    let message = Array("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9".utf8)

    @Test func rs256VerifiesWithJWKComponentsAndWithPEM() throws {
        let (n, e) = try Keys.rsa.rsaComponents()
        let fromJWK = try SignatureKey.rsaPublic(modulus: n, exponent: e)
        let fromPEM = try SignatureKey.publicKey(pem: Keys.rsa.publicPEM)
        #expect(fromJWK.kind == .rsa && fromJWK.bits == 2048)
        #expect(fromPEM.kind == .rsa && fromPEM.bits == 2048)
        let signature = try Keys.rsa.sign(message)
        for key in [fromJWK, fromPEM] {
            #expect(key.verify(algorithm: .rs256, message: message, signature: signature))
            #expect(!key.verify(algorithm: .rs256, message: message + [0x20], signature: signature), "another message")
            var flipped = signature
            flipped[17] ^= 1
            #expect(!key.verify(algorithm: .rs256, message: message, signature: flipped), "a flipped bit")
            #expect(!key.verify(algorithm: .rs256, message: message, signature: Array(signature.dropLast())), "short")
            #expect(!key.verify(algorithm: .es256, message: message, signature: signature), "an RSA key only does RS256")
        }
    }

    @Test func es256VerifiesRawRSWithJWKCoordinatesAndWithPEM() throws {
        let (x, y) = try Keys.ec.ecCoordinates()
        let fromJWK = try SignatureKey.ecPublic(x: x, y: y)
        let fromPEM = try SignatureKey.publicKey(pem: Keys.ec.publicPEM)
        #expect(fromJWK.kind == .ecP256 && fromJWK.bits == 256)
        #expect(fromPEM.kind == .ecP256)
        let signature = try Keys.ec.sign(message)
        #expect(signature.count == 64)
        for key in [fromJWK, fromPEM] {
            #expect(key.verify(algorithm: .es256, message: message, signature: signature))
            #expect(!key.verify(algorithm: .es256, message: message + [0x20], signature: signature))
            var flipped = signature
            flipped[40] ^= 0x80
            #expect(!key.verify(algorithm: .es256, message: message, signature: flipped))
            #expect(!key.verify(algorithm: .es256, message: message, signature: Array(signature.prefix(63))), "63 bytes")
            #expect(!key.verify(algorithm: .es256, message: message, signature: [UInt8](repeating: 0, count: 64)), "r = s = 0")
            #expect(!key.verify(algorithm: .rs256, message: message, signature: signature), "an EC key only does ES256")
        }
    }

    /// A DER signature (what `openssl dgst` writes) is not a JWS ES256 signature.
    @Test func es256RefusesDERSignatures() throws {
        let key = try SignatureKey.publicKey(pem: Keys.ec.publicPEM)
        let dir = try OpenSSLCommand.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(message).write(to: dir.appendingPathComponent("m"))
        try OpenSSLCommand.run(["dgst", "-sha256", "-sign", Keys.ec.privateKeyPath, "-out", dir.appendingPathComponent("s").path,
                                dir.appendingPathComponent("m").path])
        let der = [UInt8](try Data(contentsOf: dir.appendingPathComponent("s")))
        #expect(!key.verify(algorithm: .es256, message: message, signature: der))
    }

    @Test func hs256MatchesOpenSSLsHMAC() throws {
        let secret = Array("a shared secret of at least thirty-two bytes".utf8)
        let key = try SignatureKey.hmac(secret: secret)
        #expect(key.kind == .hmac && key.bits == secret.count * 8)
        let mac = try OpenSSLCommand.hmacSHA256(key: secret, message: message)
        #expect(key.verify(algorithm: .hs256, message: message, signature: mac))
        #expect(!key.verify(algorithm: .hs256, message: message, signature: Array(mac.prefix(16))), "a truncated MAC")
        var flipped = mac
        flipped[31] ^= 1
        #expect(!key.verify(algorithm: .hs256, message: message, signature: flipped))
        let other = try SignatureKey.hmac(secret: secret + [0x21])
        #expect(!other.verify(algorithm: .hs256, message: message, signature: mac))
        #expect(!key.verify(algorithm: .rs256, message: message, signature: mac), "an HMAC key only does HS256")
        #expect(throws: SignatureKeyError.self) { try SignatureKey.hmac(secret: []) }
    }

    /// Algorithm confusion: an HS256 "signature" made with the RSA public key's bytes as the HMAC secret
    /// never verifies against the RSA key.
    @Test func anHMACOverThePublicKeyDoesNotVerifyAgainstIt() throws {
        let rsa = try SignatureKey.publicKey(pem: Keys.rsa.publicPEM)
        let forged = try OpenSSLCommand.hmacSHA256(key: Array(Keys.rsa.publicPEM.utf8), message: message)
        #expect(!rsa.verify(algorithm: .hs256, message: message, signature: forged))
        #expect(!rsa.verify(algorithm: .rs256, message: message, signature: forged))
    }

    @Test func badKeysAreRefusedWithAReason() throws {
        let small = try SigningKeyPair(.rsa(bits: 1024))
        let (n, e) = try small.rsaComponents()
        let tooSmall = #expect(throws: SignatureKeyError.self) { try SignatureKey.rsaPublic(modulus: n, exponent: e) }
        #expect(tooSmall?.message.contains("1024 bits") == true, "\(String(describing: tooSmall))")
        #expect(throws: SignatureKeyError.self) { try SignatureKey.publicKey(pem: small.publicPEM) }

        let (x, y) = try Keys.ec.ecCoordinates()
        var offCurve = y
        offCurve[31] ^= 1
        #expect(throws: SignatureKeyError.self) { try SignatureKey.ecPublic(x: x, y: offCurve) }
        #expect(throws: SignatureKeyError.self) { try SignatureKey.ecPublic(x: Array(x.dropFirst()), y: y) }

        let p384 = try SigningKeyPair(.ec(curve: "P-384"))
        let curve = #expect(throws: SignatureKeyError.self) { try SignatureKey.publicKey(pem: p384.publicPEM) }
        #expect(curve?.message.contains("secp384r1") == true, "\(String(describing: curve))")
        let ed = try SigningKeyPair(.ed25519)
        #expect(throws: SignatureKeyError.self) { try SignatureKey.publicKey(pem: ed.publicPEM) }
        let garbage = #expect(throws: SignatureKeyError.self) { try SignatureKey.publicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n") }
        #expect(garbage?.message.contains("PEM") == true)
        #expect(throws: SignatureKeyError.self) { try SignatureKey.rsaPublic(modulus: [], exponent: e) }
    }

    @Test func constantTimeEquality() {
        let a = Array("0123456789abcdef0123456789abcdef".utf8)
        #expect(ConstantTime.equal(a, a))
        #expect(!ConstantTime.equal(a, Array(a.dropLast())))
        #expect(!ConstantTime.equal(a, a + [0]))
        var b = a
        b[0] ^= 1
        #expect(!ConstantTime.equal(a, b))
        #expect(ConstantTime.equal([], []))
        #expect(!ConstantTime.equal([], [0]))
        #expect(ConstantTime.equal("clé", "clé"))
        #expect(!ConstantTime.equal("clé", "cle"))
    }
}
