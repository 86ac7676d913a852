import HearthModel
import HearthProtocol
import HearthStorage

/// Point reads of durable documents.
enum ReadHandlers {
    /// Most paths one `getAll` may ask for.
    static let maxGetAll = 1000
    /// Most paths one `getAll` reads on the loop thread (through the document cache); more go to a reader.
    static let loopGetAll = 64

    static func get(_ ctx: Context, _ req: Request) throws(HearthError) {
        let path = try req.documentPath()
        let doc = try ctx.engine.get(path)
        try ctx.judgeGet(path, doc)
        ctx.reply(req) { w in
            w.key("doc")
            DocumentJSON.write(doc, into: &w)
        }
    }

    static func getAll(_ ctx: Context, _ req: Request) throws(HearthError) {
        let list = try req.array("paths")
        let count = list.count
        guard count <= maxGetAll else { throw .invalid("field \"paths\" holds at most \(maxGetAll) paths (got \(count))") }
        var paths: [DocumentPath] = []
        paths.reserveCapacity(count)
        for (index, el) in list.elements.enumerated() {
            guard el.kind == .string else {
                throw .invalid("paths[\(index)] must be a string, not \(el.kind.article)")
            }
            do { paths.append(try DocumentPath(parsing: el.string!)) } catch {
                throw .invalid("paths[\(index)]: \(error.message)")
            }
        }
        if paths.count > loopGetAll {
            // Many documents: read them on a reader thread, all from one snapshot.
            let wanted = paths
            let judge = ctx.offLoopJudge
            ctx.readOffLoop(req) { snapshot, w throws(HearthError) in
                var docs: [StoredDocument?] = []
                docs.reserveCapacity(wanted.count)
                for p in wanted { docs.append(try snapshot.get(p)) }
                if let judge { for (p, d) in zip(wanted, docs) { try judge.get(p, d, snapshot: snapshot) } }
                w.key("docs")
                w.beginArray()
                for d in docs { DocumentJSON.write(d, into: &w) }
                w.endArray()
            }
            return
        }
        var docs: [StoredDocument?] = []
        docs.reserveCapacity(paths.count)
        for p in paths { docs.append(try ctx.engine.get(p)) }
        for (p, d) in zip(paths, docs) { try ctx.judgeGet(p, d) }
        ctx.reply(req) { w in
            w.key("docs")
            w.beginArray()
            for d in docs { DocumentJSON.write(d, into: &w) }
            w.endArray()
        }
    }
}

/// Writes documents in the wire form: `{"path","id","data","createTime","updateTime"}`, splicing the stored
/// JSON of the fields without re-encoding.
///
/// Splicing is safe because no unverified bytes reach it: every document comes from the engine, which either
/// encoded it itself or read it from the store, and a document read from the store has passed the store's
/// checksum and `JSONDocumentCodec.verify` (one JSON object, valid UTF-8, no raw line break) before the
/// engine returns or caches it (a damaged one is answered with DATA_LOSS instead). Debug builds check it.
enum DocumentJSON {
    static func write(_ doc: StoredDocument?, fields: MapValue? = nil, into w: inout JSONWriter) {
        guard let doc else { w.null(); return }
        assert(fields != nil || (try? FieldsJSON().verifyStored(doc.data)) != nil, "unverified bytes of \(doc.path) reached a response")
        w.beginObject()
        w.key("path"); w.string(doc.path.description)
        w.key("id"); w.string(doc.path.id)
        w.key("data")
        if let fields { w.fields(fields) } else { w.raw(doc.data) }
        w.key("createTime"); w.string(doc.createTime.rfc3339)
        w.key("updateTime"); w.string(doc.updateTime.rfc3339)
        w.endObject()
    }
}
