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
        if let shareKey, sendShared(shareKey, for: listener, on: conn) { return }
        sendEvent(event, sub: listener.tag, shareKey: shareKey, on: conn)
    }

    /// Sends the listener's line for the shared change set `shareKey` when its encoding is the one held: the
    /// listener's prefix, then those bytes. False (nothing sent) otherwise.
    func sendShared(_ shareKey: UInt64, for listener: Listener, on conn: ClientConnection) -> Bool {
        guard shareKey == eventCacheKey else { return false }
        conn.send(listener.sinkBytes(orMake: { subscriptionPrefix(listener.tag) }), eventCacheBody.bytes)
        return true
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
        let bodyStart = Self.encode(event, sub: sub, into: &writer)
        if let shareKey, sub != nil {
            eventCacheKey = shareKey
            writer.withBytes { eventCacheBody.set(UnsafeRawBufferPointer(rebasing: $0[bodyStart...])) }   // from the comma after "sub"
        }
    }

    /// The line, written through one access to the writer (a stored property of this class is checked for
    /// exclusive access on every use); returns where the part after the subscription id starts.
    private static func encode(_ event: ListenerEvent, sub: String?, into writer: inout JSONWriter) -> Int {
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
            ResponseLine.errorField(&writer, e)
        }
        writer.endObject()
        writer.newline()
        return bodyStart
    }
}

/// A query listener's initial snapshot line, encoded on the reader thread that read its rows, so a large
/// first snapshot costs the loop a copy, not its encoding. The bytes are those `Dispatcher.sendEvent` writes
/// for `.query(seq, initial: true, reset: false, size: rows.count, changes: all added)`; the loop sends them
/// at the seq the listener is registered at, which may be later than the one they were read at.
struct InitialSnapshotLine: Sendable {
    let bytes: [UInt8]
    /// The seq written in `bytes`, and where its digits are.
    let seq: UInt64
    let seqDigits: Range<Int>

    init(sub: String, seq: UInt64, rows: [ResultDocument]) {
        var w = JSONWriter(capacity: 256 + rows.count * 256)
        w.beginObject()
        w.key("sub"); w.string(sub)
        w.key("type"); w.string("snapshot")
        w.key("seq")
        let start = w.count
        w.uint(seq)
        let end = w.count
        w.key("initial"); w.bool(true)
        w.key("size"); w.int(Int64(rows.count))
        w.key("changes")
        w.beginArray()
        for (i, r) in rows.enumerated() {
            w.beginObject()
            w.key("type"); w.string(ViewChange.Kind.added.rawValue)
            w.key("doc"); DocumentJSON.write(r.stored, into: &w)
            w.key("oldIndex"); w.int(-1)
            w.key("newIndex"); w.int(Int64(i))
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.newline()
        self.bytes = w.bytes
        self.seq = seq
        self.seqDigits = start..<end
    }

    /// Sends the line as of `seq` (the digits replaced when it differs).
    func send(at seq: UInt64, on conn: ClientConnection) {
        guard seq != self.seq else { return conn.send(bytes) }
        var head = Array(bytes[..<seqDigits.lowerBound])
        head.append(contentsOf: String(seq).utf8)
        head.withUnsafeBytes { h in
            bytes.withUnsafeBytes { b in conn.send(h, UnsafeRawBufferPointer(rebasing: b[seqDigits.upperBound...])) }
        }
    }
}
