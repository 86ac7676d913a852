import HearthRules

/// Who a connection speaks for, as its last successful `hello` established (docs/security.md).
enum Principal: Sendable {
    /// No credentials: rules see `request.auth == null`.
    case anonymous
    /// A verified token: rules see `request.auth` (`uid`, `token`); valid until `expiresAt` (unix seconds,
    /// the token's `exp` plus the allowed clock skew), or for good when nil (the admin speaking as a user).
    case user(RuleAuth, expiresAt: Int64?)
    /// The token expired without a refresh: every request but hello, ping and help is refused with
    /// UNAUTHENTICATED until a hello with a fresh token.
    case expired(uid: String, at: Int64)
    /// The admin key: rules do not apply.
    case admin

    var isAdmin: Bool { if case .admin = self { return true } else { return false } }

    /// `request.auth` for rules; nil when anonymous.
    var ruleAuth: RuleAuth? { if case .user(let a, _) = self { return a } else { return nil } }

    var expiresAt: Int64? { if case .user(_, let e) = self { return e } else { return nil } }

    /// For log lines and messages: "uid alice", "admin", "anonymous".
    var summary: String {
        switch self {
        case .anonymous: return "anonymous"
        case .user(let a, _): return "uid \(a.uid)"
        case .expired(let uid, _): return "uid \(uid) (token expired)"
        case .admin: return "admin"
        }
    }
}
