import Foundation

/// Mints signed tokens (JWTs) for tests with the `openssl` command, an implementation independent of the
/// daemon's: HS256 with a secret, RS256 with an RSA key generated at test time (nothing checked in that could
/// expire), and the JWKS document that publishes that key.
public final class TokenMint {
    /// A directory of its own (secret file, keys, JWKS), removed by `cleanUp()`.
    public let dir: String
    public let secret: [UInt8]
    public var secretFile: String { dir + "/secret" }
    public var jwksFile: String { dir + "/jwks.json" }
    public var rsaKeyFile: String { dir + "/rsa.pem" }
    public let kid = "test-rsa-1"

    public init() throws {
        dir = NSTemporaryDirectory() + "hearth-tokens-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var rng = SystemRandomNumberGenerator()
        secret = (0..<48).map { _ in UInt8.random(in: 33...126, using: &rng) }   // printable, so a file holds it as text
        try Data(secret).write(to: URL(fileURLWithPath: secretFile))
    }

    public func cleanUp() { try? FileManager.default.removeItem(atPath: dir) }

    /// Claims for `uid` valid for `ttl` seconds from now (iat now), plus `extra`.
    public static func claims(_ uid: String, ttl: Int = 3600, extra: [String: Any] = [:]) -> [String: Any] {
        let now = Int(Date().timeIntervalSince1970)
        var c: [String: Any] = ["sub": uid, "iat": now, "exp": now + ttl]
        for (k, v) in extra { c[k] = v }
        return c
    }

    /// An HS256 token over `claims`, signed with `secret` (this mint's unless another is given).
    public func hs256(_ claims: [String: Any], secret other: [UInt8]? = nil) throws -> String {
        let input = try Self.signingInput(header: ["alg": "HS256", "typ": "JWT"], claims: claims)
        let hex = (other ?? secret).map { String(format: "%02x", $0) }.joined()
        let sig = try Self.openssl(["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hex)", "-binary"], stdin: Array(input.utf8))
        return input + "." + Self.base64url(sig)
    }

    /// An RS256 token signed with this mint's RSA key (generated on first use), naming it by `kid`.
    public func rs256(_ claims: [String: Any]) throws -> String {
        try ensureRSAKey()
        let input = try Self.signingInput(header: ["alg": "RS256", "typ": "JWT", "kid": kid], claims: claims)
        let sig = try Self.openssl(["dgst", "-sha256", "-sign", rsaKeyFile, "-binary"], stdin: Array(input.utf8))
        return input + "." + Self.base64url(sig)
    }

    /// Writes `jwks.json` publishing the RSA key (as identity providers do) and returns its path.
    @discardableResult
    public func writeJWKS() throws -> String {
        try ensureRSAKey()
        let out = String(decoding: try Self.openssl(["rsa", "-in", rsaKeyFile, "-noout", "-modulus"]), as: UTF8.self)
        guard let hex = out.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines) else {
            throw TestFailure("openssl printed no modulus: \(out)")
        }
        var n: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            n.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        let jwks: [String: Any] = ["keys": [["kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
                                              "n": Self.base64url(n), "e": "AQAB"]]]
        try JSONSerialization.data(withJSONObject: jwks).write(to: URL(fileURLWithPath: jwksFile))
        return jwksFile
    }

    private func ensureRSAKey() throws {
        guard !FileManager.default.fileExists(atPath: rsaKeyFile) else { return }
        _ = try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsaKeyFile])
    }

    static func signingInput(header: [String: Any], claims: [String: Any]) throws -> String {
        let h = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let c = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return base64url([UInt8](h)) + "." + base64url([UInt8](c))
    }

    public static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Runs `openssl args` with `stdin`, returning what it wrote to standard output.
    static func openssl(_ args: [String], stdin: [UInt8] = []) throws -> [UInt8] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        try p.run()
        input.fileHandleForWriting.write(Data(stdin))
        try input.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw TestFailure("openssl \(args.joined(separator: " ")) failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return [UInt8](data)
    }
}
