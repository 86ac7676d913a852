import HearthProtocol

/// Turns daemon responses into readable text. One renderer per op in `renderers`; ops without one (and
/// raw lines whose op is unknown) fall back to the response's fields pretty-printed. New ops (query,
/// listen) add an entry here.
enum ResponseRenderer {
    /// What a renderer gets: the request, the parsed response root and the round-trip time.
    struct Input {
        let request: ClientRequest
        let root: JSONRef
        let elapsedNanos: UInt64
    }

    static let renderers: [String: @Sendable (Input) -> String] = [
        "get": { i in document(i.root["doc"], missingPath: i.request.paths.first) },
        "getAll": { i in
            let docs = i.root["docs"].map { Array($0.elements) } ?? []
            return docs.enumerated().map { n, d in
                document(d, missingPath: n < i.request.paths.count ? i.request.paths[n] : "document \(n)")
            }.joined(separator: "\n")
        },
        "set": { i in writeResult(i.root, verb: "set") },
        "create": { i in writeResult(i.root, verb: "created") },
        "update": { i in writeResult(i.root, verb: "updated") },
        // The daemon does not say whether the document existed (a delete of a missing one succeeds).
        "delete": { i in writeResult(i.root, verb: "deleted", note: " (if it existed)") },
        "add": { i in writeResult(i.root, verb: "added") },
        "commit": { i in commitResult(i.root, writeOps: commitOps(i.request)) },
        "ping": { i in
            let full = i.root["diskFull"].map(PrettyJSON.compact) == "true" ? "; disk full: only deletes are accepted" : ""
            return "pong: durable seq \(i.root["seq"].map(PrettyJSON.compact) ?? "?") (round trip \(NumberText.millis(micros: i.elapsedNanos / 1000)) ms)\(full)"
        },
        "query": { i in
            let docs = i.root["docs"].map { Array($0.elements) } ?? []
            let seq = i.root["seq"].map(PrettyJSON.compact) ?? "?"
            let footer = "(\(docs.count) document\(docs.count == 1 ? "" : "s") as of seq \(seq))"
            return (docs.map { document($0, missingPath: nil) } + [footer]).joined(separator: "\n")
        },
        "count": { i in "count: \(i.root["count"].map(PrettyJSON.compact) ?? "?") (as of seq \(i.root["seq"].map(PrettyJSON.compact) ?? "?"))" },
        "listen": { i in "listening to \(i.request.paths.first ?? "?"): subscription \(i.root["sub"].map { PrettyJSON.compact($0).trimmingQuotes } ?? "?")" },
        "unlisten": { _ in "unlistened" },
        "help": { i in
            var text = "Daemon ops:\n"
            for op in i.root["ops"].map({ Array($0.elements) }) ?? [] {
                text += HelpFormat.row(op["op"]?.string ?? "?", op["synopsis"]?.string ?? "")
            }
            return text + (i.root["protocol"]?.string ?? "")
        },
    ]

    /// Readable text for a successful response.
    static func render(_ response: ServerResponse, for request: ClientRequest, elapsedNanos: UInt64) -> String {
        guard let root = response.root else { return response.text }
        let input = Input(request: request, root: root, elapsedNanos: elapsedNanos)
        if let renderer = renderers[request.op] { return renderer(input) }
        return fields(root, skipping: ["id", "ok"])
    }

    /// `error: CODE: message` for a failed response.
    static func renderError(_ response: ServerResponse) -> String {
        "error: \(response.errorCode): \(response.errorMessage)"
    }

    /// A pushed line: `[sub S] snapshot seq N` then the document or each change (`added path {data}`),
    /// `[sub S] error CODE: message`, or for other types the type and the remaining fields.
    static func renderPush(_ response: ServerResponse) -> String {
        guard let root = response.root else { return response.text }
        let type = root["type"]?.string ?? "push"
        let sub = root["sub"].map { "[sub \(PrettyJSON.compact($0).trimmingQuotes)] " } ?? ""
        switch type {
        case "snapshot":
            let seq = root["seq"].map(PrettyJSON.compact) ?? "?"
            var head = "\(sub)snapshot seq \(seq)"
            if root["initial"]?.bool == true { head += " (initial)" }
            if root["reset"]?.bool == true { head += " (reset)" }
            if let doc = root["doc"] { return head + "\n" + document(doc, missingPath: nil) }
            let changes = root["changes"].map { Array($0.elements) } ?? []
            head += ", \(root["size"].map(PrettyJSON.compact) ?? "?") in view, \(changes.count) change\(changes.count == 1 ? "" : "s")"
            for c in changes {
                let kind = c["type"]?.string ?? "?"
                let doc = c["doc"]
                let data = doc?["data"].map(PrettyJSON.compact) ?? ""
                head += "\n  \(kind) \(doc?["path"]?.string ?? "?") \(data)"
            }
            return head
        case "error":
            let code = root["error"]?["code"]?.string ?? "?"
            return "\(sub)error \(code): \(root["error"]?["message"]?.string ?? "")"
        default:
            return "\(sub)\(type) " + fields(root, skipping: ["type", "sub"])
        }
    }

    /// A document as `path  (created T, updated T)` and its data pretty-printed; `path: not found` for null.
    static func document(_ doc: JSONRef?, missingPath: String?) -> String {
        guard let doc, doc.isObject else { return missingPath.map { "\($0): not found" } ?? "(no document)" }
        let path = doc["path"]?.string ?? "?"
        let created = doc["createTime"]?.string ?? "?"
        let updated = doc["updateTime"]?.string ?? "?"
        let data = doc["data"].map { PrettyJSON.format($0) } ?? "{}"
        return "\(path)  (created \(created), updated \(updated))\n\(data)"
    }

    static func writeResult(_ root: JSONRef, verb: String, note: String = "") -> String {
        let path = root["path"]?.string ?? "?"
        let time = root["updateTime"]?.string ?? "?"
        let seq = root["seq"].map(PrettyJSON.compact) ?? "?"
        var text = "\(verb) \(path)\(note) at \(time) (seq \(seq))"
        if let t = root["transformResults"] { text += "\ntransform results: " + PrettyJSON.compact(t) }
        return text
    }

    /// What each write of a commit request did, by its `op`: the verb a commit's result line shows.
    static let commitVerbs = ["set": "set", "create": "created", "update": "updated",
                              "delete": "deleted (if it existed)", "verify": "verified"]

    /// The `op` of each write of a commit request ("" where it cannot be read).
    static func commitOps(_ request: ClientRequest) -> [String] {
        let parser = JSONParser()
        guard let root = try? parser.parse(request.line), let writes = root["writes"] else { return [] }
        return writes.elements.map { $0["op"]?.string ?? "" }
    }

    static func commitResult(_ root: JSONRef, writeOps: [String] = []) -> String {
        let results = root["results"].map { Array($0.elements) } ?? []
        let seq = root["seq"].map(PrettyJSON.compact) ?? "?"
        var text = "committed \(results.count) write\(results.count == 1 ? "" : "s") at \(root["commitTime"]?.string ?? "?") (seq \(seq))"
        for (n, r) in results.enumerated() {
            let verb = n < writeOps.count ? commitVerbs[writeOps[n]] ?? "written" : "written"
            text += "\n  \(r["path"]?.string ?? "?")  \(verb), update time \(r["updateTime"]?.string ?? "?")"
            if let t = r["transformResults"] { text += "  transform results: " + PrettyJSON.compact(t) }
        }
        return text
    }

    /// The members of `root` except `skipping`, as one pretty-printed object (`ok` when nothing is left).
    static func fields(_ root: JSONRef, skipping: Set<String>) -> String {
        var lines: [String] = []
        for m in root.members where !skipping.contains(m.key) {
            var key: [UInt8] = []
            PrettyJSON.quote(m.keyBytes, into: &key)
            lines.append("  " + String(decoding: key, as: UTF8.self) + ": " + PrettyJSON.format(m.value, indent: 2))
        }
        return lines.isEmpty ? "ok" : "{\n" + lines.joined(separator: ",\n") + "\n}"
    }
}

extension String {
    /// The text without one pair of surrounding double quotes.
    var trimmingQuotes: String {
        count >= 2 && hasPrefix("\"") && hasSuffix("\"") ? String(dropFirst().dropLast()) : self
    }
}
