/// How `hearthd` decides who may do what (docs/security.md): the rules file, how tokens are verified, the
/// admin key, and whether it may serve beyond loopback without rules. File paths only; `AccessControl` loads
/// them.
public struct SecuritySettings: Sendable {
    /// A Firestore Security Rules file (`--rules`). Without one, every client has full access, and the daemon
    /// serves loopback only unless `insecureOpen`.
    public var rulesFile: String?
    /// HS256 secret (`--auth-secret-file`).
    public var authSecretFile: String?
    /// JWKS document with RS256/ES256 public keys (`--auth-jwks`).
    public var authJWKSFile: String?
    /// Required `iss` and `aud` claims (`--auth-issuer`, `--auth-audience`).
    public var authIssuer: String?
    public var authAudience: String?
    /// Seconds of clock difference allowed when checking `exp`, `nbf` and `iat` (`--auth-clock-skew`).
    public var authClockSkewSeconds: Int64 = 60
    /// The admin key (`--admin-key-file`): a hello with it bypasses the rules.
    public var adminKeyFile: String?
    /// Serve a non-loopback address without rules (`--insecure-open`).
    public var insecureOpen = false
    /// Failed hello attempts an address may make per minute before its hellos are refused
    /// (`--max-auth-failures`; 0: no limit).
    public var maxAuthFailuresPerMinute = 20

    public init() {}

    /// True for the loopback addresses: 127.0.0.0/8, ::1 and "localhost".
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Protected mode: why the daemon must not start serving `host` as configured, or nil. Without rules it
    /// serves loopback only, unless told `--insecure-open`.
    public func protectionProblem(host: String) -> String? {
        guard rulesFile == nil, !insecureOpen, !Self.isLoopback(host) else { return nil }
        return "refusing to serve \(host) without --rules: anyone who reaches the port could read, overwrite and delete every document. Give --rules FILE (with --auth-secret-file or --auth-jwks for tokens, --admin-key-file for tools), or --insecure-open to serve without protection"
    }
}
