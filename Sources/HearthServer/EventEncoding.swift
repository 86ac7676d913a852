import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol

extension Dispatcher {
    /// Sends a pushed line on `conn`, encoded straight into its output buffer (no per-line array).
    func sendEvent(_ event: ListenerEvent, sub: String?, shareKey: UInt64? = nil, on conn: ClientConnection) {
        encodeEvent(event, sub: sub, shareKey: shareKey)
        writer.withBytes { conn.send($0) }
    }

    /// A listener's event: as `sendEvent`, with the start of its lines kept in the listener
    /// (`Listener.sinkBytes`, made on its first shared delivery), so a change set shared by many listeners
    /// costs each one two copies.
    func sendEvent(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?, on conn: ClientConnection) {
        guard let shareKey, shareKey == eventCacheKey else {
            return sendEvent(event, sub: listener.tag, shareKey: shareKey, on: conn)
        }
        if listener.sinkBytes.isEmpty { listener.sinkBytes = subscriptionPrefix(listener.tag) }
        listener.sinkBytes.withUnsafeBytes { p in eventCacheBody.withUnsafeBytes { conn.send(p, $0) } }
    }

    /// `{"sub":"<tag>"`: what starts every line pushed for the subscription `tag`.
    private func subscriptionPrefix(_ tag: String) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("sub"); w.string(tag)
        return w.bytes
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
