import HearthEngine
import HearthModel
import HearthProtocol
import HearthRules

/// `hello` (connection options and identity) and `rules` (the admin's reload and status).
enum AuthHandlers {
    /// `{op:"hello"[,token|adminKey][,as][,heartbeatMs][,minSeq]}`: sets heartbeats and who the connection speaks for.
    /// A token is verified (UNAUTHENTICATED with why when it is not); the admin key bypasses rules, and with
    /// `as` the admin speaks as a given user (`{"uid","token":{claims}}`) or as nobody (`null`), which is how
    /// `hearth rules test` tries rules. A hello again on the same connection replaces the identity (token
    /// refresh) and judges its listeners again.
    static func hello(_ ctx: Context, _ req: Request) throws(HearthError) {
        let token = try req.optionalString("token"), key = try req.optionalString("adminKey")
        if token != nil && key != nil { throw .invalid("give either \"token\" or \"adminKey\", not both") }
        let actAs = req.body["as"]       // null is meaningful here: speak as nobody
        if actAs != nil && key == nil { throw .invalid("field \"as\" needs \"adminKey\" (only the admin may speak as another user)") }
        let heartbeat = try ListenHandlers.heartbeatMs(req)
        var principal: Principal?
        if token != nil || key != nil {
            let access = ctx.access, now = ctx.server.loop.now
            let address = peerAddress(ctx.session.conn.peer)
            if let waitMs = access.throttle.refusal(address, now: now) {
                throw HearthError(.resourceExhausted, "too many failed hello attempts from \(address) (at most \(access.throttle.limit) a minute, --max-auth-failures); try again in \((waitMs + 999) / 1000) s")
            }
            let result = token.map { access.authenticate(token: $0, now: Engine.wallClockMicros() / 1_000_000) }
                ?? access.authenticate(adminKey: key!)
            switch result {
            case .success(let p):
                principal = try actAs.map { (a) throws(HearthError) in try impersonated(a) } ?? p
            case .failure(let e):
                access.throttle.failed(address, now: now)
                let tripped = access.throttle.refusal(address, now: now) != nil
                if tripped {
                    ctx.server.helloRefusals.note("hello from \(ctx.session.conn.peer) refused: \(e.message); \(address) reached \(access.throttle.limit) failures in a minute and its hellos are refused for a while")
                } else {
                    ctx.server.helloRefusals.note("hello from \(ctx.session.conn.peer) refused: \(e.message)")
                }
                throw e
            }
        }
        // Read-your-writes across nodes: the answer (and every line after it) waits until this node has
        // published `minSeq`, a seq the client saw elsewhere.
        let minSeq = try req.optionalInt("minSeq").map { UInt64($0) }
        let history = HistoryToken.encode(ctx.engine.historyID)
        if let minSeq, minSeq > ctx.engine.lastDurableSeq {
            return helloAfterCheck(ctx, req, minSeq: minSeq, heartbeat: heartbeat, principal: principal, history: history)
        }
        if let heartbeat { ctx.session.setHeartbeat(heartbeat) }
        ctx.reply(req) { w in writeHello(seq: ctx.engine.lastDurableSeq, history: history, principal: principal, into: &w) }
        if let principal { ctx.session.authenticated(as: principal) }
    }

    /// A hello whose `minSeq` this node has not published: a reader checks that the database holds it (the
    /// store may be across the network); then the hello takes effect and is answered once this node has
    /// published it, or is refused and changes nothing. The lines after it wait meanwhile.
    private static func helloAfterCheck(_ ctx: Context, _ req: Request, minSeq: UInt64, heartbeat: UInt64?,
                                        principal: Principal?, history: String) {
        let session = ctx.session, server = ctx.server, dispatcher = ctx.dispatcher, id = req.id
        let timing = ctx.deferTiming()
        let slot = session.beginOffLoopRead()
        let store = server.store
        server.onReader({ () throws(HearthError) in
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            return snapshot.seq
        }, done: { stored in
            var refusal: HearthError?
            switch stored {
            case .failure(let error): refusal = error
            case .success(let seq) where minSeq > seq:
                refusal = HearthError(.failedPrecondition, "minSeq \(minSeq) is beyond the database's last seq \(seq) (a seq from another database, or one restored since)")
            case .success: break
            }
            server.requestFinished(timing, failed: refusal != nil, id: id, session: session)
            if let refusal {
                return session.offLoopReadDone(slot, line: dispatcher.errorLine(refusal.prefixed("hello"), id: id), seq: 0)
            }
            if !session.closed {
                if let heartbeat { session.setHeartbeat(heartbeat) }
                if let principal { session.authenticated(as: principal) }
            }
            let line = dispatcher.okLine(id) { w in writeHello(seq: minSeq, history: history, principal: principal, into: &w) }
            session.offLoopReadDone(slot, line: line, seq: minSeq)
        })
    }

    /// A hello's answer fields.
    static func writeHello(seq: UInt64, history: String, principal: Principal?, into w: inout JSONWriter) {
        w.key("version"); w.string(HearthVersion.string)
        w.key("seq"); w.uint(seq)
        w.key("history"); w.string(history)
        if let principal { writeAuth(principal, into: &w) }
    }

    /// `"auth":{"uid","admin","expiresAt"}` as a hello answers it.
    static func writeAuth(_ p: Principal, into w: inout JSONWriter) {
        w.key("auth")
        w.beginObject()
        switch p {
        case .user(let a, let exp):
            w.key("uid"); w.string(a.uid)
            w.key("admin"); w.bool(false)
            if let exp { w.key("expiresAt"); w.int(exp) }
        case .admin:
            w.key("admin"); w.bool(true)
        case .anonymous, .expired:
            w.key("uid"); w.null()
            w.key("admin"); w.bool(false)
        }
        w.endObject()
    }

    /// The identity an admin speaks as: `null` (unauthenticated) or `{"uid":"alice","token":{...claims}}`.
    static func impersonated(_ a: JSONRef) throws(HearthError) -> Principal {
        if a.kind == .null { return .anonymous }
        guard a.kind == .object else { throw .invalid("field \"as\" must be null or {\"uid\":\"...\",\"token\":{claims}}") }
        for m in a.members where m.key != "uid" && m.key != "token" {
            throw .invalid("as: unknown field \"\(m.key)\" (allowed: uid, token)")
        }
        guard let uid = a["uid"], uid.kind == .string, let u = uid.string, !u.isEmpty else {
            throw .invalid("as: field \"uid\" must be a non-empty string")
        }
        var claims = MapValue()
        if let t = a["token"] {
            guard t.kind == .object else { throw .invalid("as: field \"token\" must be an object of claims") }
            guard case .map(let m) = plainValue(t) else { throw .invalid("as: field \"token\" must be an object of claims") }
            claims = m
        }
        if claims["sub"] == nil { claims["sub"] = .string(u) }
        return .user(RuleAuth(uid: u, token: claims), expiresAt: nil)
    }

    /// Plain JSON as a value: numbers as integers when whole and in range, objects as maps.
    static func plainValue(_ r: JSONRef) -> Value {
        switch r.kind {
        case .null: return .null
        case .bool: return .bool(r.bool!)
        case .int: return r.int64.map(Value.int) ?? .double(r.double ?? 0)
        case .double: return .double(r.double!)
        case .string: return .string(r.string!)
        case .array: return .array(r.elements.map(plainValue))
        case .object: return .map(MapValue(r.members.map { MapValue.Field(key: $0.key, value: plainValue($0.value)) }))
        }
    }

    /// `{op:"rules",action:"reload"|"status"}` (admin): re-reads the rules file, or says which rules are in
    /// force. A file that does not load leaves the rules in force, and the error names its line and column.
    static func rules(_ ctx: Context, _ req: Request) throws(HearthError) {
        let action = try req.string("action")
        switch action {
        case "reload":
            let summary: String
            do { summary = try ctx.server.reloadRules() } catch {
                ctx.server.logger.warn("rules op from \(ctx.session.conn.peer): could not reload the rules, keeping the previous ones: \(error.message)")
                throw error
            }
            ctx.server.logger.info("rules op from \(ctx.session.conn.peer): reloaded rules: \(summary)")
            ctx.reply(req) { w in w.key("rules"); w.string(summary) }
        case "status":
            let access = ctx.access
            ctx.reply(req) { w in
                w.key("enforcing"); w.bool(access.enforcing)
                w.key("rules"); w.string(access.rulesSummary)
                w.key("guardedListeners"); w.int(Int64(ctx.server.listenerAccess.count))
            }
        default:
            throw .invalid("field \"action\" must be \"reload\" or \"status\" (got \"\(action)\")")
        }
    }
}
