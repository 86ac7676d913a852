import HearthEngine
import HearthLoop
import HearthModel
import HearthRules

/// A session's identity and the access of its listeners (docs/security.md): who it is (set by `hello`), when
/// its token expires, and judging its listeners again when the identity, the rules, or a document their rule
/// read changes. A listener no longer allowed ends with an error event.
extension Session {
    var access: AccessControl { server.access }

    /// Sets who the connection speaks for (a successful hello): arms the expiry of a token, and judges every
    /// listener again under the new identity.
    func authenticated(as principal: Principal) {
        self.principal = withCertificate(principal)
        armExpiry()
        rejudgeListeners()
    }

    /// A verified TLS client certificate (mutual TLS) adds its subject to the identity the rules see:
    /// `request.auth.token.cert_subject`, and `request.auth.uid` too when the connection gave no token.
    func withCertificate(_ p: Principal) -> Principal {
        guard let subject = peerCertificateSubject else { return p }
        switch p {
        case .anonymous:
            return .user(RuleAuth(uid: subject, token: MapValue([.init(key: AccessControl.certificateClaim, value: .string(subject)),
                                                                 .init(key: "sub", value: .string(subject))])), expiresAt: nil)
        case .user(var auth, let exp):
            auth.token[AccessControl.certificateClaim] = .string(subject)
            return .user(auth, expiresAt: exp)
        case .expired, .admin:
            return p
        }
    }

    /// Sets the expiry timer for the identity's `expiresAt` (at most a day ahead; it re-arms until then).
    private func armExpiry() {
        expiryTimer?.cancel()
        expiryTimer = nil
        guard let exp = principal.expiresAt else { return }
        let nowSeconds = Engine.wallClockMicros() / 1_000_000
        let delayMs = UInt64(max(0, min(exp - min(nowSeconds, exp), 86_400))) * 1000
        // Unowned: the timer is cancelled when the connection closes (`endSubscriptions`).
        expiryTimer = server.loop.timer(after: delayMs) { [unowned self] in
            self.expiryTimer = nil
            self.checkExpiry()
            if !self.closed, case .user = self.principal { self.armExpiry() }
        }
    }

    /// UNAUTHENTICATED when the connection's token has expired (its listeners then end with it), else nil.
    /// Runs before every request that needs an identity, and when the expiry timer fires.
    func expiredCredentials() -> HearthError? {
        if !certificateAdopted {
            certificateAdopted = true
            principal = withCertificate(principal)
        }
        checkExpiry()
        guard case .expired(let uid, let at) = principal else { return nil }
        return HearthError(.unauthenticated, "the token of uid \(uid) expired at \(Self.time(at)); send hello with a fresh token")
    }

    private func checkExpiry() {
        guard case .user(let auth, let exp?) = principal, Engine.wallClockMicros() / 1_000_000 >= exp else { return }
        expiryTimer?.cancel()
        expiryTimer = nil
        principal = .expired(uid: auth.uid, at: exp)
        let e = HearthError(.unauthenticated, "the token of uid \(auth.uid) expired at \(Self.time(exp)); listen again after a hello with a fresh token")
        for tag in Array(subscriptions.keys).sorted() { revoke(tag, e) }
    }

    // MARK: Listeners

    /// Judges a listen before it registers: a document listen as a get of the document, a query listen as a
    /// list. Returns what the listener's access depends on.
    func judgeListen(_ target: ListenTarget) throws(HearthError) -> [DocumentPath] {
        guard access.enforcing, !principal.isAdmin else { return [] }
        let reader = PublishedRuleReader(engine: server.engine)
        switch target {
        case .document(let path):
            let doc = try server.engine.publishedOnLoop(path)
            let fields = try access.resource(for: .get, doc, codec: server.engine.codec)
            let reads = try access.judge(principal, .get, what: "listen to \(path)", path: path, resource: fields, reader: reader)
            return [path] + reads
        case .query(let q):
            return try access.judge(principal, .list, what: "listen to \(Self.describe(q))", query: q, reader: reader)
        }
    }

    /// A listener registered after `judgeListen` allowed it.
    func guardListener(_ tag: String, target: ListenTarget, dependsOn paths: [DocumentPath]) {
        guard access.enforcing else { return }
        listenTargets[tag] = target
        server.listenerAccess.set(self, tag: tag, dependsOn: paths)
    }

    /// The listener `tag` ended (unlisten, error, close).
    func forgetGuard(_ tag: String) {
        guard listenTargets.removeValue(forKey: tag) != nil else { return }
        server.listenerAccess.remove(self, tag: tag)
    }

    /// Judges every listener of the connection again (a new identity, reloaded rules).
    func rejudgeListeners() {
        for tag in Array(listenTargets.keys).sorted() { rejudge(tag) }
    }

    /// Judges one listener again with the current identity, rules and documents; ends it with the refusal
    /// if it is no longer allowed. Documents the rules read that this node must first read from a store
    /// across the network (`Engine.publishedOnLoop`) are read on a reader, then it is judged again; meanwhile
    /// the listener is held (`ListenerHub.hold`), so that it receives nothing it may no longer see. `read` is
    /// what earlier rounds missed.
    func rejudge(_ tag: String, read: MissedReads = MissedReads()) {
        let round = read.rounds
        guard !closed, let target = listenTargets[tag], let listener = subscriptions[tag] else { return }
        let hub = server.listenerHub
        // One judgement reading at a time: the one under way judges at the state published when it is back.
        if round == 0 && listener.held { return }
        if let e = expiredCredentials() { revoke(tag, e); return }
        do {
            let paths = try judgeListen(target)
            server.listenerAccess.set(self, tag: tag, dependsOn: paths)
            guard round > 0 else { return }
            hub.release(listener)
            if !listener.held { completionsAfterJudging.removeValue(forKey: tag)?() }
        } catch {
            let engine = server.engine
            let step = read.next(engine, reads: { m, _ in engine.readsNeeded(paths: m.paths, published: true) })
            guard case .again(let next, let reads) = step else {
                if case .refused(let refusal) = step { return revoke(tag, refusal) }
                return revoke(tag, error)
            }
            if round == 0 { hub.hold(listener) }
            server.readFirst(reads) { [self] failure in
                // A listener the connection ended (or replaced under the same tag) meanwhile is not judged.
                guard subscriptions[tag] === listener else { return }
                if let failure { revoke(tag, failure) } else { rejudge(tag, read: next) }
            }
        }
    }

    /// Ends the listener `tag` with `error` (its last line for that subscription).
    func revoke(_ tag: String, _ error: HearthError) {
        forgetGuard(tag)
        guard let l = subscriptions.removeValue(forKey: tag) else { return }
        let pending = l.isPending
        server.listenerHub.remove(l)
        // A listener whose first snapshot is still being read: its listen is answered with the refusal (now,
        // if the snapshot came back while the listener was judged again).
        if pending && awaitingReset.remove(tag) != nil {
            // Its reset is being read: its listen was answered long ago, so the error line goes out now.
            completionsAfterJudging[tag] = nil
            if !closed { sendResetEnd(tag, error) }
            return
        }
        if pending {
            refusedWhilePending[tag] = error
            // Not from inside a publication (a listener judged again there): it runs the connection's lines.
            if let complete = completionsAfterJudging.removeValue(forKey: tag) { server.loop.timer(after: 0) { complete() } }
            return
        }
        guard !closed else { return }
        server.dispatcher.sendEvent(.error(error), sub: tag, shareKey: nil, on: conn)
        sentSinceTick = true
        server.logger.debug("listener \(tag) of \(conn.peer) (\(principal.summary)) ended: \(error)")
    }

    /// Unix seconds as RFC 3339 for messages.
    static func time(_ seconds: Int64) -> String {
        guard abs(seconds) < 253_402_300_800 else { return "\(seconds) (unix seconds)" }
        return Timestamp(micros: seconds * 1_000_000).rfc3339
    }

    static func describe(_ q: Query) -> String {
        switch q.target {
        case .collection(let c): return "query on \(c)"
        case .collectionGroup(let id, let parent): return "collection-group query on \(id)\(parent.map { " under \($0)" } ?? "")"
        }
    }
}
