#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HearthAuth
import HearthEngine
import HearthModel
import HearthRules
import HearthStorage

/// The one place that decides who a connection is and what it may do (docs/security.md): verifies tokens
/// and the admin key for `hello`, holds the rules (reloadable), and judges each read, query, commit and
/// listener against them. Without rules every request is allowed; the admin bypasses rules. Loop thread,
/// except `judgeGet`, which reader threads call with their own reader.
public final class AccessControl {
    let settings: SecuritySettings
    private let verifier: TokenVerifier?
    private let adminKey: AdminKey?
    /// The rules in force; replaced whole by a reload (reader threads keep the one they started with).
    private(set) var rules: Rules?
    /// "rules.rules (sha 1a2b3c4d, 12 allow statements)" for log lines and the `rules` op.
    private(set) var rulesSummary = "none"
    /// Failed hellos per address.
    var throttle: HelloThrottle
    /// Firestore's limit on documents the rules may read with get()/exists() for one request, and for a
    /// commit of several documents.
    static let readsPerRequest = 10
    static let readsPerCommit = 20

    /// Loads the rules file, token keys and admin key `settings` name; throws naming the file and what is
    /// wrong (a rules file's `file:line:column`).
    public init(_ settings: SecuritySettings) throws(HearthError) {
        self.settings = settings
        self.throttle = HelloThrottle(limit: settings.maxAuthFailuresPerMinute)
        self.verifier = try Self.loadVerifier(settings)
        self.adminKey = try Self.loadAdminKey(settings)
        if let file = settings.rulesFile {
            let (rules, summary) = try Self.loadRules(file)
            self.rules = rules
            self.rulesSummary = summary
        }
    }

    /// True when requests are judged by rules (else every client has full access).
    var enforcing: Bool { rules != nil }

    /// The start-up log line's account of the security mode.
    var modeSummary: String {
        var parts: [String] = []
        if enforcing { parts.append("rules from \(rulesSummary)") } else { parts.append("open (no --rules): every client has full access") }
        var tokens: [String] = []
        if settings.authSecretFile != nil { tokens.append("HS256") }
        if settings.authJWKSFile != nil { tokens.append("JWKS") }
        parts.append(tokens.isEmpty ? "no tokens verified" : "tokens: \(tokens.joined(separator: ", "))")
        parts.append(adminKey == nil ? "no admin key" : "admin key set")
        return parts.joined(separator: "; ")
    }

    // MARK: Loading

    static func readFile(_ path: String, what: String) throws(HearthError) -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            let reason = (error as NSError).localizedFailureReason ?? String(describing: error)
            throw HearthError(.invalidArgument, "cannot read \(what) \(path): \(reason)")
        }
    }

    static func loadRules(_ file: String) throws(HearthError) -> (Rules, String) {
        let data = try readFile(file, what: "the rules file")
        guard let text = String(data: data, encoding: .utf8) else {
            throw HearthError(.invalidArgument, "the rules file \(file) is not UTF-8 text")
        }
        let rules: Rules
        do { rules = try Rules.compile(text, file: file) } catch {
            throw HearthError(.invalidArgument, "rules not loaded: \(error.description)")
        }
        var hash: UInt64 = 0xcbf29ce484222325     // FNV-1a, to tell versions apart in logs (not a security check)
        for b in data { hash = (hash ^ UInt64(b)) &* 0x100000001b3 }
        return (rules, "\(file) (\(data.count) bytes, version \(String(hash >> 32, radix: 16)))")
    }

    /// Re-reads the rules file (SIGHUP, the `rules` op). A file that does not load leaves the rules in force.
    func reloadRules() throws(HearthError) -> String {
        guard let file = settings.rulesFile else {
            throw HearthError(.failedPrecondition, "the daemon was started without --rules; there is no rules file to reload")
        }
        let (rules, summary) = try Self.loadRules(file)
        self.rules = rules
        self.rulesSummary = summary
        return summary
    }

    /// The stored document's fields as the rules' `resource`, decoded only when some rule for `method` reads
    /// `resource` (most reads under rules that check only `request.auth` decode nothing).
    func resource(for method: RuleMethod, _ doc: StoredDocument?, codec: any DocumentCodec) throws(HearthError) -> MapValue? {
        guard let rules else { return nil }
        return try Self.resource(for: method, doc, rules: rules, codec: codec)
    }

    static func resource(for method: RuleMethod, _ doc: StoredDocument?, rules: Rules, codec: any DocumentCodec) throws(HearthError) -> MapValue? {
        guard let doc, rules.readsResource(method) else { return nil }
        return try codec.decode(doc.data)
    }

    // MARK: Authentication

    /// The claim under which rules see a verified client certificate's subject.
    static let certificateClaim = "cert_subject"

    /// The principal a token names, or UNAUTHENTICATED with why (expired, bad signature, wrong audience...).
    func authenticate(token: String, now: Int64) -> Result<Principal, HearthError> {
        guard let verifier else {
            return .failure(HearthError(.unauthenticated, "this server verifies no tokens (it was started without --auth-secret-file or --auth-jwks)"))
        }
        switch verifier.verify(token, now: now) {
        case .success(let t):
            let (until, overflow) = t.expiresAt.addingReportingOverflow(verifier.clockSkew)
            // `cert_subject` names a client certificate the TLS handshake verified (`Session.withCertificate`
            // adds it); a token's own claim of that name is dropped, so a rule that trusts it trusts a certificate.
            var claims = t.claims
            claims[Self.certificateClaim] = nil
            return .success(.user(RuleAuth(uid: t.uid, token: claims), expiresAt: overflow ? Int64.max : until))
        case .failure(let e):
            return .failure(HearthError(.unauthenticated, "token refused (\(e.reason.rawValue)): \(e.message)"))
        }
    }

    /// The admin key, presented by a follower to the committer (nil without `--admin-key-file`).
    var adminKeyForPeers: String? { adminKey?.text }

    func authenticate(adminKey key: String) -> Result<Principal, HearthError> {
        guard let adminKey else {
            return .failure(HearthError(.unauthenticated, "this server has no admin key (it was started without --admin-key-file)"))
        }
        guard adminKey.matches(key) else { return .failure(HearthError(.unauthenticated, "wrong admin key")) }
        return .success(.admin)
    }

    // MARK: Authorization

    /// Whether `session` may run `command` at all: nil when it may (its handler may still ask the rules),
    /// else UNAUTHENTICATED (its token expired) or PERMISSION_DENIED (an admin op while rules are enforced).
    func refusal(_ command: Command, session: Session) -> HearthError? {
        if let expired = session.expiredCredentials() { return expired }
        if command.clearance == .admin, enforcing, !session.principal.isAdmin {
            return HearthError(.permissionDenied, "only the admin may do this while rules are enforced (hello with adminKey)")
        }
        return nil
    }

    /// Judges one request with the rules in force; see `judge(rules:...)`.
    func judge(_ principal: Principal, _ method: RuleMethod, what: @autoclosure () -> String,
               path: DocumentPath? = nil, query: Query? = nil, resource: MapValue? = nil,
               reader: RecordingRuleReader) throws(HearthError) -> [DocumentPath] {
        guard let rules, !principal.isAdmin else { return [] }
        return try Self.judge(rules: rules, principal, method, what: what(), path: path, query: query,
                              resource: resource, reader: reader)
    }

    /// Judges one request (any thread: reader threads judge the documents of large reads with their own
    /// reader). Throws PERMISSION_DENIED naming `what` and the rules' reason, or the failure met while
    /// reading for the rules. Returns the documents the rules read (a listener's dependencies).
    static func judge(rules: Rules, _ principal: Principal, _ method: RuleMethod, what: @autoclosure () -> String,
                      path: DocumentPath? = nil, query: Query? = nil, resource: MapValue? = nil,
                      requestResource: MapValue? = nil, maxReads: Int = AccessControl.readsPerRequest,
                      time: Timestamp? = nil, reader: RecordingRuleReader) throws(HearthError) -> [DocumentPath] {
        guard !principal.isAdmin else { return [] }
        let request = RuleRequest(method: method, path: path, query: query, auth: principal.ruleAuth,
                                  time: time ?? Timestamp(micros: Engine.wallClockMicros()),
                                  resource: resource, requestResource: requestResource, maxDocumentReads: maxReads)
        let decision = rules.evaluate(request, reader: reader)
        if let failure = reader.failure { throw failure }
        guard decision.allowed else {
            throw HearthError(.permissionDenied, "\(what()) denied by the rules: \(decision.reason)")
        }
        return decision.reads
    }

    /// A commit: each document it writes is judged as a create, update or delete (`resource` before,
    /// `request.resource` after, `getAfter` the commit's result); a document it only verifies as a get.
    func review(_ principal: Principal, _ review: CommitReview, engine: Engine, nameWrites: Bool) throws(HearthError) {
        guard let rules, !principal.isAdmin else { return }
        let reader = CommitRuleReader(engine: engine, review: review)
        let maxReads = review.documents.count > 1 ? Self.readsPerCommit : Self.readsPerRequest
        // A document whose rules missed a read (a store across the network: `Engine.publishedOnLoop`) does not
        // stop the review: every document's misses are read in one round.
        try engine.gatheringMisses(review.documents) { (d) throws(HearthError) in
            let method: RuleMethod
            switch d.method {
            case nil: method = .get
            case .create: method = .create
            case .update: method = .update
            case .delete: method = .delete
            }
            do throws(HearthError) {
                _ = try Self.judge(rules: rules, principal, method, what: "\(method.rawValue) of \(d.path)", path: d.path,
                                   resource: d.before, requestResource: method == .delete || method == .get ? nil : d.after,
                                   maxReads: maxReads, time: review.commitTime, reader: reader)
            } catch {
                throw engine.hasMissing || !nameWrites ? error : error.prefixed("writes[\(d.firstWrite)]")
            }
        }
    }
}
