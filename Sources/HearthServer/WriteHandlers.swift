import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// Ops that commit. Each validates and applies its writes at once (errors answered in order) and answers
/// when the commit is durable.
enum WriteHandlers {
    /// `create`, `set`, `update`, `delete`: one write, answered with
    /// `{"path","docId","updateTime","seq"[,"transformResults"]}`.
    static func single(_ kind: Write.Kind) -> @Sendable (Context, Request) throws(HearthError) -> Void {
        return { ctx, req throws(HearthError) in
            let write = try WriteDecoding.decode(kind: kind, req.body)
            try submit(ctx, req, [write]) { w, outcome in
                let r = outcome.results[0]
                writeSingleResult(r, seq: outcome.seq, into: &w)
            }
        }
    }

    /// `add`: a create under a new 20-character ID; `{"$documentId":true}` in data stores that ID.
    static func add(_ ctx: Context, _ req: Request) throws(HearthError) {
        let collection = try req.collectionPath()
        let path = try collection.document(DocumentID.random())
        let data = try req.object("data")
        let d = try WriteDataDecoder.decode(data, mode: .set, document: path)
        let write = Write(kind: .create, path: path, operation: .update(fields: d.fields, mask: nil),
                          transforms: d.transforms, precondition: .exists(false))
        try submit(ctx, req, [write]) { w, outcome in
            writeSingleResult(outcome.results[0], seq: outcome.seq, into: &w)
        }
    }

    /// `commit`: all writes or none, one seq; the message of a failed write names its index.
    static func commit(_ ctx: Context, _ req: Request) throws(HearthError) {
        let list = try req.array("writes")
        let count = list.count
        if count == 0 { throw .invalid("field \"writes\" must not be empty") }
        guard count <= Limits.maxWritesPerCommit else {
            throw .invalid("field \"writes\" holds at most \(Limits.maxWritesPerCommit) writes (got \(count))")
        }
        var writes: [Write] = []
        writes.reserveCapacity(count)
        for (i, el) in list.elements.enumerated() {
            let prefix = "writes[\(i)]"
            guard el.kind == .object else { throw .invalid("\(prefix) must be an object") }
            guard let opRef = el["op"], opRef.kind == .string, let kind = Write.Kind(rawValue: opRef.string!) else {
                throw .invalid("\(prefix): field \"op\" must be one of set, create, update, delete, verify")
            }
            for member in el.members where member.key != "op" && !CommandTable.writeFields.contains(member.key) {
                throw .invalid("\(prefix): unknown field \"\(member.key)\"")
            }
            writes.append(try WriteDecoding.decode(kind: kind, el, where: prefix))
        }
        try submit(ctx, req, writes, nameIndexes: true) { w, outcome in
            w.key("seq"); w.uint(outcome.seq)
            w.key("commitTime"); w.rfc3339(outcome.commitTime)
            w.key("results")
            w.beginArray()
            for r in outcome.results {
                w.beginObject()
                w.key("path"); w.path(r.path.path)
                w.key("id"); w.string(r.path.id)
                w.key("updateTime"); w.rfc3339(r.updateTime)
                if !r.transformResults.isEmpty { transformResults(r.transformResults, into: &w) }
                w.endObject()
            }
            w.endArray()
        }
    }

    static func writeSingleResult(_ r: WriteResult, seq: UInt64, into w: inout JSONWriter) {
        w.key("path"); w.path(r.path.path)
        w.key("docId"); w.string(r.path.id)
        w.key("updateTime"); w.rfc3339(r.updateTime)
        w.key("seq"); w.uint(seq)
        if !r.transformResults.isEmpty { transformResults(r.transformResults, into: &w) }
    }

    static func transformResults(_ values: [Value], into w: inout JSONWriter) {
        w.key("transformResults")
        w.beginArray()
        for v in values { w.value(v) }
        w.endArray()
    }

    /// Hands the writes to the engine and arranges the in-order response once durable. Where the store is
    /// across the network, or the write is large (`Engine.readsFirst`), what the engine must read first
    /// (documents it does not hold, a request ID) is read on a reader thread (`Session.readForWrite`), and the
    /// write goes on once that is back.
    private static func submit(_ ctx: Context, _ req: Request, _ writes: [Write], nameIndexes: Bool = false,
                               _ fields: @escaping (inout JSONWriter, CommitOutcome) -> Void) throws(HearthError) {
        let requestID = try requestID(req).map { (id) throws(HearthError) in try ctx.scopedRequestID(id) }
        let write = PreparedWrite(writes: writes, nameIndexes: nameIndexes, requestID: requestID, id: req.id, op: req.op,
                                  review: ctx.commitReviewer(nameWrites: nameIndexes), timing: ctx.deferTiming(),
                                  forwarded: ctx.session.answeringForward, fields: fields)
        if let reads = ctx.engine.readsFirst(for: writes, requestID: requestID) {
            ctx.session.readForWrite(reads, then: write)
            return
        }
        do {
            try write.run(on: ctx.session)
        } catch {
            switch write.next(after: error, engine: ctx.engine) {
            case .refuse(let e): ctx.session.refuseWrite(write, e)
            case .read(let next, let reads): ctx.session.readForWrite(reads, then: next)
            }
        }
    }
}

/// A write decoded and judged on the loop, ready for the engine (`run`), at once or once what it must read
/// has been read off the loop.
struct PreparedWrite {
    let writes: [Write]
    let nameIndexes: Bool
    let requestID: String?
    let id: [UInt8]?
    let op: String
    /// The rules' review, made with the identity the write was sent as.
    let review: ((CommitReview) throws(HearthError) -> Void)?
    let timing: RequestTiming
    /// A line a follower forwarded: a refusal of it names the seq it was decided at (`Session.refuseWrite`).
    let forwarded: Bool
    let fields: (inout JSONWriter, CommitOutcome) -> Void
    /// Documents earlier runs missed (`Engine+WriteReads.swift`; a rule's `get()`), read with its own, and
    /// how many runs missed.
    var missed = MissedReads()

    enum Next {
        case refuse(HearthError)
        /// Run `write` once `reads` are back.
        case read(PreparedWrite, WriteReads)
    }

    /// After `run` threw `error`: when the engine missed what only the store across the network holds (a
    /// document a rule read, one a publication changed since it was read, the request ID), read it with the
    /// rest and run again; else refuse with `error`.
    func next(after error: HearthError, engine: Engine) -> Next {
        switch missed.next(engine, reads: { m, _ in engine.readsNeeded(for: writes, requestID: requestID, also: m.paths) }) {
        case .stands: return .refuse(error)
        case .refused(let refusal): return .refuse(refusal)
        case .again(let m, let reads):
            var again = self
            again.missed = m
            return .read(again, reads)
        }
    }

    /// Commits, with the in-order response once durable. With `requestId`, a write whose commit is already
    /// durable is answered with that commit's answer (and `"duplicate":true`) instead of being applied again,
    /// once its seq is published here; one still pending gets the same when it lands.
    func run(on session: Session) throws(HearthError) {
        let server = session.server
        let dispatcher = server.dispatcher
        let id = self.id, op = self.op, timing = self.timing, fields = self.fields
        if let requestID, let earlier = try server.engine.committedRequest(requestID) {
            let line = dispatcher.okLine(id) { w in
                fields(&w, earlier)
                w.key("duplicate"); w.bool(true)
            }
            server.requestFinished(timing, failed: false, id: id, session: session)
            session.offLoopReadDone(session.beginOffLoopRead(), line: line, seq: earlier.seq)
            return
        }
        var slot: ResponseQueue.Slot?
        // Strong: a weak reference would give every Session a side table and make each retain/release of it
        // take the slow path (the listener fan-out retains the session once per delivery). The closure lives
        // only until the commit is durable; a closed session ignores the response.
        try server.engine.commit(writes, nameIndexes: nameIndexes, requestID: requestID, review: review) { [session] result in
            guard let slot else { return }
            let line: [UInt8]
            var failed = false
            switch result {
            case .success(let outcome):
                line = dispatcher.okLine(id) { w in
                    fields(&w, outcome)
                    if outcome.duplicate { w.key("duplicate"); w.bool(true) }
                }
            case .failure(let error): line = dispatcher.errorLine(error.prefixed(op), id: id); failed = true
            }
            server.requestFinished(timing, failed: failed, id: id, session: session)
            session.endWrite(slot, response: line)
        }
        slot = session.beginWrite()
    }
}

extension WriteHandlers {
    /// A write's optional `requestId`: 1 to 128 bytes naming it, so a retry is answered rather than applied
    /// twice (docs/protocol.md, "Retrying a write").
    static func requestID(_ req: Request) throws(HearthError) -> String? {
        guard let text = try req.optionalString("requestId") else { return nil }
        guard !text.isEmpty, text.utf8.count <= CommitRequest.maxIDBytes else {
            throw .invalid("field \"requestId\" must be 1 to \(CommitRequest.maxIDBytes) bytes, got \(text.utf8.count)")
        }
        return text
    }
}

/// Document IDs the server picks: 20 characters from [A-Za-z0-9] (about 119 bits), as Firestore's.
enum DocumentID {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    static func random() -> String {
        var rng = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 20)
        for i in 0..<20 { bytes[i] = alphabet[Int(rng.next(upperBound: UInt64(alphabet.count)))] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
