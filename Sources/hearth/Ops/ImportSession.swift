import HearthProtocol

/// The commits of an import on one connection: up to a few in flight, answered in order. `durable` is the
/// count of document lines (from the file's start) whose batches, and every batch before them, are
/// acknowledged: what the checkpoint records.
struct ImportSession {
    struct Document {
        /// The path as the file holds it (a JSON string, quotes included).
        let path: [UInt8]
        /// The data as the file holds it (a JSON object).
        let data: [UInt8]
        /// The line of the file, for messages.
        let line: Int
    }

    private struct Batch {
        let id: Int
        let documents: [Document]
        let endsAt: Int
    }

    let client: BlockingClient
    let timeout: Double
    /// "set" (overwrite) or "create".
    let op: String
    /// Batches, from the first sent, whose ALREADY_EXISTS means "written before the interruption": in
    /// create mode after a resume, the batches that may have been in flight when the import stopped.
    var tolerantBatches = 0
    private var queue: [Batch] = []
    private var nextID = 0
    private(set) var durable: Int?
    private(set) var alreadyPresent = 0

    init(client: BlockingClient, timeout: Double, op: String) {
        self.client = client
        self.timeout = timeout
        self.op = op
    }

    var pending: Int { queue.count }

    mutating func send(_ documents: [Document], endsAt: Int) throws {
        nextID += 1
        try client.send(line: Self.commitLine(documents, op: op, id: nextID))
        queue.append(Batch(id: nextID, documents: documents, endsAt: endsAt))
    }

    /// Waits for the oldest batch's answer.
    mutating func receiveOne() throws {
        let batch = queue.removeFirst()
        let response = try answer()
        if response.ok {
            durable = batch.endsAt
        } else if response.errorCode == "ALREADY_EXISTS" && op == "create" && batch.id <= tolerantBatches {
            // Written (at least in part) before the interruption: every answer in flight first, then this
            // batch one document at a time, skipping the ones present.
            var later: [Batch] = []
            for b in queue {
                let r = try answer()
                if r.ok { later.append(b); continue }
                guard r.errorCode == "ALREADY_EXISTS" && b.id <= tolerantBatches else { throw failure(b, r) }
                later.append(Batch(id: -b.id, documents: b.documents, endsAt: b.endsAt))
            }
            queue.removeAll()
            try oneByOne(batch)
            for b in later where b.id < 0 { try oneByOne(b) }
            durable = later.last?.endsAt ?? batch.endsAt
        } else {
            throw failure(batch, response)
        }
    }

    private mutating func oneByOne(_ batch: Batch) throws {
        for d in batch.documents {
            nextID += 1
            try client.send(line: Self.commitLine([d], op: op, id: nextID))
            let r = try answer()
            if r.ok { continue }
            guard r.errorCode == "ALREADY_EXISTS" else { throw failure(Batch(id: nextID, documents: [d], endsAt: batch.endsAt), r) }
            alreadyPresent += 1
        }
    }

    private func answer() throws -> ServerResponse {
        while true {
            let r = ServerResponse(line: try client.readLine(timeout: timeout))
            if !r.isPush { return r }
        }
    }

    private func failure(_ b: Batch, _ r: ServerResponse) -> OpsError {
        let first = b.documents.first?.line ?? 0, last = b.documents.last?.line ?? 0
        let after = durable == nil
            ? "no batch of this run was confirmed written, though those sent after it may have been: with --mode overwrite run the same command again; in create mode, import what remains with --mode overwrite or start from a fresh target"
            : "documents before line \(first) are written; the checkpoint says where to --resume"
        return OpsError("the batch of lines \(first)-\(last) failed: \(r.errorCode): \(r.errorMessage) (\(after))")
    }

    static func commitLine(_ documents: [Document], op: String, id: Int) -> [UInt8] {
        var w = JSONWriter(capacity: 1024 + documents.reduce(0) { $0 + $1.data.count + $1.path.count + 40 })
        w.beginObject()
        w.key("op"); w.string("commit")
        w.key("id"); w.int(Int64(id))
        w.key("writes")
        w.beginArray()
        for d in documents {
            w.beginObject()
            w.key("op"); w.string(op)
            w.key("path"); w.raw(d.path)
            w.key("data"); w.raw(d.data)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
