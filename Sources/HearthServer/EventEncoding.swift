import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol

extension Dispatcher {
    /// Sends a pushed line on `conn`, encoded straight into its output buffer (no per-line array).
    func sendEvent(_ event: ListenerEvent, sub: String?, shareKey: UInt64? = nil, on conn: ClientConnection) {
        if let shareKey, shareKey == eventCacheKey, let sub {
            // The same change set for another listener: only the subscription id differs.
            writer.reset()
            writer.beginObject()
            writer.key("sub"); writer.string(sub)
            writer.withBytes { conn.send($0) }                  // {"sub":"…"
            eventCacheBody.withUnsafeBytes { conn.send($0) }    // ,"type":…}\n
            return
        }
        encodeEvent(event, sub: sub, shareKey: shareKey)
        writer.withBytes { conn.send($0) }
    }

    /// A pushed line: `{"sub":S,"type":"snapshot",...}` or `{"sub":S,"type":"error","error":{...}}`.
    func eventLine(_ event: ListenerEvent, sub: String?) -> [UInt8] {
        encodeEvent(event, sub: sub, shareKey: nil)
        return writer.bytes
    }

    /// Encodes an event into `writer`; with a `shareKey`, keeps the bytes after the subscription id for the
    /// next listener of the same change set.
    private func encodeEvent(_ event: ListenerEvent, sub: String?, shareKey: UInt64?) {
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
        case .document(let seq, let initial, let reset, let doc):
            writer.key("type"); writer.string("snapshot")
            writer.key("seq"); writer.uint(seq)
            writer.key("initial"); writer.bool(initial)
            if reset { writer.key("reset"); writer.bool(true) }
            writer.key("doc"); DocumentJSON.write(doc, into: &writer)
        case .error(let e):
            writer.key("type"); writer.string("error")
            writeErrorField(e)
        }
        writer.endObject()
        writer.newline()
        if let shareKey, sub != nil {
            eventCacheKey = shareKey
            eventCacheBody = Array(writer.bytes[bodyStart...])   // from the comma that follows "sub"
        }
    }
}
