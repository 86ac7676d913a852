import Foundation
import HearthTesting
import Testing
import HearthClient

/// HearthClient's credentials against the real daemon with rules: a token (and a token provider) says who the
/// instance is, the rules judge it, a refused token fails requests with `.unauthenticated`, and the admin key
/// bypasses the rules.
@Suite struct AuthDaemonTests {
    static let rules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /users/{uid} {
          allow read, write: if request.auth != null && request.auth.uid == uid;
        }
      }
    }
    """

    @Test func tokensAndTheAdminKeyAgainstTheRules() async throws {
        let mint = try TokenMint()
        defer { mint.cleanUp() }
        let rules = mint.dir + "/firestore.rules", adminKey = String(repeating: "k", count: 40)
        try Self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
        try adminKey.write(toFile: mint.dir + "/admin.key", atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile,
                                                   "--admin-key-file", mint.dir + "/admin.key"])
        func instance(_ credentials: HearthCredentials) -> Hearth {
            var s = HearthSettings()
            s.credentials = credentials
            return Hearth(port: daemon.port, settings: s)
        }

        let token = try mint.hs256(TokenMint.claims("alice"))
        let alice = instance(.tokenProvider { token })
        defer { alice.terminate() }
        try await alice.collection("users").document("alice").setData(["name": "Alice"])
        let mine = try await alice.collection("users").document("alice").getDocument()
        #expect(mine.get("name") as? String == "Alice")
        await #expect(throws: HearthError.self) { _ = try await alice.collection("users").document("bob").getDocument() }
        do {
            _ = try await alice.collection("users").document("bob").getDocument()
        } catch let e as HearthError {
            #expect(e.code == .permissionDenied, "\(e)")
        }

        let expired = instance(.token(try mint.hs256(TokenMint.claims("alice", ttl: -3600))))
        defer { expired.terminate() }
        do {
            _ = try await expired.collection("users").document("alice").getDocument()
            Issue.record("an expired token must be refused")
        } catch let e as HearthError {
            #expect(e.code == .unauthenticated && e.message.contains("expired"), "\(e)")
        }

        let admin = instance(.adminKey(adminKey))
        defer { admin.terminate() }
        try await admin.collection("users").document("bob").setData(["name": "Bob"])
        #expect(try await admin.collection("users").document("bob").getDocument().exists)
    }
}
