import HearthProtocol

/// One line received from the daemon, parsed with the daemon's own JSON parser. A response carries `ok`;
/// a pushed line (listen updates) carries `type` and never `ok`.
final class ServerResponse {
    let line: [UInt8]
    private let parser = JSONParser()
    /// The parsed object; nil when the line is not a JSON object. Valid as long as this response lives.
    let root: JSONRef?

    init(line: [UInt8]) {
        self.line = line
        let parsed = try? parser.parse(line)
        root = parsed?.isObject == true ? parsed : nil
    }

    var text: String { String(decoding: line, as: UTF8.self) }

    /// True for a pushed line: an object with `type` and without `ok`.
    var isPush: Bool { root.map { $0["ok"] == nil && $0["type"] != nil } ?? false }

    /// True for `"ok":true`.
    var ok: Bool { root?["ok"]?.bool == true }

    var errorCode: String { root?["error"]?["code"]?.string ?? (root == nil ? "MALFORMED_RESPONSE" : "UNKNOWN") }
    var errorMessage: String { root?["error"]?["message"]?.string ?? text }
}
