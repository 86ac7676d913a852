import Foundation
import HearthTesting
import Testing

/// The `hearth` binary's document subcommands against a real hearthd: readable and --json output, and
/// exit codes 0 (ok), 1 (server error), 2 (usage), 3 (connection).
@Suite(.serialized) final class CLICommandTests {
    let daemon: DaemonProcess

    init() throws { daemon = try DaemonProcess() }

    func hearth(_ args: String..., stdin: String? = nil) throws -> CLIProcess.Result {
        try CLIProcess.run(args + ["--port", String(daemon.port)], stdin: stdin)
    }

    func object(_ text: String) throws -> [String: Any] {
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        guard let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(text)")
        }
        return obj
    }

    @Test func setGetUpdateDeleteRoundTrip() throws {
        let set = try hearth("set", "customers/c1", #"{"fullName":"Ada","visits":1,"address":{"city":"Paris"}}"#)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.hasPrefix("set customers/c1 at "), "\(set.stdout)")
        #expect(set.stdout.contains("(seq "))

        let get = try hearth("get", "customers/c1")
        #expect(get.status == 0)
        #expect(get.stdout.hasPrefix("customers/c1  (created "), "\(get.stdout)")
        #expect(get.stdout.contains("\n  \"fullName\": \"Ada\""), "\(get.stdout)")
        #expect(get.stdout.contains("\"address\": {\n    \"city\": \"Paris\"\n  }"), "\(get.stdout)")

        let update = try hearth("update", "customers/c1", #"{"visits":{"$increment":2},"address.city":"Lyon"}"#, "--json")
        #expect(update.status == 0)
        let u = try object(update.stdout)
        #expect(u.isOK)
        #expect(u["path"] as? String == "customers/c1")

        let raw = try hearth("get", "customers/c1", "--json")
        let doc = try object(raw.stdout)["doc"] as? [String: Any]
        let data = doc?["data"] as? [String: Any]
        #expect(data?["visits"] as? Int == 3)
        #expect((data?["address"] as? [String: Any])?["city"] as? String == "Lyon")

        let delete = try hearth("delete", "customers/c1")
        #expect(delete.status == 0)
        #expect(delete.stdout.hasPrefix("deleted customers/c1 (if it existed) at "), "\(delete.stdout)")
        let again = try hearth("delete", "customers/c1")
        #expect(again.status == 0 && again.stdout.hasPrefix("deleted customers/c1 (if it existed) at "), "\(again.stdout)")
        let gone = try hearth("get", "customers/c1")
        #expect(gone.status == 0)
        #expect(gone.stdout == "customers/c1: not found\n")
        let goneJSON = try object(try hearth("get", "customers/c1", "--json").stdout)
        #expect(goneJSON["doc"] is NSNull)
    }

    @Test func mergeAddAndCommit() throws {
        #expect(try hearth("set", "m/1", #"{"a":1,"b":2}"#).status == 0)
        #expect(try hearth("set", "m/1", #"{"b":3}"#, "--merge").status == 0)
        #expect(try hearth("set", "m/1", #"{"a":9,"c":9}"#, "--merge-fields", "c").status == 0)
        let data = (try object(try hearth("get", "m/1", "--json").stdout)["doc"] as? [String: Any])?["data"] as? [String: Any]
        #expect(data?["a"] as? Int == 1)
        #expect(data?["b"] as? Int == 3)
        #expect(data?["c"] as? Int == 9)
        // A comma inside backticks is part of a field's name.
        #expect(try hearth("set", "m/1", #"{"a,b":2,"c":10,"a":7}"#, "--merge-fields", "`a,b`,c").status == 0)
        let merged = (try object(try hearth("get", "m/1", "--json").stdout)["doc"] as? [String: Any])?["data"] as? [String: Any]
        #expect(merged?["a,b"] as? Int == 2 && merged?["c"] as? Int == 10 && merged?["a"] as? Int == 1, "\(merged ?? [:])")

        let add = try hearth("add", "people", #"{"name":"Grace"}"#, "--json")
        #expect(add.status == 0)
        let id = try object(add.stdout)["docId"] as? String ?? ""
        #expect(id.count == 20)
        let readable = try hearth("add", "people", #"{"name":"Alan"}"#)
        #expect(readable.stdout.hasPrefix("added people/"), "\(readable.stdout)")

        let commit = try hearth("commit", #"[{"op":"set","path":"m/2","data":{"n":1}},{"op":"delete","path":"m/1"}]"#)
        #expect(commit.status == 0, "\(commit.stderr)")
        #expect(commit.stdout.hasPrefix("committed 2 writes at "), "\(commit.stdout)")
        #expect(commit.stdout.contains("\n  m/2  set, update time "), "\(commit.stdout)")
        #expect(commit.stdout.contains("\n  m/1  deleted (if it existed), update time "), "\(commit.stdout)")
        let kinds = try hearth("commit", #"[{"op":"create","path":"m/3","data":{}},{"op":"update","path":"m/3","data":{"n":2}},{"op":"verify","path":"m/2","precondition":{"exists":true}}]"#)
        #expect(kinds.stdout.contains("\n  m/3  created, ") && kinds.stdout.contains("\n  m/3  updated, ")
                && kinds.stdout.contains("\n  m/2  verified, "), "\(kinds.stdout)")
        let both = try hearth("get", "m/1", "m/2")
        #expect(both.stdout.hasPrefix("m/1: not found\nm/2  (created "), "\(both.stdout)")
    }

    @Test func serverErrorsExitOne() throws {
        let update = try hearth("update", "missing/doc", #"{"a":1}"#)
        #expect(update.status == 1)
        #expect(update.stdout.isEmpty)
        #expect(update.stderr.contains("error: NOT_FOUND: "), "\(update.stderr)")
        let json = try hearth("update", "missing/doc", #"{"a":1}"#, "--json")
        #expect(json.status == 1)
        #expect((try object(json.stdout)["error"] as? [String: Any])?["code"] as? String == "NOT_FOUND")
        #expect(try hearth("create", "c/1", "{}").status == 0)
        let again = try hearth("create", "c/1", "{}")
        #expect(again.status == 1)
        #expect(again.stderr.contains("ALREADY_EXISTS"))
        let badPath = try hearth("get", "odd")
        #expect(badPath.status == 1)
        #expect(badPath.stderr.contains("INVALID_ARGUMENT"))
    }

    @Test func pingSendAndOps() throws {
        let ping = try hearth("ping")
        #expect(ping.status == 0)
        #expect(ping.stdout.hasPrefix("pong: durable seq "), "\(ping.stdout)")
        let send = try hearth("send", #"{"op":"ping","id":"x"}"#, "--json")
        #expect(send.status == 0)
        #expect(send.stdout.hasPrefix(#"{"id":"x","ok":true"#), "\(send.stdout)")
        let bad = try hearth("send", #"{"op":"nope"}"#)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("INVALID_ARGUMENT"))
        let ops = try hearth("ops")
        #expect(ops.stdout.contains("getAll"))
    }

    @Test func queryCountAndListen() throws {
        #expect(try hearth("commit", #"[{"op":"set","path":"calls/r1","data":{"customerId":"c1","duration":30}},{"op":"set","path":"calls/r2","data":{"customerId":"c2","duration":5}},{"op":"set","path":"calls/r3","data":{"customerId":"c1","duration":12}}]"#).status == 0)
        let q = try hearth("query", "calls", "where", "duration", ">=", "10", "order", "by", "duration", "desc", "limit", "5")
        #expect(q.status == 0, "\(q.stderr)")
        #expect(q.stdout.hasPrefix("calls/r1  (created "), "\(q.stdout)")
        #expect(q.stdout.contains("(2 documents as of seq "), "\(q.stdout)")
        let json = try object(try hearth("query", "calls", "where", "customerId", "==", #""c2""#, "--json").stdout)
        #expect((json["docs"] as? [Any])?.count == 1)
        let count = try hearth("count", "calls")
        #expect(count.stdout.hasPrefix("count: 3 (as of seq "), "\(count.stdout)")
        let listen = try hearth("listen", "calls", "where", "customerId", "==", "c1", "--events", "1")
        #expect(listen.status == 0)
        #expect(listen.stdout.contains("(initial), 2 in view, 2 changes"), "\(listen.stdout)")
        let doc = try hearth("listen", "calls/r2", "--events", "1", "--json")
        let lines = doc.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last?.contains(#""type":"snapshot""#) == true)
        let bad = try hearth("query", "calls", "where", "duration", "~", "1")
        #expect(bad.status == 2)
    }

    /// Arguments the shell already grouped stay one value: `where name == 'Ada Lovelace'` compares with
    /// "Ada Lovelace". JSON values and a whole query in one argument still work as before.
    @Test func shellGroupedArgumentsStayOneValue() throws {
        #expect(try hearth("commit", #"[{"op":"set","path":"sp/1","data":{"name":"Ada Lovelace","tags":["a b"]}},{"op":"set","path":"sp/2","data":{"name":"Ada","n":2}},{"op":"set","path":"sp/3","data":{"name":"Lovelace"}}]"#).status == 0)
        func ids(_ args: [String]) throws -> [String] {
            let r = try CLIProcess.run(args + ["--port", String(daemon.port), "--json"])
            #expect(r.status == 0, "\(args): \(r.stderr)")
            let docs = try object(r.stdout)["docs"] as? [[String: Any]] ?? []
            return docs.compactMap { $0["id"] as? String }
        }
        #expect(try ids(["query", "sp", "where", "name", "==", "Ada Lovelace"]) == ["1"])
        #expect(try ids(["query", "sp", "where", "name", "==", "Ada Lovelace", "limit", "1"]) == ["1"])
        #expect(try ids(["query", "sp", "where", "name", "==", #""Ada Lovelace""#]) == ["1"])
        #expect(try ids(["query", "sp where name == \"Ada Lovelace\""]) == ["1"])
        #expect(try ids(["query", "sp where n == 2"]) == ["2"])
        #expect(try ids(["query", "sp", "where", "tags", "array-contains", "a b"]) == ["1"])
        #expect(try ids(["query", "sp", "where", "name", "in", #"["Ada", "Lovelace"]"#, "order", "by", "name"]) == ["2", "3"])
        let count = try hearth("count", "sp", "where", "name", "==", "Ada Lovelace")
        #expect(count.stdout.hasPrefix("count: 1 "), "\(count.stdout)")
        let listen = try hearth("listen", "sp", "where", "name", "==", "Ada Lovelace", "--events", "1")
        #expect(listen.stdout.contains("(initial), 1 in view, 1 change"), "\(listen.stdout)")
    }

    @Test func usageErrorsExitTwo() throws {
        for args in [["frobnicate"], ["get"], ["set", "a/b"], ["set", "a/b", "{not json"], ["set", "a/b", "[1]"],
                     ["get", "a/b", "--bogus"], ["get", "a/b", "--port", "x"], ["commit", "{}"],
                     ["set", "a/b", "{}", "--merge", "--merge-fields", "x"], ["bench", "nosuch"],
                     ["bench", "get", "--host", "10.1.2.3"], ["bench", "get", "--connections", "0"],
                     ["send", #"{"op":"ping""#], ["send", "ping"], ["send", "[1]"], ["send", ""],
                     // Durations beyond what the system's clocks take (they crashed the CLI).
                     ["get", "a/b", "--timeout", "2147484"], ["top", "--interval", "5000"],
                     ["bench", "get", "--duration", "1e12"], ["bench", "get", "--warmup", "1e12"]] {
            let r = try CLIProcess.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("Error: "), "\(args): \(r.stderr)")
        }
        let help = try CLIProcess.run(["set", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("USAGE: hearth set <path> <json>"))
        #expect(try CLIProcess.run(["--help"]).stdout.contains("SUBCOMMANDS:"))
    }

    @Test func closedPortExitsThree() throws {
        let closed = try freePort()
        let r = try CLIProcess.run(["get", "a/b", "--port", String(closed)])
        #expect(r.status == 3)
        #expect(r.stderr.contains("cannot connect"), "\(r.stderr)")
        let bench = try CLIProcess.run(["bench", "ping", "--requests", "10", "--port", String(closed)])
        #expect(bench.status == 3)
    }

    /// `--host` with several nodes: the first that accepts is used (a closed port is passed over), and the
    /// bench spreads its connections over them.
    @Test func severalHostsTheFirstThatAcceptsIsUsed() throws {
        let closed = try freePort()
        let r = try CLIProcess.run(["set", "m/a", #"{"v":1}"#, "--json", "--host", "127.0.0.1:\(closed),127.0.0.1:\(daemon.port)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try object(r.stdout)["seq"] as? Int != nil, "\(r.stdout)")
        let none = try CLIProcess.run(["get", "m/a", "--host", "127.0.0.1:\(closed),[::1]:\(closed)"])
        #expect(none.status == 3, "\(none.stderr)")
        let bench = try CLIProcess.run(["bench", "get", "--requests", "40", "--connections", "2", "--host", "127.0.0.1:\(daemon.port),127.0.0.1:\(daemon.port)"])
        #expect(bench.status == 0, "\(bench.stderr)")
        #expect(bench.stdout.contains("127.0.0.1:\(daemon.port),127.0.0.1:\(daemon.port)"), "\(bench.stdout)")
        for bad in ["127.0.0.1:0", "127.0.0.1:x", "[::1", ",127.0.0.1", "127.0.0.1:7411,"] {
            let u = try CLIProcess.run(["get", "m/a", "--host", bad])
            #expect(u.status == 2 && u.stderr.contains("--host"), "\(bad): \(u.stderr)")
        }
    }

    /// A port nothing listens on: bind an ephemeral one, then close it.
    func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { throw TestFailure("bind failed") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
