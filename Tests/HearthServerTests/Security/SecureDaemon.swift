import Foundation
import HearthTesting

/// A real hearthd with rules, an HS256 secret, a JWKS (RS256) and an admin key, all made at test time, and
/// connections that say who they are.
final class SecureDaemon {
    let mint: TokenMint
    let daemon: DaemonProcess
    let rulesFile: String
    let adminKey: String
    var adminKeyFile: String { mint.dir + "/admin.key" }

    init(rules: String, extraArgs: [String] = []) throws {
        mint = try TokenMint()
        rulesFile = mint.dir + "/firestore.rules"
        try rules.write(toFile: rulesFile, atomically: true, encoding: .utf8)
        adminKey = (0..<40).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
        try adminKey.write(toFile: mint.dir + "/admin.key", atomically: true, encoding: .utf8)
        try mint.writeJWKS()
        daemon = try DaemonProcess(extraArgs: ["--rules", rulesFile, "--auth-secret-file", mint.secretFile,
                                               "--auth-jwks", mint.jwksFile, "--admin-key-file", mint.dir + "/admin.key",
                                               "--auth-audience", "hearth-test"] + extraArgs)
    }

    deinit { mint.cleanUp() }

    static func claims(_ uid: String, ttl: Int = 3600, extra: [String: Any] = [:]) -> [String: Any] {
        var e = extra
        if e["aud"] == nil { e["aud"] = "hearth-test" }
        return TokenMint.claims(uid, ttl: ttl, extra: e)
    }

    func token(_ uid: String, ttl: Int = 3600, extra: [String: Any] = [:]) throws -> String {
        try mint.hs256(Self.claims(uid, ttl: ttl, extra: extra))
    }

    /// A connection that said hello with a token for `uid` (nil: no hello, anonymous).
    func client(_ uid: String?) throws -> WireClient {
        let c = try daemon.connect()
        if let uid {
            let r = try c.call(["op": "hello", "token": try token(uid)])
            guard r.isOK else { throw TestFailure("hello as \(uid) failed: \(r)") }
        }
        return c
    }

    func admin() throws -> WireClient {
        let c = try daemon.connect()
        let r = try c.call(["op": "hello", "adminKey": adminKey])
        guard r.isOK else { throw TestFailure("admin hello failed: \(r)") }
        return c
    }

    /// Replaces the rules file (reload it with SIGHUP or the rules op).
    func rewriteRules(_ text: String) throws { try text.write(toFile: rulesFile, atomically: true, encoding: .utf8) }

    /// Reads lines until the next one for `sub` (a pushed snapshot or error).
    static func event(_ c: WireClient, sub: String, timeout: Double = 10) throws -> [String: Any] {
        while true {
            let o = try c.readObject(timeout: timeout)
            if o["sub"] as? String == sub { return o }
        }
    }
}
