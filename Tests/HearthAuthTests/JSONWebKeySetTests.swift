import Foundation
import HearthAuth
import HearthTesting
import Testing

@Suite struct JSONWebKeySetTests {
    func parse(_ keys: [[String: Any]]) throws -> JSONWebKeySet {
        try JSONWebKeySet.parse(Array(TestJWT.json(["keys": keys]).utf8))
    }

    func error(_ keys: [[String: Any]]) -> String? {
        do {
            _ = try parse(keys)
            return nil
        } catch let e as AuthConfigError {
            return e.message
        } catch {
            return "\(error)"
        }
    }

    @Test func keysAndAlgorithms() throws {
        let set = Fixture.keySet
        #expect(set.keys.map(\.keyID) == ["rsa-1", "rsa-2", "ec-1"])
        #expect(set.keys.map(\.algorithm) == [.rs256, .rs256, .es256])
        #expect(set.keys.map(\.key.bits) == [2048, 2048, 256])
        #expect(set.skipped.isEmpty)
    }

    @Test func entriesForOtherUsesAreSkippedAndListed() throws {
        let rsa = try Fixture.rsa.jwk(kid: "r", alg: nil)
        var enc = try Fixture.rsa2.jwk(kid: "enc", alg: nil, use: "enc")
        enc["alg"] = "RSA-OAEP"
        var ops = try Fixture.ec.jwk(kid: "ops", alg: nil)
        ops["key_ops"] = ["sign"]
        var rs512 = try Fixture.rsa2.jwk(kid: "rs512", alg: nil)
        rs512["alg"] = "RS512"
        let p384 = try SigningKeyPair(.ec(curve: "P-384")).jwk(kid: "p384", alg: nil)
        let set = try parse([rsa, enc, ops, rs512, p384,
                             ["kty": "oct", "kid": "hmac", "k": "c2VjcmV0"],
                             ["kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]])
        #expect(set.keys.map(\.keyID) == ["r"])
        #expect(set.skipped == [
            #"keys[1] (kid "enc"): use "enc" is not for signatures"#,
            #"keys[2] (kid "ops"): key_ops does not include "verify""#,
            #"keys[3] (kid "rs512"): alg "RS512" is not supported (only RS256 and ES256)"#,
            #"keys[4] (kid "p384"): curve "P-384" is not supported (only P-256)"#,
            #"keys[5] (kid "hmac"): kty "oct" is not supported (only RSA and EC)"#,
            #"keys[6] (kid "ed"): kty "OKP" is not supported (only RSA and EC)"#,
        ])
    }

    @Test func brokenEntriesAreErrors() throws {
        let rsa = try Fixture.rsa.jwk(kid: "r", alg: nil)
        let ec = try Fixture.ec.jwk(kid: "e", alg: nil)
        var badN = rsa
        badN["n"] = (rsa["n"] as! String) + "="
        var noY = ec
        noY.removeValue(forKey: "y")
        var offCurve = ec
        let (x, y) = try Fixture.ec.ecCoordinates()
        offCurve["y"] = Base64URLText.encode(y.dropLast() + [y.last! ^ 1])
        var shortX = ec
        shortX["x"] = Base64URLText.encode(Array(x.dropFirst()))
        var rsaES = rsa
        rsaES["alg"] = "ES256"
        var ecP384 = ec
        ecP384["crv"] = "P-384"
        ecP384["alg"] = "ES256"
        var kidNumber = rsa
        kidNumber["kid"] = 7
        let small = try SigningKeyPair(.rsa(bits: 1024)).jwk(kid: "small", alg: "RS256")

        let table: [(String, [[String: Any]], String)] = [
            ("duplicate kid", [rsa, rsa], #"keys[1]: kid "r" appears twice"#),
            ("padded n", [badN], #"keys[0] (kid "r"): n is not unpadded base64url"#),
            ("missing y", [noY], #"keys[0] (kid "e"): y is missing"#),
            ("point off the curve", [offCurve], #"keys[0] (kid "e"): "#),
            ("short x", [shortX], "a P-256 coordinate must be 32 bytes"),
            ("RSA with ES256", [rsaES], #"keys[0] (kid "r"): alg ES256 does not fit kty RSA (expected RS256)"#),
            ("ES256 on P-384", [ecP384], #"alg ES256 needs crv P-256, got "P-384""#),
            ("kid a number", [kidNumber], "keys[0]: kid must be a string, got an integer"),
            ("no kty", [["kid": "x"]], #"keys[0] (kid "x"): kty is missing"#),
            ("1024-bit RSA", [small], "1024 bits, fewer than the 2048 required"),
            ("no usable key", [["kty": "oct", "k": "AA"]], #"no RS256 or ES256 key in the JWKS (keys[0]: kty "oct" is not supported"#),
            ("empty", [], #"no RS256 or ES256 key in the JWKS (the "keys" array is empty)"#),
        ]
        for (name, keys, says) in table {
            let e = error(keys)
            #expect(e?.contains(says) == true, "\(name): \(e ?? "parsed")")
        }
        let notSet = #expect(throws: AuthConfigError.self) { try JSONWebKeySet.parse(Array(#"{"kty":"RSA"}"#.utf8)) }
        #expect(notSet?.message == #"not a JWKS: expected an object with a "keys" array"#)
        let notObject = #expect(throws: AuthConfigError.self) { try JSONWebKeySet.parse(Array(#"{"keys":[1]}"#.utf8)) }
        #expect(notObject?.message == "keys[0]: expected an object, got an integer")
        let notJSON = #expect(throws: AuthConfigError.self) { try JSONWebKeySet.parse(Array("{keys".utf8)) }
        #expect(notJSON?.message.hasPrefix("not a JWKS: invalid JSON at byte") == true)
    }

    @Test func loadNamesTheFile() throws {
        let path = try Fixture.writeFile(Array(#"{"keys":[]}"#.utf8))
        defer { unlink(path) }
        let e = #expect(throws: AuthConfigError.self) { try JSONWebKeySet.load(file: path) }
        #expect(e?.message.hasPrefix(path + ": no RS256 or ES256 key") == true, "\(String(describing: e))")
        let ok = try Fixture.writeFile(Array(Fixture.jwksJSON.utf8))
        defer { unlink(ok) }
        #expect(try JSONWebKeySet.load(file: ok).keys.count == 3)
    }
}
