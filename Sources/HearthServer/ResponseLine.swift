import HearthModel
import HearthProtocol

/// The shape of every response line, `{"id":..,"ok":true,...}` or `{"id":..,"ok":false,"error":{code,message}}`,
/// written into any `JSONWriter`: the dispatcher's on the loop thread, or a reader thread's own.
enum ResponseLine {
    /// Starts `{"id":..,"ok":true` (fields follow; close with `end`).
    static func beginOK(_ w: inout JSONWriter, id: [UInt8]?) {
        w.reset()
        w.beginObject()
        if let id { w.key("id"); w.raw(id) }
        w.key("ok"); w.bool(true)
    }

    /// Closes the object and the line.
    static func end(_ w: inout JSONWriter) {
        w.endObject()
        w.newline()
    }

    /// A whole error line.
    /// `seq`: the published seq a refusal was decided at, on an answer to a line a follower forwarded (the
    /// follower answers its client once it has published that seq too).
    static func error(_ w: inout JSONWriter, _ error: HearthError, id: [UInt8]?, seq: UInt64? = nil) {
        w.reset()
        w.beginObject()
        if let id { w.key("id"); w.raw(id) }
        w.key("ok"); w.bool(false)
        errorField(&w, error)
        if let seq { w.key("seq"); w.uint(seq) }
        end(&w)
    }

    /// `"error":{"code":...,"message":...}`, as responses and pushed error lines carry it.
    static func errorField(_ w: inout JSONWriter, _ error: HearthError) {
        w.key("error")
        w.beginObject()
        w.key("code"); w.string(error.code.rawValue)
        w.key("message"); w.string(error.message)
        w.endObject()
    }
}
