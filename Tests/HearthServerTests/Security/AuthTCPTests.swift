import Foundation
import HearthTesting
import Testing

/// Authentication over TCP: hello with tokens (HS256 and RS256 through a JWKS) and the admin key, every
/// reason a token is refused, refresh, expiry, and the failed-hello limit.
@Suite(.serialized) final class AuthTCPTests {
    static let rules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /users/{userId} {
          allow read, write: if request.auth != null && request.auth.uid == userId;
        }
        match /claims/{doc} {
          allow read: if request.auth.token.role == 'editor';
        }
      }
    }
    """
    let s: SecureDaemon

    init() throws { s = try SecureDaemon(rules: Self.rules, extraArgs: ["--max-auth-failures", "5"]) }

    @Test func helloWithATokenSaysWhoTheConnectionIs() throws {
        let c = try s.daemon.connect()
        let r = try c.call(["op": "hello", "token": try s.token("alice")])
        #expect(r.isOK, "\(r)")
        let auth = r["auth"] as? [String: Any]
        #expect(auth?["uid"] as? String == "alice")
        #expect(auth?["admin"] as? Bool == false)
        #expect((auth?["expiresAt"] as? Int ?? 0) > Int(Date().timeIntervalSince1970))
        #expect(try c.request(#"{"op":"set","path":"users/alice","data":{"n":1}}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"users/alice"}"#).isOK)
    }

    @Test func anRS256TokenFromTheJWKSWorks() throws {
        let c = try s.daemon.connect()
        let r = try c.call(["op": "hello", "token": try s.mint.rs256(SecureDaemon.claims("bob"))])
        #expect(r.isOK, "\(r)")
        #expect((r["auth"] as? [String: Any])?["uid"] as? String == "bob")
        #expect(try c.request(#"{"op":"set","path":"users/bob","data":{"n":1}}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"users/alice"}"#).errorCode == "PERMISSION_DENIED")
    }

    @Test(arguments: [
        ("expired", "expired"),
        ("signature", "signature"),
        ("audience", "audience"),
        ("garbage", "malformed"),
        ("none", "algorithm"),
    ])
    func refusedTokensSayWhy(kind: String, reason: String) throws {
        let token: String
        switch kind {
        case "expired": token = try s.token("alice", ttl: -3600)
        case "signature": token = try s.mint.hs256(SecureDaemon.claims("alice"), secret: Array("another secret of at least thirty-two bytes".utf8))
        case "audience": token = try s.mint.hs256(SecureDaemon.claims("alice", extra: ["aud": "someone-else"]))
        case "garbage": token = "not.a-token"
        default:
            let claims = try JSONSerialization.data(withJSONObject: SecureDaemon.claims("alice"))
            token = Base64URLText.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + Base64URLText.encode([UInt8](claims)) + "."
        }
        let c = try s.daemon.connect()
        let r = try c.call(["op": "hello", "id": 7, "token": token])
        #expect(r.errorCode == "UNAUTHENTICATED", "\(r)")
        #expect(r["id"] as? Int == 7)
        #expect(r.errorMessage?.lowercased().contains(reason) == true, "\(r)")
        #expect(r.errorMessage?.contains(token) != true || token.count < 12, "a refusal never echoes the token")
        // The connection carries on, anonymous: the rules refuse it.
        #expect(try c.request(#"{"op":"get","path":"users/alice"}"#).errorCode == "PERMISSION_DENIED")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }

    @Test func theAdminKeyBypassesTheRulesAndAWrongOneIsRefused() throws {
        let a = try s.admin()
        #expect(try a.request(#"{"op":"set","path":"users/carol","data":{"n":1}}"#).isOK)
        #expect(try a.request(#"{"op":"index","action":"list"}"#).isOK)
        #expect(try a.request(#"{"op":"rules","action":"status"}"#)["enforcing"] as? Bool == true)
        let c = try s.daemon.connect()
        let r = try c.call(["op": "hello", "adminKey": String(s.adminKey.reversed())])
        #expect(r.errorCode == "UNAUTHENTICATED" && r.errorMessage?.contains("wrong admin key") == true, "\(r)")
        let both = try c.call(["op": "hello", "adminKey": s.adminKey, "token": try s.token("alice")])
        #expect(both.errorCode == "INVALID_ARGUMENT", "\(both)")
    }

    @Test func adminOpsNeedTheAdmin() throws {
        let c = try s.client("alice")
        let r = try c.request(#"{"op":"index","action":"list"}"#)
        #expect(r.errorCode == "PERMISSION_DENIED" && r.errorMessage?.hasPrefix("index: ") == true, "\(r)")
        #expect(try c.request(#"{"op":"rules","action":"reload"}"#).errorCode == "PERMISSION_DENIED")
    }

    @Test func claimsReachTheRules() throws {
        let a = try s.admin()
        #expect(try a.request(#"{"op":"set","path":"claims/x","data":{"n":1}}"#).isOK)
        let editor = try s.daemon.connect()
        #expect(try editor.call(["op": "hello", "token": try s.token("ed", extra: ["role": "editor"])]).isOK)
        #expect(try editor.request(#"{"op":"get","path":"claims/x"}"#).isOK)
        let viewer = try s.daemon.connect()
        #expect(try viewer.call(["op": "hello", "token": try s.token("vi", extra: ["role": "viewer"])]).isOK)
        #expect(try viewer.request(#"{"op":"get","path":"claims/x"}"#).errorCode == "PERMISSION_DENIED")
    }

    /// A hello with another token on the same connection keeps the listeners the new identity may have and
    /// ends the others with PERMISSION_DENIED.
    @Test func refreshingTheTokenRejudgesListeners() throws {
        let a = try s.admin()
        #expect(try a.request(#"{"op":"set","path":"users/alice","data":{"n":1}}"#).isOK)
        let c = try s.client("alice")
        let l = try c.request(#"{"op":"listen","path":"users/alice"}"#)
        #expect(l.isOK, "\(l)")
        let sub = l["sub"] as! String
        _ = try SecureDaemon.event(c, sub: sub)
        // The same uid again (a refreshed token): the listener stays.
        #expect(try c.call(["op": "hello", "token": try s.token("alice")]).isOK)
        #expect(try a.request(#"{"op":"set","path":"users/alice","data":{"n":2}}"#).isOK)
        let e = try SecureDaemon.event(c, sub: sub)
        #expect(((e["doc"] as? [String: Any])?["data"] as? [String: Any])?["n"] as? Int == 2, "\(e)")
        // Another uid: alice's document is no longer readable.
        #expect(try c.call(["op": "hello", "token": try s.token("mallory")]).isOK)
        let end = try SecureDaemon.event(c, sub: sub)
        #expect((end["error"] as? [String: Any])?["code"] as? String == "PERMISSION_DENIED", "\(end)")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }

    @Test func theCLIAuthenticatesFromAFileOrTheEnvironment() throws {
        let tokenFile = s.mint.dir + "/alice.jwt"
        try (try s.token("alice")).write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let port = ["--port", String(s.daemon.port)]
        let set = try CLIProcess.run(["set", "users/alice", #"{"n":1}"#, "--token-file", tokenFile] + port)
        #expect(set.status == 0, "\(set.stdout)\(set.stderr)")
        let denied = try CLIProcess.run(["get", "users/bob"] + port, environment: ["HEARTH_TOKEN": try s.token("alice")])
        #expect(denied.status == 1 && denied.stderr.contains("PERMISSION_DENIED"), "\(denied.stdout)\(denied.stderr)")
        let expired = try CLIProcess.run(["get", "users/alice", "--token-file", tokenFile] + port,
                                         environment: [:])
        #expect(expired.status == 0, "\(expired.stderr)")
        try (try s.token("alice", ttl: -3600)).write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let refused = try CLIProcess.run(["get", "users/alice", "--token-file", tokenFile] + port)
        #expect(refused.status == 1 && refused.stderr.contains("UNAUTHENTICATED") && refused.stderr.contains("expired"), "\(refused.stderr)")
        let admin = try CLIProcess.run(["get", "users/alice", "--admin-key-file", s.adminKeyFile] + port)
        #expect(admin.status == 0, "\(admin.stderr)")
    }

    @Test func tooManyFailedHellosAreRefusedForAWhile() throws {
        let c = try s.daemon.connect()
        for _ in 0..<5 { #expect(try c.call(["op": "hello", "adminKey": "wrong key, guessed"]).errorCode == "UNAUTHENTICATED") }
        let r = try c.call(["op": "hello", "adminKey": s.adminKey])
        #expect(r.errorCode == "RESOURCE_EXHAUSTED" && r.errorMessage?.contains("--max-auth-failures") == true, "\(r)")
        #expect(try s.daemon.connect().call(["op": "hello", "token": try s.token("alice")]).errorCode == "RESOURCE_EXHAUSTED")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)     // other requests carry on
    }

    @Test func aHelloWithoutCredentialsStaysAnonymous() throws {
        let c = try s.daemon.connect()
        let r = try c.request(#"{"op":"hello","heartbeatMs":0}"#)
        #expect(r.isOK && r["auth"] == nil, "\(r)")
        #expect(try c.request(#"{"op":"get","path":"users/alice"}"#).errorCode == "PERMISSION_DENIED")
    }
}

/// A token's expiry ends the connection's listeners and refuses its requests until a fresh hello.
@Suite struct TokenExpiryTCPTests {
    @Test func anExpiredTokenEndsListenersAndRefusesRequests() throws {
        let s = try SecureDaemon(rules: AuthTCPTests.rules, extraArgs: ["--auth-clock-skew", "0"])
        let a = try s.admin()
        #expect(try a.request(#"{"op":"set","path":"users/alice","data":{"n":1}}"#).isOK)
        let c = try s.daemon.connect()
        #expect(try c.call(["op": "hello", "token": try s.token("alice", ttl: 2)]).isOK)
        let l = try c.request(#"{"op":"listen","path":"users/alice"}"#)
        let sub = l["sub"] as! String
        _ = try SecureDaemon.event(c, sub: sub)
        let end = try SecureDaemon.event(c, sub: sub, timeout: 15)     // the expiry timer, about 2 s from the hello
        #expect((end["error"] as? [String: Any])?["code"] as? String == "UNAUTHENTICATED", "\(end)")
        let r = try c.request(#"{"op":"get","path":"users/alice"}"#)
        #expect(r.errorCode == "UNAUTHENTICATED" && r.errorMessage?.contains("expired") == true, "\(r)")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
        #expect(try c.call(["op": "hello", "token": try s.token("alice")]).isOK)      // refreshed
        #expect(try c.request(#"{"op":"get","path":"users/alice"}"#).isOK)
    }
}

/// Protected mode and the per-address connection limit.
@Suite struct ProtectedModeTCPTests {
    @Test func aNonLoopbackAddressWithoutRulesIsRefusedBeforeAnythingIsBound() throws {
        let dir = NSTemporaryDirectory() + "hearth-protected-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try DaemonProcess.runToExit(["--host", "0.0.0.0", "--port", "0", "--data-dir", dir])
        #expect(r.status == 2)
        #expect(r.stderr.contains("refusing to serve 0.0.0.0 without --rules") && r.stderr.contains("--insecure-open"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir), "nothing is created")
    }

    @Test func aRulesFileThatDoesNotLoadStopsTheStartAndChangesNothing() throws {
        let dir = NSTemporaryDirectory() + "hearth-badrules-\(UUID().uuidString.prefix(8))"
        let rules = dir + ".rules"
        defer { try? FileManager.default.removeItem(atPath: dir); try? FileManager.default.removeItem(atPath: rules) }
        try "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /a/{b} { allow read: if request.auth.uid ==; }\n  }\n}\n".write(toFile: rules, atomically: true, encoding: .utf8)
        let r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dir, "--rules", rules])
        #expect(r.status == 2)
        #expect(r.stderr.contains("\(rules):4:"), "the file, line and column: \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir), "nothing is created")
        let missing = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dir, "--admin-key-file", dir + "/nope"])
        #expect(missing.status == 2 && missing.stderr.contains("nope"), "\(missing.stderr)")
    }

    @Test func theStartLineSaysTheMode() throws {
        let d = try DaemonProcess()
        #expect(d.waitForLog("security: open (no --rules)"))
    }

    @Test func oneAddressGetsAtMostItsShare() throws {
        let d = try DaemonProcess(extraArgs: ["--max-connections-per-address", "2"])
        let a = try d.connect(), b = try d.connect()
        #expect(try a.request(#"{"op":"ping"}"#).isOK && b.request(#"{"op":"ping"}"#).isOK)
        let c = try d.connect()
        let r = try c.readObject()
        #expect(r.errorCode == "RESOURCE_EXHAUSTED" && r.errorMessage?.contains("--max-connections-per-address") == true, "\(r)")
        #expect(c.isClosedByPeer())
        #expect(try a.request(#"{"op":"ping"}"#).isOK)
    }
}
