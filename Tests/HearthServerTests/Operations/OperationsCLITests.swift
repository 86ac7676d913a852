import Foundation
import HearthTesting
import Testing

/// `hearth top --once`, `delete --recursive`, `index`, `collections`, `ttl`, `compact` against a real hearthd,
/// and the daemon's log formats (every line with an RFC 3339 time, JSON lines, the slow-request log).
@Suite(.serialized) final class OperationsCLITests {
    func hearth(_ daemon: DaemonProcess, _ args: String...) throws -> CLIProcess.Result {
        try CLIProcess.run(args + ["--port", String(daemon.port)])
    }

    @Test func topOncePrintsOneFrameWithTheFigures() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        for i in 0..<5 { #expect(try c.request(#"{"op":"set","path":"a/\#(i)","data":{}}"#).isOK) }
        #expect(try c.request(#"{"op":"get","path":"a/1"}"#).isOK)
        let r = try hearth(daemon, "top", "--once")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("hearth top  127.0.0.1:\(daemon.port)  hearthd 0.1.0  up "), "\(r.stdout)")
        for text in ["connections ", "listeners ", "commits/s ", "durable p50 ", "memory ", "cache hit rate ", "store ",
                     "OP", "REQ/S", "P50 ms", "P99 ms"] {
            #expect(r.stdout.contains(text), "no \(text) in \(r.stdout)")
        }
        let setRow = r.stdout.split(separator: "\n").first { $0.hasPrefix("set ") }
        #expect(setRow?.split(separator: " ").dropFirst(2).first == "5", "\(r.stdout)")
        #expect(!r.stdout.contains("\u{1B}["), "--once prints no escape codes")
    }

    @Test func topNeedsTheAdminUnderRulesAndHonoursCredentials() throws {
        let d = try SecureDaemon(rules: "rules_version = '2';\nservice cloud.firestore { match /databases/{db}/documents { match /{doc=**} { allow read, write: if true; } } }")
        let refused = try CLIProcess.run(["top", "--once", "--port", String(d.daemon.port)])
        #expect(refused.status == 1 && refused.stderr.contains("PERMISSION_DENIED"), "\(refused.stderr)")
        let ok = try CLIProcess.run(["top", "--once", "--port", String(d.daemon.port), "--admin-key-file", d.adminKeyFile])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("hello"), "the hello shows in the per-op table: \(ok.stdout)")
    }

    @Test func deleteRecursiveIndexCollectionsTTLAndCompactCommands() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        let writes = (0..<120).map { #"{"op":"set","path":"r/\#($0 % 3)/s/\#($0)","data":{"a":\#($0),"b":1}}"# }
        #expect(try c.request(#"{"op":"commit","writes":[\#(writes.joined(separator: ","))]}"#).isOK)

        let cols = try hearth(daemon, "collections")
        #expect(cols.status == 0 && cols.stdout == "r\n", "\(cols.stdout)")
        #expect(try hearth(daemon, "collections", "r/1").stdout == "s\n")

        let created = try hearth(daemon, "index", "create", "s", "a:asc", "b:desc")
        #expect(created.status == 0 && created.stdout.hasPrefix("#1 s (a asc, b desc) "), "\(created.stdout)\(created.stderr)")
        let waited = try hearth(daemon, "index", "wait", "1")
        #expect(waited.status == 0 && waited.stdout == "#1 s (a asc, b desc) ready\n", "\(waited.stdout)\(waited.stderr)")
        #expect(try hearth(daemon, "index", "list").stdout == "#1 s (a asc, b desc) ready\n")
        let group = try hearth(daemon, "index", "create", "s", "b:asc", "a:asc", "--collection-group")
        #expect(group.stdout.hasPrefix("#2 s [collection group] (b asc, a asc) "), "\(group.stdout)")
        #expect(try hearth(daemon, "index", "drop", "2").stdout == "dropped index #2\n")
        let gone = try hearth(daemon, "index", "wait", "2")
        #expect(gone.status == 1 && gone.stderr.contains("no index #2"), "\(gone.stderr)")
        let badMode = try hearth(daemon, "index", "create", "s", "a:up")
        #expect(badMode.status == 2 && badMode.stderr.contains("asc, desc or array-contains"), "\(badMode.stderr)")

        let del = try hearth(daemon, "delete", "--recursive", "--batch-size", "50", "r")
        #expect(del.status == 0, "\(del.stderr)")
        #expect(del.stdout.hasPrefix("deleted 120 documents under r in "), "\(del.stdout)")
        #expect(del.stderr.contains("deleting r: 50 documents"), "progress lines on stderr (not a terminal): \(del.stderr)")
        #expect(del.stderr.contains("deleting r: 120 documents"), "\(del.stderr)")
        #expect(try hearth(daemon, "collections").stdout == "")
        let noRecursive = try hearth(daemon, "delete", "--batch-size", "5", "r/1")
        #expect(noRecursive.status == 2, "\(noRecursive.stderr)")

        #expect(try hearth(daemon, "ttl", "set", "sessions", "expireAt").status == 0)
        #expect(try hearth(daemon, "ttl", "list").stdout == "sessions expires at expireAt\n")
        #expect(try hearth(daemon, "ttl", "remove", "sessions").status == 0)
        #expect(try hearth(daemon, "ttl", "list").stdout == "no TTL policies\n")

        let compact = try hearth(daemon, "compact")
        #expect(compact.status == 0 && compact.stdout.hasPrefix("compacted (full vacuum) in "), "\(compact.stdout)\(compact.stderr)")
    }

    // MARK: Logs

    static let rfc3339 = try! NSRegularExpression(pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"#)

    static func startsWithTime(_ s: String) -> Bool {
        rfc3339.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
    }

    @Test func jsonLogLinesCarryTimeLevelMessageAndSlowRequestFields() throws {
        let daemon = try DaemonProcess(extraArgs: ["--log-format", "json", "--log-level", "debug", "--slow-ms", "1"])
        do {
            let c = try daemon.connect()
            // 500 writes in one commit, made durable with fsync: well over 1 ms.
            let writes = (0..<500).map { #"{"op":"set","path":"w/\#($0)","data":{"n":\#($0)}}"# }
            #expect(try c.request(#"{"op":"commit","id":"big-1","writes":[\#(writes.joined(separator: ","))]}"#).isOK)
            #expect(daemon.waitForLog(#""msg":"slow request""#))
        }
        #expect(daemon.waitForLog("closed\""))
        daemon.stop()
        let lines = daemon.log.split(separator: "\n").map(String.init)
        #expect(lines.count >= 5)
        var sawSlow = false, sawOpen = false
        for line in lines {
            guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                Issue.record("not a JSON object: \(line)"); continue
            }
            #expect(Self.startsWithTime(o["time"] as? String ?? ""), "\(line)")
            #expect(["debug", "info", "warn", "error"].contains(o["level"] as? String ?? ""), "\(line)")
            #expect(o["msg"] is String, "\(line)")
            if o["msg"] as? String == "slow request" {
                sawSlow = true
                #expect(o["level"] as? String == "warn")
                #expect(o["op"] as? String == "commit")
                #expect(o["id"] as? String == "\"big-1\"")
                #expect((o["peer"] as? String)?.hasPrefix("127.0.0.1:") == true)
                #expect((o["duration_ms"] as? Double ?? 0) >= 1)
            }
            if (o["msg"] as? String)?.hasPrefix("connection from 127.0.0.1:") == true { sawOpen = o["level"] as? String == "debug" }
        }
        #expect(sawSlow && sawOpen)
    }

    @Test func textLogLinesAndStartUpErrorsStartWithTheTime() throws {
        let daemon = try DaemonProcess(extraArgs: ["--slow-ms", "1"])
        let c = try daemon.connect()
        let writes = (0..<500).map { #"{"op":"set","path":"w/\#($0)","data":{"n":\#($0)}}"# }
        #expect(try c.request(#"{"op":"commit","id":7,"writes":[\#(writes.joined(separator: ","))]}"#).isOK)
        #expect(daemon.waitForLog("hearthd warn: slow request op=commit peer=127.0.0.1:"))
        #expect(daemon.log.contains(" id=7"))
        daemon.stop()
        for line in daemon.log.split(separator: "\n") { #expect(Self.startsWithTime(String(line)), "\(line)") }

        let bad = try DaemonProcess.runToExit(["--port", "nope"])
        #expect(bad.status == 2)
        #expect(Self.startsWithTime(bad.stderr) && bad.stderr.contains(" hearthd error: --port needs a whole number"), "\(bad.stderr)")
        let badJSON = try DaemonProcess.runToExit(["--log-format", "json", "--slow-ms", "-1"])
        #expect(badJSON.status == 2)
        let o = try JSONSerialization.jsonObject(with: Data(badJSON.stderr.utf8)) as? [String: Any]
        #expect(o?["level"] as? String == "error" && (o?["msg"] as? String)?.contains("--slow-ms") == true, "\(badJSON.stderr)")
        #expect(Self.startsWithTime(o?["time"] as? String ?? ""))
        let badFormat = try DaemonProcess.runToExit(["--log-format", "xml"])
        #expect(badFormat.status == 2 && badFormat.stderr.contains("--log-format must be text or json"), "\(badFormat.stderr)")
    }
}
