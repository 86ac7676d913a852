import HearthModel
import HearthProtocol

/// One request line the CLI or shell sends, with what the renderer needs to present its answer.
struct ClientRequest {
    /// The `op` of the request ("" when a raw line has none that can be read).
    let op: String
    /// The line without its newline.
    let line: [UInt8]
    /// Document paths asked for, in order (`get`/`getAll`), so missing documents can be named.
    var paths: [String] = []
}

/// Builds request lines with `JSONWriter`. User-supplied JSON is validated with the daemon's own parser
/// (`JSONParser`) and spliced in as given, so typed values and sentinels pass through untouched.
enum RequestBuilder {
    /// `get` for one path, `getAll` for several.
    static func get(_ paths: [String], id: Int) -> ClientRequest {
        if paths.count == 1 {
            let line = build("get", id: id) { w in w.key("path"); w.string(paths[0]) }
            return ClientRequest(op: "get", line: line, paths: paths)
        }
        let line = build("getAll", id: id) { w in
            w.key("paths")
            w.beginArray()
            for p in paths { w.string(p) }
            w.endArray()
        }
        return ClientRequest(op: "getAll", line: line, paths: paths)
    }

    /// `set` (or `create` when `op` says so); `merge` and `mergeFields` are mutually exclusive.
    static func set(path: String, data: String, merge: Bool = false, mergeFields: [String]? = nil,
                    id: Int) throws(UsageError) -> ClientRequest {
        if merge && mergeFields != nil { throw UsageError("--merge and --merge-fields cannot be combined.") }
        let json = try validated(data, what: "data", kind: .object)
        let line = build("set", id: id) { w in
            w.key("path"); w.string(path)
            w.key("data"); w.raw(json)
            if merge { w.key("merge"); w.bool(true) }
            if let mergeFields {
                w.key("mergeFields")
                w.beginArray()
                for f in mergeFields { w.string(f) }
                w.endArray()
            }
        }
        return ClientRequest(op: "set", line: line, paths: [path])
    }

    /// `update` or `create`: a path and an object of data.
    static func write(_ op: String, path: String, data: String, id: Int) throws(UsageError) -> ClientRequest {
        let json = try validated(data, what: "data", kind: .object)
        let line = build(op, id: id) { w in
            w.key("path"); w.string(path)
            w.key("data"); w.raw(json)
        }
        return ClientRequest(op: op, line: line, paths: [path])
    }

    static func delete(path: String, id: Int) -> ClientRequest {
        ClientRequest(op: "delete", line: build("delete", id: id) { w in w.key("path"); w.string(path) }, paths: [path])
    }

    static func add(collection: String, data: String, id: Int) throws(UsageError) -> ClientRequest {
        let json = try validated(data, what: "data", kind: .object)
        let line = build("add", id: id) { w in
            w.key("collection"); w.string(collection)
            w.key("data"); w.raw(json)
        }
        return ClientRequest(op: "add", line: line)
    }

    /// `commit` of a JSON array of writes such as `[{"op":"set","path":"a/b","data":{}}]`.
    static func commit(writes: String, id: Int) throws(UsageError) -> ClientRequest {
        let json = try validated(writes, what: "writes", kind: .array)
        return ClientRequest(op: "commit", line: build("commit", id: id) { w in w.key("writes"); w.raw(json) })
    }

    /// `query` or `count` from the words form (see `QuerySyntax`).
    static func query(_ op: String, _ args: inout ShortFormArguments, id: Int) throws(UsageError) -> ClientRequest {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string(op)
        w.key("id"); w.int(Int64(id))
        try QuerySyntax.parse(&args, into: &w)
        w.endObject()
        return ClientRequest(op: op, line: w.bytes)
    }

    /// `listen` to a document (a path with an even number of segments) or to a query in the words form.
    static func listen(_ args: inout ShortFormArguments, id: Int) throws(UsageError) -> ClientRequest {
        guard let target = args.peekWord() else { throw UsageError("missing PATH or query") }
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string("listen")
        w.key("id"); w.int(Int64(id))
        if target.split(separator: "/").count % 2 == 0 {
            _ = args.optionalWord()
            try args.expectEnd()
            w.key("path"); w.string(target)
        } else {
            w.key("query")
            w.beginObject()
            try QuerySyntax.parse(&args, into: &w)
            w.endObject()
        }
        w.endObject()
        return ClientRequest(op: "listen", line: w.bytes, paths: [target])
    }

    /// `unlisten` of a subscription ID.
    static func unlisten(sub: String, id: Int) -> ClientRequest {
        ClientRequest(op: "unlisten", line: build("unlisten", id: id) { w in w.key("sub"); w.string(sub) })
    }

    /// An op with no fields (`ping`, `help`).
    static func bare(_ op: String, id: Int) -> ClientRequest {
        ClientRequest(op: op, line: build(op, id: id) { _ in })
    }

    /// A line sent verbatim once it parses as a JSON object (else a usage error: exit 2, nothing sent); its `op`
    /// and paths are read for rendering.
    static func raw(_ text: String) throws(UsageError) -> ClientRequest {
        let bytes = Array(text.utf8)
        if bytes.contains(10) || bytes.contains(13) { throw UsageError("A raw request must be a single line.") }
        let parser = JSONParser()
        let root: JSONRef
        do { root = try parser.parse(bytes) } catch {
            throw UsageError("The request is not valid JSON: \(error.message). Nothing was sent.")
        }
        guard root.isObject else { throw UsageError("A request must be a JSON object ({\"op\":...}). Nothing was sent.") }
        let op = root["op"]?.string ?? ""
        var paths: [String] = []
        if let p = root["path"]?.string { paths = [p] }
        if let list = root["paths"] { paths = list.elements.compactMap { $0.string } }
        return ClientRequest(op: op, line: bytes, paths: paths)
    }

    private static func build(_ op: String, id: Int, _ fields: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string(op)
        w.key("id"); w.int(Int64(id))
        fields(&w)
        w.endObject()
        return w.bytes
    }

    /// Checks that `text` is JSON of the given kind; returns its bytes with line breaks (which valid JSON
    /// can only have as whitespace) turned into spaces so the request stays one line.
    static func validated(_ text: String, what: String, kind: JSONRef.Kind) throws(UsageError) -> [UInt8] {
        let bytes = Array(text.utf8).map { $0 == 10 || $0 == 13 ? 32 : $0 }
        let parser = JSONParser()
        let root: JSONRef
        do { root = try parser.parse(bytes) } catch { throw UsageError("\(what) is not valid JSON: \(error.message)") }
        guard root.kind == kind else {
            throw UsageError("\(what) must be a JSON \(kind.name), not \(root.kind.name).")
        }
        return bytes
    }
}
