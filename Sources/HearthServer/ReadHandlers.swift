import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// Point reads of durable documents.
enum ReadHandlers {
    /// Most paths one `getAll` may ask for.
    static let maxGetAll = 1000
    /// Most paths one `getAll` answers on the loop thread (all from the document cache); more go to a reader.
    static let loopGetAll = 64

    static func get(_ ctx: Context, _ req: Request) throws(HearthError) {
        let path = try req.documentPath()
        // A cached document is answered here: a hop to a reader would cost more than the read (see
        // docs/benchmarks.md). Any other goes to a reader.
        if let (doc, rendering) = ctx.engine.cachedDocument(path, render: DocumentJSON.rendering) {
            ctx.engine.noteCacheHits(1)
            try ctx.judgeGet(path, doc)
            ctx.reply(req) { w in
                w.key("doc")
                DocumentJSON.write(doc, rendering, into: &w)
            }
            return
        }
        ctx.readOnReader(req, reparsing: false) { r, w throws(HearthError) in
            let docs = try read([path], r)
            w.key("doc")
            DocumentJSON.write(docs[0], into: &w)
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
        // Few documents, all cached: answered here. Others are read on a reader thread, all from one snapshot.
        var cached: [(doc: StoredDocument, rendering: DocumentRendering)] = []
        if paths.count <= loopGetAll {
            cached.reserveCapacity(paths.count)
            for p in paths {
                guard let hit = ctx.engine.cachedDocument(p, render: DocumentJSON.rendering) else { break }
                cached.append(hit)
            }
        }
        guard cached.count == paths.count else {
            let wanted = paths
            ctx.readOnReader(req, reparsing: false) { r, w throws(HearthError) in
                let docs = try read(wanted, r)
                w.key("docs")
                w.beginArray()
                for d in docs { DocumentJSON.write(d, into: &w) }
                w.endArray()
            }
            return
        }
        ctx.engine.noteCacheHits(cached.count)
        try ctx.judgeGets(zip(paths, cached.map(\.doc)))
        ctx.reply(req) { w in
            w.key("docs")
            w.beginArray()
            for d in cached { DocumentJSON.write(d.doc, d.rendering, into: &w) }
            w.endArray()
        }
    }

    /// Reads `paths` at the reader's snapshot (from the document cache when it holds that version, else from
    /// the snapshot, verified and offered to the cache; a damaged one fails the read with DATA_LOSS) and
    /// judges each as a get.
    static func read(_ paths: [DocumentPath], _ r: ReaderScope) throws(HearthError) -> [StoredDocument?] {
        let snapshot = try r.snapshot
        let seq = snapshot.seq
        var docs = r.cache.documents(paths, at: seq)
        for (i, p) in paths.enumerated() where docs[i] == nil {
            guard let doc = try snapshot.get(p) else { continue }
            try r.codec.verifyStored(doc)
            r.cache.offer(doc, readAt: seq)
            docs[i] = doc
        }
        if let judge = r.judge { for (p, d) in zip(paths, docs) { try judge.get(p, d, snapshot: snapshot) } }
        return docs
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
        w.key("path"); w.path(doc.path.path)
        w.key("id"); w.string(doc.path.id)
        w.key("data")
        if let fields { w.fields(fields) } else { w.raw(doc.data) }
        w.key("createTime"); w.rfc3339(doc.createTime)
        w.key("updateTime"); w.rfc3339(doc.updateTime)
        w.endObject()
    }

    /// A verified document's wire form (what `write` writes) as the document cache keeps it: around its data,
    /// `{"path":…,"id":…,"data":` then `,"createTime":…,"updateTime":…}`.
    static func rendering(_ doc: StoredDocument) -> DocumentRendering {
        assert((try? FieldsJSON().verifyStored(doc.data)) != nil, "unverified bytes of \(doc.path) reached a rendering")
        var w = JSONWriter(capacity: 192)
        w.beginObject()
        w.key("path"); w.path(doc.path.path)
        w.key("id"); w.string(doc.path.id)
        w.key("data")
        let head = w.count
        w.raw(UnsafeRawBufferPointer(start: nil, count: 0))   // the data goes here
        w.key("createTime"); w.rfc3339(doc.createTime)
        w.key("updateTime"); w.rfc3339(doc.updateTime)
        w.endObject()
        return DocumentRendering(bytes: w.bytes, headCount: head)
    }

    /// Writes a rendered document as one value.
    static func write(_ parts: RenderedParts, into w: inout JSONWriter) {
        w.raw(parts.head)
        w.appendRaw(parts.data)
        w.appendRaw(parts.tail)
    }

    /// Writes `doc` from its rendering.
    static func write(_ doc: StoredDocument, _ rendering: DocumentRendering, into w: inout JSONWriter) {
        rendering.withParts(around: doc.data) { parts in write(parts, into: &w) }
    }
}
