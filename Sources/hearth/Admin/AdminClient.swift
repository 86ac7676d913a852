import HearthProtocol

/// An error response from the daemon to an admin command (exit 1).
struct ServerRefused: Error, CustomStringConvertible {
    let code: String
    let message: String
    var description: String { "\(code): \(message)" }
}

/// A connection for the admin commands: sends requests with increasing ids and waits for their responses,
/// handing pushed lines (progress) to a callback.
final class AdminClient {
    let client: BlockingClient
    let timeout: Double
    private var nextID = 1

    init(_ options: ConnectionOptions) throws {
        client = try options.connect()
        timeout = options.timeout
    }

    /// Sends `{op, id, fields...}` and returns the ok response; an error response throws `ServerRefused`.
    /// `timeout` nil: the connection's; pushed lines go to `onPush`.
    func call(_ op: String, timeout: Double? = nil, _ fields: (inout JSONWriter) -> Void = { _ in }) throws -> ServerResponse {
        try call(op, timeout: timeout, onPush: { _ in }, fields)
    }

    func call(_ op: String, timeout: Double?, onPush: (ServerResponse) -> Void,
              _ fields: (inout JSONWriter) -> Void) throws -> ServerResponse {
        let id = nextID
        nextID += 1
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string(op)
        w.key("id"); w.int(Int64(id))
        fields(&w)
        w.endObject()
        try client.send(line: w.bytes)
        while true {
            let response = ServerResponse(line: try client.readLine(timeout: timeout ?? self.timeout))
            if response.isPush { onPush(response); continue }
            guard response.ok else { throw ServerRefused(code: response.errorCode, message: response.errorMessage) }
            return response
        }
    }
}
