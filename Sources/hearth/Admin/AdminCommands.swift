#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthProtocol

/// `hearth delete --recursive`, `hearth index`, `hearth collections`, `hearth ttl`, `hearth stats`,
/// `hearth compact`: the administration ops as commands (docs/operations.md, "Admin commands").
enum AdminCommands {
    /// `hearth delete --recursive PATH`: deletes a collection or document and everything below it, showing
    /// the count deleted so far (on one rewritten line on a terminal, else a line per batch on stderr).
    static func deleteRecursive(_ a: ParsedArguments) throws -> Int32 {
        let path = a.positionals[0]
        let batch = try a.int("batch-size", default: 500, min: 1, max: 500)
        let admin = try AdminClient(try ConnectionOptions(a))
        let tty = Console.isTerminal(2)
        let started = Clock.nanos()
        let r = try admin.call("deleteRecursive", timeout: 1e9, onPush: { push in
            guard let n = push.root?["deleted"]?.int64 else { return }
            let rate = Double(n) / max(1e-9, Double(Clock.nanos() - started) / 1e9)
            let text = "deleting \(path): \(NumberText.grouped(Int(n))) documents (\(NumberText.grouped(Int(rate)))/s)"
            if tty { Console.status("\r\u{1B}[K" + text) } else { Console.error(text) }
        }) { w in
            w.key("path"); w.string(path)
            w.key("batchSize"); w.int(Int64(batch))
            w.key("progress"); w.bool(true)
        }
        if tty { Console.status("\r\u{1B}[K") }
        let n = r.root?["deleted"]?.int64 ?? 0
        if a.flag("json") { Console.line(r.text) } else {
            Console.line("deleted \(NumberText.grouped(Int(n))) document\(n == 1 ? "" : "s") under \(path) in \(NumberText.fixed(Double(Clock.nanos() - started) / 1e9, 2)) s")
        }
        return ExitCode.ok
    }

    static let indexDiscussion = """
        hearth index create COLLECTION FIELD:asc|desc|array-contains ... [--collection-group]
        hearth index list
        hearth index drop ID
        hearth index wait ID [--wait-timeout SECONDS]   (polls until the index is ready; exit 1 if dropped or timed out)
        Example: hearth index create calls customerId:asc callDate:desc
        """

    static func index(_ a: ParsedArguments) throws -> Int32 {
        let action = a.positionals[0]
        let args = Array(a.positionals.dropFirst())
        let json = a.flag("json")
        switch action {
        case "create":
            guard args.count >= 2 else { throw UsageError("index create needs a collection ID and at least one FIELD:MODE.") }
            var fields: [(String, String)] = []
            for spec in args.dropFirst() {
                guard let colon = spec.lastIndex(of: ":") else { throw UsageError("'\(spec)' must be FIELD:asc, FIELD:desc or FIELD:array-contains.") }
                let mode = String(spec[spec.index(after: colon)...])
                guard ["asc", "desc", "array-contains"].contains(mode) else {
                    throw UsageError("'\(spec)': the mode must be asc, desc or array-contains (got '\(mode)').")
                }
                fields.append((String(spec[..<colon]), mode))
            }
            let admin = try AdminClient(try ConnectionOptions(a))
            let r = try admin.call("index") { w in
                w.key("action"); w.string("create")
                w.key("collection"); w.string(args[0])
                w.key("scope"); w.string(a.flag("collection-group") ? "collectionGroup" : "collection")
                w.key("fields")
                w.beginArray()
                for (f, m) in fields { w.beginArray(); w.string(f); w.string(m); w.endArray() }
                w.endArray()
            }
            Console.line(json ? r.text : describe(r.root?["index"]))
        case "list":
            guard args.isEmpty else { throw UsageError("index list takes no arguments.") }
            let r = try AdminClient(try ConnectionOptions(a)).call("index") { w in w.key("action"); w.string("list") }
            if json { Console.line(r.text); break }
            let list = r.root?["indexes"].map { Array($0.elements) } ?? []
            if list.isEmpty { Console.line("no composite indexes") }
            for d in list { Console.line(describe(d)) }
        case "drop":
            let id = try indexID(args, "drop")
            let r = try AdminClient(try ConnectionOptions(a)).call("index") { w in
                w.key("action"); w.string("drop")
                w.key("indexId"); w.int(id)
            }
            Console.line(json ? r.text : "dropped index #\(id)")
        case "wait":
            let id = try indexID(args, "wait")
            let limit = try a.double("wait-timeout", default: 600, min: 0, max: 7 * 86_400) ?? 600
            let admin = try AdminClient(try ConnectionOptions(a))
            let deadline = Double(Clock.nanos()) / 1e9 + limit
            while true {
                let r = try admin.call("index") { w in w.key("action"); w.string("list") }
                let found = r.root?["indexes"].flatMap { list in list.elements.first { $0["id"]?.int64 == id } }
                guard let found else {
                    Console.error("error: no index #\(id) (never declared, or dropped)")
                    return ExitCode.serverError
                }
                if found["state"]?.string == "ready" {
                    Console.line(json ? r.text : "\(describe(found))")
                    return ExitCode.ok
                }
                if Double(Clock.nanos()) / 1e9 >= deadline {
                    Console.error("error: index #\(id) is still \(found["state"]?.string ?? "building") after \(limit) s")
                    return ExitCode.serverError
                }
                usleep(200_000)
            }
        default:
            throw UsageError("unknown index action '\(action)': use create, list, drop or wait.")
        }
        return ExitCode.ok
    }

    private static func indexID(_ args: [String], _ action: String) throws(UsageError) -> Int64 {
        guard args.count == 1, let id = Int64(args[0].hasPrefix("#") ? String(args[0].dropFirst()) : args[0]), id >= 1 else {
            throw UsageError("index \(action) needs one index ID (a positive integer, as index list shows).")
        }
        return id
    }

    /// "#3 calls (customerId asc, callDate desc) ready" (collection group scope says so).
    static func describe(_ d: JSONRef?) -> String {
        guard let d else { return "?" }
        let fields = d["fields"].map { Array($0.elements).map { f in Array(f.elements).compactMap(\.string).joined(separator: " ") } } ?? []
        let group = d["scope"]?.string == "collectionGroup" ? " [collection group]" : ""
        return "#\(d["id"]?.int64 ?? 0) \(d["collection"]?.string ?? "?")\(group) (\(fields.joined(separator: ", "))) \(d["state"]?.string ?? "?")"
    }

    /// `hearth collections [DOCUMENT]`: the IDs of the root collections, or of a document's subcollections.
    static func collections(_ a: ParsedArguments) throws -> Int32 {
        let r = try AdminClient(try ConnectionOptions(a)).call("listCollections") { w in
            if let p = a.positionals.first { w.key("path"); w.string(p) }
        }
        if a.flag("json") { Console.line(r.text); return ExitCode.ok }
        for id in r.root?["collections"].map({ Array($0.elements).compactMap(\.string) }) ?? [] { Console.line(id) }
        return ExitCode.ok
    }

    /// `hearth ttl set GROUP FIELD`, `hearth ttl remove GROUP`, `hearth ttl list`.
    static func ttl(_ a: ParsedArguments) throws -> Int32 {
        let action = a.positionals[0]
        let args = Array(a.positionals.dropFirst())
        let admin = try AdminClient(try ConnectionOptions(a))
        let r: ServerResponse
        switch action {
        case "set":
            guard args.count == 2 else { throw UsageError("ttl set needs a collection group and a field: hearth ttl set sessions expireAt") }
            r = try admin.call("ttl") { w in
                w.key("action"); w.string("set"); w.key("collectionGroup"); w.string(args[0]); w.key("field"); w.string(args[1])
            }
            if !a.flag("json") { Console.line("TTL policy: documents of collection group \(args[0]) expire at their \(args[1]) field") }
        case "remove":
            guard args.count == 1 else { throw UsageError("ttl remove needs a collection group.") }
            r = try admin.call("ttl") { w in w.key("action"); w.string("remove"); w.key("collectionGroup"); w.string(args[0]) }
            if !a.flag("json") { Console.line("TTL policy of collection group \(args[0]) removed") }
        case "list":
            guard args.isEmpty else { throw UsageError("ttl list takes no arguments.") }
            r = try admin.call("ttl") { w in w.key("action"); w.string("list") }
            if !a.flag("json") {
                let list = r.root?["policies"].map { Array($0.elements) } ?? []
                if list.isEmpty { Console.line("no TTL policies") }
                for p in list { Console.line("\(p["collectionGroup"]?.string ?? "?") expires at \(p["field"]?.string ?? "?")") }
            }
        default:
            throw UsageError("unknown ttl action '\(action)': use set, remove or list.")
        }
        if a.flag("json") { Console.line(r.text) }
        return ExitCode.ok
    }

    /// `hearth compact`.
    static func compact(_ a: ParsedArguments) throws -> Int32 {
        let r = try AdminClient(try ConnectionOptions(a)).call("compact", timeout: 1e9)
        if a.flag("json") { Console.line(r.text); return ExitCode.ok }
        let root = r.root!
        Console.line("compacted (\(root["method"]?.string ?? "?")) in \(NumberText.fixed(root["ms"]?.number ?? 0, 1)) ms: \(NumberText.mebibytes(Int(root["bytesBefore"]?.int64 ?? 0))) -> \(NumberText.mebibytes(Int(root["bytesAfter"]?.int64 ?? 0))) on disk")
        return ExitCode.ok
    }
}
