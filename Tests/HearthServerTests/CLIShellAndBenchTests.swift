import Foundation
import HearthTesting
import Testing

/// `hearth shell` with piped input and `hearth bench` against a real hearthd.
@Suite(.serialized) final class CLIShellAndBenchTests {
    let daemon: DaemonProcess

    init() throws { daemon = try DaemonProcess() }

    var port: [String] { ["--port", String(daemon.port)] }

    @Test func shellRunsPipedShortFormsAndRawLinesInOrder() throws {
        let input = """
        set s/1 {"name": "Ada", "n": 1}
        get s/1
        bogus words
        {"op":"get","path":"s/1","id":"raw"}
        update s/missing {"n":2}
        delete s/1
        get s/1
        """
        let r = try CLIProcess.run(["shell"] + port, stdin: input, timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let out = r.stdout
        let setAt = out.range(of: "set s/1 at ")
        let firstGet = out.range(of: "s/1  (created ")
        let deleted = out.range(of: "deleted s/1 (if it existed) at ")
        let missing = out.range(of: "s/1: not found")
        #expect(setAt != nil && firstGet != nil && deleted != nil && missing != nil, "\(out)")
        if let setAt, let firstGet, let deleted, let missing {
            #expect(setAt.lowerBound < firstGet.lowerBound)
            #expect(firstGet.lowerBound < deleted.lowerBound)
            #expect(deleted.lowerBound < missing.lowerBound)
        }
        #expect(out.components(separatedBy: "\"name\": \"Ada\"").count == 3, "both gets print the data: \(out)")
        #expect(r.stderr.contains("unknown command 'bogus'"))
        #expect(r.stderr.contains("error: NOT_FOUND"))
    }

    @Test func shellJSONModeAndQuit() throws {
        let r = try CLIProcess.run(["shell", "--json"] + port, stdin: "ping\n{\"op\":\"ping\",\"id\":9}\nquit\nping\n", timeout: 30)
        #expect(r.status == 0)
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(r.stdout)")
        #expect(lines.first?.hasPrefix(#"{"id":1,"ok":true"#) == true)
        #expect(lines.last?.hasPrefix(#"{"id":9,"ok":true"#) == true)
        let help = try CLIProcess.run(["shell"] + port, stdin: "help", timeout: 30)
        #expect(help.stdout.contains("get PATH"))
        #expect(help.stdout.contains("starting with '{'"))
    }

    @Test func shellPrintsPushedSnapshots() throws {
        let input = "listen p/1\nset p/1 {\"a\": 1}\nping\nlisten p where a >= 1\nunlisten 1\nquery p where a == 1\n"
        let r = try CLIProcess.run(["shell"] + port, stdin: input, timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let out = r.stdout
        #expect(out.contains("listening to p/1: subscription 1"), "\(out)")
        #expect(out.contains("[sub 1] snapshot seq "), "\(out)")
        #expect(out.contains("(no document)"), "the initial snapshot of an absent document: \(out)")
        #expect(out.contains("listening to p: subscription 2"), "\(out)")
        #expect(out.contains("  added p/1 {\"a\":1}"), "\(out)")
        #expect(out.contains("unlistened"))
        #expect(out.contains("(1 document as of seq "), "\(out)")
        if let pushed = out.range(of: "\"a\": 1\n}"), let pong = out.range(of: "pong: ") {
            #expect(pushed.lowerBound < pong.lowerBound, "the pushed snapshot is printed when it arrives: \(out)")
        } else {
            Issue.record("no pushed snapshot with the data or no pong: \(out)")
        }
    }

    func benchJSON(_ args: [String]) throws -> [String: Any] {
        let r = try CLIProcess.run(["bench"] + args + port + ["--json"], timeout: 120)
        #expect(r.status == 0, "\(args): \(r.stderr)")
        guard let obj = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
            throw TestFailure("bench printed no JSON object: \(r.stdout)")
        }
        return obj
    }

    func expectSane(_ report: [String: Any], requests: Int) {
        #expect(report["requests"] as? Int == requests, "\(report)")
        #expect((report["ops_per_sec"] as? Double ?? 0) > 0)
        #expect(report["errors"] as? Int == 0)
        #expect(report["unanswered"] as? Int == 0)
        let lat = report["latency_us"] as? [String: Any] ?? [:]
        let order = ["min", "p50", "p90", "p99", "p99_9", "max"].map { lat[$0] as? Int ?? -1 }
        #expect(order.allSatisfy { $0 >= 0 }, "\(lat)")
        #expect(order == order.sorted(), "percentiles ordered: \(lat)")
        #expect(lat["count"] as? Int == requests)
        let server = report["server"] as? [String: Any]
        #expect(server?["pid"] as? Int == Int(daemon.pid), "the daemon is found by its port")
        #expect((server?["rss_bytes"] as? Int ?? 0) > 0)
    }

    /// Errors are counted for the measured requests, as `requests` is; those of the warmup are shown apart.
    @Test func benchErrorsCountTheMeasuredRequests() throws {
        // Without the composite index every query is refused (FAILED_PRECONDITION), in the warmup too.
        let r = try CLIProcess.run(["bench", "query", "--connections", "2", "--duration", "0.5", "--warmup", "0.5",
                                    "--keys", "10", "--no-load"] + port + ["--json"], timeout: 120)
        #expect(r.status == 1, "\(r.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
        let requests = report["requests"] as? Int ?? 0
        #expect(requests > 0 && report["errors"] as? Int == requests, "\(report)")
        #expect((report["warmup_errors"] as? Int ?? 0) > 0, "\(report)")
    }

    @Test func benchGetLoadsKeysAndMeasures() throws {
        let report = try benchJSON(["get", "--requests", "2000", "--connections", "4", "--keys", "500"])
        expectSane(report, requests: 2000)
        #expect((report["load"] as? [String: Any])?["documents"] as? Int == 500)
        #expect(report["not_found"] as? Int == 0, "every get finds a loaded document")
        let doc = try daemon.connect().request(#"{"op":"get","path":"bench/k123"}"#)
        let data = (doc["doc"] as? [String: Any])?["data"] as? [String: Any]
        let size = try JSONSerialization.data(withJSONObject: data ?? [:]).count
        #expect(abs(size - 300) <= 8, "documents are about --doc-size bytes (\(size))")
    }

    @Test func benchSetPingAndMixed() throws {
        expectSane(try benchJSON(["set", "--requests", "2000", "--connections", "4", "--keys", "100"]), requests: 2000)
        expectSane(try benchJSON(["ping", "--requests", "3000", "--connections", "3", "--pipeline", "8", "--threads", "2"]), requests: 3000)
        let mixed = try benchJSON(["mixed", "--requests", "1000", "--connections", "2", "--keys", "50"])
        expectSane(mixed, requests: 1000)
    }

    @Test func benchFixedRateAndDurationBound() throws {
        let report = try benchJSON(["ping", "--rate", "2000", "--duration", "1", "--warmup", "0.2", "--connections", "4"])
        #expect(report["mode"] as? String == "fixed-rate")
        let n = report["requests"] as? Int ?? 0
        #expect(n > 1500 && n <= 2100, "about 2000 requests in one second at 2000/s: \(n)")
        #expect(report["service_latency_us"] != nil)
        let text = try CLIProcess.run(["bench", "ping", "--duration", "0.5", "--warmup", "0", "--connections", "2"] + port, timeout: 60)
        #expect(text.status == 0)
        #expect(text.stdout.contains("throughput"))
        #expect(text.stdout.contains("p99.9"))
    }

    /// `bench timeline --rate` sends posts when they are due, not as fast as they are acknowledged: about rate ×
    /// duration posts, the rate in the report. The scenarios that run closed-loop only refuse `--rate` rather
    /// than ignore it.
    @Test func timelineHonoursRateAndTheClosedLoopScenariosRefuseIt() throws {
        let r = try CLIProcess.run(["bench", "timeline", "--followers", "20", "--listeners", "4", "--rate", "20",
                                    "--pipeline", "4", "--duration", "1", "--warmup", "0.2"] + port + ["--json"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        let report = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(report["rate"] as? Double == 20, "\(r.stdout)")
        let posts = report["requests"] as? Int ?? 0
        #expect(posts >= 15 && posts <= 21, "about 20 posts in one second at 20/s: \(r.stdout)")
        #expect(report["posts_due_unsent"] as? Int == 0, "\(r.stdout)")
        // A rate no daemon keeps up with, one post in flight: the posts it never got to are counted, and the run
        // fails as one with unanswered requests does.
        let late = try CLIProcess.run(["bench", "timeline", "--followers", "20", "--listeners", "4", "--rate", "100000",
                                       "--duration", "0.5", "--warmup", "0"] + port + ["--json"], timeout: 120)
        #expect(late.status == 1, "\(late.stderr)\n\(late.stdout)")
        let lateReport = try JSONSerialization.jsonObject(with: Data(late.stdout.utf8)) as? [String: Any] ?? [:]
        #expect((lateReport["posts_due_unsent"] as? Int ?? 0) > 1000, "\(late.stdout)")
        for scenario in ["listen", "departments", "callrecords"] {
            let refused = try CLIProcess.run(["bench", scenario, "--rate", "10", "--duration", "0.2"] + port, timeout: 60)
            #expect(refused.status == 2, "\(scenario): \(refused.stderr)")
            #expect(refused.stderr.contains("--rate") && refused.stderr.contains("closed-loop"), "\(scenario): \(refused.stderr)")
        }
    }

    /// Every scenario runs twice against the same daemon (the second run finds the first run's documents,
    /// indexes and listeners' data) and prints, with `--json`, one object with the common fields.
    /// `callrecords` goes before `query`, whose index and records it creates.
    @Test func everyScenarioRepeatsAgainstOneDaemonAndHonoursJSON() throws {
        let short = ["--duration", "0.4", "--warmup", "0.1"]
        let runs: [(String, [String])] = [
            ("ping", ["--connections", "2"] + short),
            ("get", ["--connections", "2", "--keys", "100"] + short),
            ("set", ["--connections", "2", "--keys", "100"] + short),
            ("mixed", ["--connections", "2", "--keys", "100"] + short),
            ("listen", ["--connections", "1", "--listeners", "20"] + short),
            ("callrecords", ["--connections", "2", "--keys", "20", "--preload", "200"] + short),
            ("query", ["--connections", "2", "--keys", "20"] + short),
            ("timeline", ["--followers", "40", "--listeners", "8"] + short),
            ("departments", ["--connections", "2", "--keys", "50", "--departments", "10"] + short),
        ]
        for (scenario, args) in runs {
            for run in 1...2 {
                let r = try CLIProcess.run(["bench", scenario] + args + port + ["--json"], timeout: 120)
                #expect(r.status == 0, "\(scenario) run \(run): \(r.stderr)\n\(r.stdout)")
                guard let report = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] else {
                    Issue.record("\(scenario) run \(run) printed no JSON object: \(r.stdout)")
                    continue
                }
                #expect(report["scenario"] as? String == scenario)
                #expect(report["port"] as? Int == daemon.port)
                for key in ["host", "tls", "connections", "pipeline", "warmup_s", "duration_limit_s", "elapsed_s",
                            "requests", "ops_per_sec", "errors", "error_codes", "latency_us", "server"] {
                    #expect(report[key] != nil, "\(scenario) --json lacks \(key): \(r.stdout)")
                }
                #expect(report["errors"] as? Int == 0, "\(scenario) run \(run): \(r.stdout)")
                #expect((report["requests"] as? Int ?? 0) > 0, "\(scenario) run \(run) measured nothing: \(r.stdout)")
                #expect((report["server"] as? [String: Any])?["pid"] as? Int == Int(daemon.pid))
                if scenario == "listen" {
                    // Every measured delivery has both latencies: from the commit and from the write's send.
                    let deliveries = report["deliveries"] as? Int ?? 0
                    #expect(deliveries > 0, "listen run \(run) measured no delivery: \(r.stdout)")
                    #expect((report["latency_us"] as? [String: Any])?["count"] as? Int == deliveries, "\(r.stdout)")
                    #expect((report["sent_latency_us"] as? [String: Any])?["count"] as? Int == deliveries, "\(r.stdout)")
                }
            }
        }
    }
}
