import HearthEngine
import HearthModel
import HearthProtocol

extension Dispatcher {
    /// A pushed line: `{"sub":S,"type":"snapshot",...}` or `{"sub":S,"type":"error","error":{...}}`.
    func eventLine(_ event: ListenerEvent, sub: String?, shareKey: UInt64? = nil) -> [UInt8] {
        if let shareKey, shareKey == eventCacheKey, let sub {
            // The same change set for another listener: only the subscription id differs.
            writer.reset()
            writer.beginObject()
            writer.key("sub"); writer.string(sub)
            var line = writer.bytes          // {"sub":"…"
            line.append(44)                  // ,
            line.append(contentsOf: eventCacheBody)
            return line
        }
        writer.reset()
        writer.beginObject()
        if let sub { writer.key("sub"); writer.string(sub) }
        let bodyStart = writer.count
        switch event {
        case .query(let seq, let initial, let reset, let size, let changes):
            writer.key("type"); writer.string("snapshot")
            writer.key("seq"); writer.uint(seq)
            writer.key("initial"); writer.bool(initial)
            if reset { writer.key("reset"); writer.bool(true) }
            writer.key("size"); writer.int(Int64(size))
            writer.key("changes")
            writer.beginArray()
            for c in changes {
                writer.beginObject()
                writer.key("type"); writer.string(c.kind.rawValue)
                writer.key("doc"); DocumentJSON.write(c.document.stored, into: &writer)
                writer.key("oldIndex"); writer.int(Int64(c.oldIndex))
                writer.key("newIndex"); writer.int(Int64(c.newIndex))
                writer.endObject()
            }
            writer.endArray()
        case .document(let seq, let initial, let doc):
            writer.key("type"); writer.string("snapshot")
            writer.key("seq"); writer.uint(seq)
            writer.key("initial"); writer.bool(initial)
            writer.key("doc"); DocumentJSON.write(doc, into: &writer)
        case .error(let e):
            writer.key("type"); writer.string("error")
            writeErrorField(e)
        }
        writer.endObject()
        writer.newline()
        let line = writer.bytes
        if let shareKey, sub != nil {
            eventCacheKey = shareKey
            eventCacheBody = Array(line[(bodyStart + 1)...])   // after the comma that follows "sub"
        }
        return line
    }
}
