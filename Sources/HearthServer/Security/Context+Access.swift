import HearthEngine
import HearthModel
import HearthRules
import HearthStorage

/// How handlers ask the rules (one call per kind of request; `AccessControl` decides).
extension Context {
    var access: AccessControl { server.access }

    /// True when this request is judged by rules (rules are loaded and the connection is not the admin).
    var judged: Bool { access.enforcing && !session.principal.isAdmin }

    /// A document read as a `get` (published state).
    func judgeGet(_ path: DocumentPath, _ doc: StoredDocument?) throws(HearthError) {
        guard judged else { return }
        let fields = try access.resource(for: .get, doc, codec: engine.codec)
        _ = try access.judge(session.principal, .get, what: "get of \(path)", path: path, resource: fields,
                             reader: PublishedRuleReader(engine: engine))
    }

    /// Documents read as gets; every document's missed reads (`Engine.publishedOnLoop`) are gathered before
    /// the first miss is thrown, so that one round reads them all.
    func judgeGets<S: Sequence>(_ docs: S) throws(HearthError) where S.Element == (DocumentPath, StoredDocument) {
        guard judged else { return }
        try engine.gatheringMisses(docs) { (doc) throws(HearthError) in try judgeGet(doc.0, doc.1) }
    }

    /// For documents judged on a reader thread: the rules and identity to judge them with (nil: not judged).
    var offLoopJudge: OffLoopJudge? {
        guard judged, let rules = access.rules else { return nil }
        return OffLoopJudge(rules: rules, principal: session.principal, codec: engine.codec)
    }

    /// A write's `requestId` as the engine and the store know it. While rules are enforced it is kept within
    /// the identity that sent it: a retry is answered only to that identity (the answer holds what its write
    /// read and wrote: paths, times, transform results), and one identity's ID never stands for another's
    /// write. Anonymous connections have no identity to keep it in, so they cannot name writes then. Without
    /// rules every client has full access, and the ID is kept as sent.
    func scopedRequestID(_ id: String) throws(HearthError) -> String {
        guard access.enforcing else { return id }
        let uid: String
        switch session.principal {
        case .admin: return "a:" + id
        case .user(let auth, _): uid = auth.uid
        case .expired(let expired, _): uid = expired   // refused before it is used
        case .anonymous:
            throw HearthError(.unauthenticated, "field \"requestId\" names a write within its sender's identity: "
                + "send hello with a token first (rules are enforced)")
        }
        // A token's uid holds at most 128 bytes; a certificate's subject or an impersonated uid may be longer.
        guard uid.utf8.count <= Self.maxScopedUIDBytes else {
            throw HearthError.invalid("field \"requestId\" cannot be kept for a uid of \(uid.utf8.count) bytes "
                + "(at most \(Self.maxScopedUIDBytes))")
        }
        return "u\(uid.utf8.count):" + uid + id
    }

    /// The longest uid a `requestId` is kept within (the stored key then stays under 1 KiB).
    static let maxScopedUIDBytes = 512

    /// The reviewer of this request's commit, nil when it is not judged.
    func commitReviewer(nameWrites: Bool) -> ((CommitReview) throws(HearthError) -> Void)? {
        guard judged else { return nil }
        let access = self.access, principal = session.principal, engine = self.engine
        return { (review) throws(HearthError) in try access.review(principal, review, engine: engine, nameWrites: nameWrites) }
    }
}

/// Judges documents read on a reader thread as gets, against that thread's snapshot.
struct OffLoopJudge: Sendable {
    let rules: Rules
    let principal: Principal
    let codec: any DocumentCodec

    func get(_ path: DocumentPath, _ doc: StoredDocument?, snapshot: any StoreSnapshot) throws(HearthError) {
        let reader = SnapshotRuleReader(snapshot: snapshot, codec: codec)
        let fields = try AccessControl.resource(for: .get, doc, rules: rules, codec: codec)
        _ = try AccessControl.judge(rules: rules, principal, .get, what: "get of \(path)", path: path, resource: fields, reader: reader)
    }

    /// A query (query, count, aggregate, explain) as a `list`, judged from its own constraints; a rule's
    /// `get()` reads the snapshot the query runs at.
    func list(_ q: ValidQuery, snapshot: any StoreSnapshot) throws(HearthError) {
        let reader = SnapshotRuleReader(snapshot: snapshot, codec: codec)
        _ = try AccessControl.judge(rules: rules, principal, .list, what: Session.describe(q.asQuery), query: q.asQuery, reader: reader)
    }
}
