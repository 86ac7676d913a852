/// The little of HTTP/1.x the metrics endpoint reads: the request line of a head that ends with an empty
/// line. Headers are skipped (none changes the answer); a body is never read (GET and HEAD carry none).
enum HTTPRequestHead {
    /// The most bytes a request head may take.
    static let maxBytes = 8192

    enum Parse: Equatable {
        /// No empty line yet: read more.
        case incomplete
        case request(method: String, path: String)
        /// A status code and its reason: 400 (malformed), 431 (head too large), 505 (not HTTP/1.x).
        case bad(status: Int, reason: String)
    }

    static func parse(_ bytes: [UInt8]) -> Parse {
        guard let end = headEnd(bytes) else {
            return bytes.count > maxBytes ? .bad(status: 431, reason: "Request Header Fields Too Large") : .incomplete
        }
        guard end <= maxBytes else { return .bad(status: 431, reason: "Request Header Fields Too Large") }
        var lineEnd = bytes.firstIndex(of: 0x0A)!    // there is one: the head ends with one
        if lineEnd > 0 && bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        let line = bytes[..<lineEnd]
        // Printable ASCII only; exactly three parts separated by single spaces.
        guard !line.isEmpty, line.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E || $0 == 0x20 }) else {
            return .bad(status: 400, reason: "Bad Request")
        }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }),
              parts[1].first == UInt8(ascii: "/") else {
            return .bad(status: 400, reason: "Bad Request")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return version.hasPrefix("HTTP/") ? .bad(status: 505, reason: "HTTP Version Not Supported") : .bad(status: 400, reason: "Bad Request")
        }
        var target = parts[1]
        if let q = target.firstIndex(of: UInt8(ascii: "?")) { target = target[..<q] }
        return .request(method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: target, as: UTF8.self))
    }

    /// The index just past the empty line ending the head ("\r\n\r\n" or "\n\n"), or nil.
    private static func headEnd(_ b: [UInt8]) -> Int? {
        var i = 0
        while i < b.count {
            if b[i] == 0x0A {
                if i + 1 < b.count && b[i + 1] == 0x0A { return i + 2 }
                if i + 2 < b.count && b[i + 1] == 0x0D && b[i + 2] == 0x0A { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// The response to a parsed head: the status line, headers and body (the body left out for HEAD).
    static func response(to parse: Parse, metrics: () -> String) -> [UInt8] {
        switch parse {
        case .incomplete:
            return reply(400, "Bad Request", "incomplete request\n", head: false)
        case .bad(let status, let reason):
            return reply(status, reason, "\(reason.lowercased())\n", head: false)
        case .request(let method, let path):
            guard path == "/metrics" else { return reply(404, "Not Found", "not found: only /metrics is served here\n", head: method == "HEAD") }
            guard method == "GET" || method == "HEAD" else {
                return reply(405, "Method Not Allowed", "method not allowed: use GET\n", head: false, extra: "Allow: GET, HEAD\r\n")
            }
            return reply(200, "OK", metrics(), head: method == "HEAD", contentType: PrometheusText.contentType)
        }
    }

    private static func reply(_ status: Int, _ reason: String, _ body: String, head: Bool, extra: String = "",
                              contentType: String = "text/plain; charset=utf-8") -> [UInt8] {
        let bytes = Array(body.utf8)
        var text = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(bytes.count)\r\n"
        text += extra + "Connection: close\r\n\r\n"
        return Array(text.utf8) + (head ? [] : bytes)
    }
}
