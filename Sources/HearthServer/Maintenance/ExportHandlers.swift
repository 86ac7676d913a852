import HearthModel
import HearthProtocol
import HearthStorage

/// `export`: every document of a scope (the database, a collection or a collection group), page by page, all
/// from one snapshot. The first page (no `seq`) pins a snapshot for the connection and answers at its seq;
/// each next page names that seq and the cursor `after` (the previous page's `next`); the page with
/// `next:null` is the last and releases the snapshot, as does closing the connection. Pages are read on a
/// reader thread and hold at most `limit` documents and about `pageBytes` of JSON, so neither the loop nor
/// the daemon's memory grows with the database. Admin only (it reads every document, past the rules).
enum ExportHandlers {
    static let defaultLimit: Int64 = 1000
    static let maxLimit: Int64 = 10_000
    /// A page stops growing past this many bytes of response (one document more at most).
    static let pageBytes = 4 << 20

    static let fields: Set<String> = ["collection", "collectionGroup", "seq", "after", "limit"]

    static func export(_ ctx: Context, _ req: Request) throws(HearthError) {
        let scope = try decodeScope(req)
        var after: DocumentPath?
        if let text = try req.optionalString("after") {
            do throws(HearthError) { after = try DocumentPath(parsing: text) } catch { throw .invalid("field \"after\": \(error.message)") }
        }
        let limit = Int(try req.optionalInt("limit", min: 1, max: maxLimit) ?? defaultLimit)
        let wanted = try req.optionalInt("seq", min: 0).map { UInt64($0) }
        if after != nil && wanted == nil {
            throw .invalid("field \"after\" needs \"seq\": a next page names the seq the first page answered with")
        }
        let session = ctx.session
        let server = ctx.server
        // A first page, or a seq other than the pinned one, lets the pinned snapshot go.
        var pinned = session.exportSnapshot
        if let p = pinned, wanted != p.seq {
            session.exportSnapshot = nil
            p.close()
            pinned = nil
        }
        let store = server.store
        let codec = server.engine.codec
        let id = req.id
        let outcome = ExportPage()
        outcome.snapshot = pinned
        let cursor = after
        let slot = session.beginOffLoopRead()
        server.offLoopReadStarted()
        server.readers.submit({
            var w = JSONWriter(capacity: 64 << 10)
            do throws(HearthError) {
                let snapshot: any StoreSnapshot
                if let p = outcome.snapshot { snapshot = p } else { snapshot = try store.snapshot() }
                outcome.snapshot = snapshot
                outcome.seq = snapshot.seq
                if let wanted, snapshot.seq != wanted {
                    if cursor == nil {
                        throw HearthError(.failedPrecondition, "the database is at seq \(snapshot.seq), not \(wanted): an export reads the latest state (a first page with \"seq\" only confirms it)")
                    }
                    throw HearthError(.failedPrecondition, "seq \(wanted) is not held by this connection (the database is at seq \(snapshot.seq)); an export's snapshot lives only on the connection that started it: start again without \"seq\"")
                }
                let docs = try snapshot.documents(in: scope, after: cursor, limit: limit)
                ResponseLine.beginOK(&w, id: id)
                w.key("seq"); w.uint(snapshot.seq)
                w.key("docs")
                w.beginArray()
                var last: DocumentPath?
                for d in docs {
                    try codec.verifyStored(d)
                    writeDocument(d, into: &w)
                    last = d.path
                    if w.count > pageBytes { break }
                }
                w.endArray()
                let more = last != nil && (docs.count == limit || last != docs.last?.path)
                w.key("next")
                if more, let last { w.string(last.description) } else { w.null() }
                ResponseLine.end(&w)
                outcome.more = more
            } catch {
                w = JSONWriter(capacity: 256)
                ResponseLine.error(&w, error.prefixed("export"), id: id)
                outcome.error = error
            }
            outcome.line = w.bytes
        }, done: {
            server.offLoopReadReturned()
            if let error = outcome.error, error.code == .dataLoss { server.engine.onDataLoss?(error) }
            // Pinned until the last page (or a failed one); a closed connection keeps nothing.
            if let snapshot = outcome.snapshot {
                if outcome.more && !session.closed {
                    session.exportSnapshot = snapshot
                } else {
                    if session.exportSnapshot === snapshot { session.exportSnapshot = nil }
                    snapshot.close()
                }
            }
            session.offLoopReadDone(slot, line: outcome.line, seq: outcome.seq)
        })
    }

    /// One exported document, as an export file's line holds it: `{path,data,createTime,updateTime}`.
    static func writeDocument(_ d: StoredDocument, into w: inout JSONWriter) {
        w.beginObject()
        w.key("path"); w.path(d.path.path)
        w.key("data"); w.raw(d.data)
        w.key("createTime"); w.rfc3339(d.createTime)
        w.key("updateTime"); w.rfc3339(d.updateTime)
        w.endObject()
    }

    static func decodeScope(_ req: Request) throws(HearthError) -> DocumentScope {
        let collection = try req.optionalString("collection")
        let group = try req.optionalString("collectionGroup")
        switch (collection, group) {
        case (.some, .some): throw .invalid("give \"collection\" or \"collectionGroup\", not both")
        case (.some, nil): return .collection(try req.collectionPath())
        case (nil, let g?):
            guard !g.isEmpty, !g.contains("/") else { throw .invalid("field \"collectionGroup\" must be a collection ID (no \"/\"), got \"\(g)\"") }
            return .collectionGroup(g)
        case (nil, nil): return .all
        }
    }
}

/// One export page's snapshot (pinned, or taken by the reader thread) and outcome, written on the reader thread before `done` runs on the loop.
final class ExportPage: @unchecked Sendable {
    var line: [UInt8] = []
    var snapshot: (any StoreSnapshot)?
    /// The snapshot's seq: the page goes out once it is published (it may hold a batch that has landed).
    var seq: UInt64 = 0
    var more = false
    var error: HearthError?
}
