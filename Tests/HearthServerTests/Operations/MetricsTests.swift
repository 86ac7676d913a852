import Foundation
import HearthTesting
import Testing

/// `stats` and the Prometheus endpoint of a real hearthd: every figure present, and moving under load; the
/// exposition parsed as Prometheus would; bad HTTP answered with an error status.
@Suite(.serialized) final class MetricsTests {
    let daemon: DaemonProcess
    let metricsPort: Int

    init() throws {
        daemon = try DaemonProcess(extraArgs: ["--metrics-port", "0"])
        guard daemon.waitForLog("metrics on http://127.0.0.1:"),
              let r = daemon.log.range(of: "metrics on http://127.0.0.1:") else { throw TestFailure("no metrics line: \(daemon.log)") }
        metricsPort = Int(daemon.log[r.upperBound...].prefix { $0.isNumber })!
    }

    /// One HTTP exchange on the metrics port: what the daemon answered (it closes after one response).
    func http(_ request: String) throws -> String {
        let c = try WireClient(port: metricsPort)
        try c.sendRaw(Array(request.utf8))
        var out = ""
        // Lines without their "\r" ("\r\n" is one Character in Swift, which split(separator: "\n") would not cut).
        while var line = try? c.readLineBytes(timeout: 5) {
            if line.last == 13 { line.removeLast() }
            out += String(decoding: line, as: UTF8.self) + "\n"
        }
        return out
    }

    /// The samples of an exposition: "name{labels}" -> value, checking that each family has HELP and TYPE.
    func parse(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var typed = Set<String>(), helped = Set<String>()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") { helped.insert(String(line.dropFirst(7).prefix { $0 != " " })); continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                #expect(parts.count == 2 && ["counter", "gauge", "histogram"].contains(String(parts[1])), "\(line)")
                typed.insert(String(parts[0]))
                continue
            }
            guard let space = line.lastIndex(of: " ") else { throw TestFailure("bad sample line: \(line)") }
            let key = String(line[..<space])
            guard let value = Double(line[line.index(after: space)...]) else { throw TestFailure("bad value: \(line)") }
            let name = String(key.prefix { $0 != "{" })
            let family = ["_bucket", "_sum", "_count"].reduce(name) { n, s in
                n.hasSuffix(s) && typed.contains(String(n.dropLast(s.count))) ? String(n.dropLast(s.count)) : n
            }
            #expect(typed.contains(family) && helped.contains(family), "sample \(key) (family \(family)) has no HELP/TYPE")
            samples[key] = value
        }
        return samples
    }

    func scrape() throws -> [String: Double] {
        let response = try http("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(response.hasPrefix("HTTP/1.1 200 OK"), "\(response.prefix(200))")
        #expect(response.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        let lines = response.split(separator: "\n", omittingEmptySubsequences: false)
        guard let blank = lines.firstIndex(of: "") else { throw TestFailure("no body") }
        let body = lines[(blank + 1)...].joined(separator: "\n")
        return try parse(body)
    }

    @Test func metricsEndpointFiguresArePresentAndMoveUnderLoad() throws {
        let before = try scrape()
        for name in ["hearth_connections", "hearth_listeners", "hearth_shared_views", "hearth_coalescing_subscribers",
                     "hearth_pending_commits", "hearth_reads_in_flight", "hearth_commits_total", "hearth_commit_batches_total",
                     "hearth_cache_hits_total", "hearth_cache_misses_total", "hearth_store_bytes", "hearth_seq",
                     "hearth_oldest_resumable_seq", "hearth_uptime_seconds", "process_resident_memory_bytes",
                     "process_cpu_seconds_total", "hearth_commit_duration_seconds_count", "hearth_commit_batch_size_count",
                     "hearth_build_info{version=\"0.1.0\"}"] {
            #expect(before[name] != nil, "missing \(name)")
        }
        #expect(before["process_resident_memory_bytes"]! > 1_000_000)

        let c = try daemon.connect()
        let listener = try daemon.connect()
        #expect(try listener.request(#"{"op":"listen","path":"m/1","id":"l"}"#).isOK)
        for i in 0..<50 { #expect(try c.request(#"{"op":"set","path":"m/\#(i)","data":{"n":\#(i)}}"#).isOK) }
        for i in 0..<50 { #expect(try c.request(#"{"op":"get","path":"m/\#(i)"}"#).isOK) }
        _ = try c.request(#"{"op":"nope"}"#)
        let after = try scrape()
        #expect(after["hearth_requests_total{op=\"set\"}"]! - (before["hearth_requests_total{op=\"set\"}"] ?? 0) == 50)
        #expect(after["hearth_requests_total{op=\"get\"}"]! - (before["hearth_requests_total{op=\"get\"}"] ?? 0) == 50)
        #expect(after["hearth_request_duration_seconds_count{op=\"get\"}"]! >= 50)
        #expect(after["hearth_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"}"] == after["hearth_request_duration_seconds_count{op=\"get\"}"])
        #expect(after["hearth_commits_total"]! - before["hearth_commits_total"]! >= 50)
        // The applier takes the groups into SQLite behind the commit log, several per transaction.
        #expect(after["hearth_applier_stalled"] == 0)
        #expect(after["hearth_applier_transactions_total"]! <= after["hearth_applier_groups_total"]!)
        // The commit log's pace and bound: 50 small writes come nowhere near either.
        for name in ["hearth_applier_paced_groups_total", "hearth_applier_paced_seconds_total",
                     "hearth_applier_blocked_groups_total", "hearth_applier_blocked_seconds_total"] {
            #expect(after[name] == 0, "\(name)")
        }
        // The write-back pacer's counters are there; nothing failed.
        #expect(after["hearth_writeback_files_total"] != nil)
        #expect(after["hearth_writeback_failures_total"] == 0)
        #expect(after["hearth_commit_duration_seconds_count"]! > before["hearth_commit_duration_seconds_count"]!)
        #expect(after["hearth_seq"]! >= before["hearth_seq"]! + 50)
        #expect(after["hearth_connections"]! >= 2)
        #expect(after["hearth_listeners"]! == 1)
        #expect(after["hearth_malformed_requests_total"]! >= 1)
        #expect(after["hearth_cache_hits_total"]! + after["hearth_cache_misses_total"]! > before["hearth_cache_hits_total"]! + before["hearth_cache_misses_total"]!)
        #expect(after["process_cpu_seconds_total"]! >= before["process_cpu_seconds_total"]!)
        // Buckets are cumulative.
        var last = 0.0
        for (k, v) in after.filter({ $0.key.hasPrefix("hearth_request_duration_seconds_bucket{op=\"get\"") && !$0.key.contains("+Inf") })
            .sorted(by: { Double($0.key.split(separator: "\"")[3])! < Double($1.key.split(separator: "\"")[3])! }) {
            #expect(v >= last, "\(k)")
            last = v
        }
    }

    /// The metrics port is bound with the client port, before the data directory is touched: a taken one
    /// stops the start and changes nothing.
    @Test func aTakenMetricsPortStopsTheStartBeforeTheDataDirectory() throws {
        let taken = metricsPort          // held by this suite's daemon
        let dir = NSTemporaryDirectory() + "hearth-metrics-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dir, "--metrics-port", String(taken)])
        #expect(r.status == 2)
        #expect(r.stderr.contains("cannot listen for metrics on 127.0.0.1:\(taken)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir), "nothing is created")
    }

    @Test func statsOpAnswersEveryFigure() throws {
        let c = try daemon.connect()
        for i in 0..<20 { #expect(try c.request(#"{"op":"set","path":"s/\#(i)","data":{"n":\#(i)}}"#).isOK) }
        for _ in 0..<20 { #expect(try c.request(#"{"op":"get","path":"s/1"}"#).isOK) }
        let s = try c.request(#"{"op":"stats","id":1}"#)
        #expect(s.isOK)
        for k in ["version", "uptimeSeconds", "connections", "listeners", "sharedViews", "coalescingSubscribers", "commits",
                  "queues", "cache", "store", "process", "ops", "malformedRequests", "ttlDeleted", "jobs"] {
            #expect(s[k] != nil, "stats lacks \(k)")
        }
        let commits = s["commits"] as! [String: Any]
        #expect((commits["total"] as! Int) >= 20)
        for k in ["perSecond", "batches", "batchSizeMean", "batchSizeP99", "durableP50Micros", "durableP99Micros", "durableHistogram"] {
            #expect(commits[k] != nil, "commits lacks \(k)")
        }
        let get = (s["ops"] as! [String: Any])["get"] as! [String: Any]
        #expect(get["count"] as? Int == 20)
        #expect((get["p99Micros"] as! Int) >= (get["p50Micros"] as! Int))
        #expect((get["p50Micros"] as! Int) > 0)
        let cache = s["cache"] as! [String: Any]
        #expect((cache["hits"] as! Int) >= 19, "the same document read 20 times: \(cache)")
        let store = s["store"] as! [String: Any]
        #expect((store["bytesOnDisk"] as! Int) > 0)
        #expect((store["seq"] as! Int) >= 20)
    }

    /// A scrape still open when the daemon is told to stop (a Prometheus scrape at shutdown) is aborted, and
    /// the daemon stops cleanly: its connection's close, which completes after the endpoint is gone, calls
    /// nothing back.
    @Test func aScrapeOpenAtShutdownDoesNotStopTheDaemonUncleanly() throws {
        let unfinished = try WireClient(port: metricsPort)
        try unfinished.sendRaw(Array("GET /metr".utf8))
        let answered = try WireClient(port: metricsPort)
        try answered.sendRaw(Array("GET /metrics HTTP/1.1\r\n\r\n".utf8))
        _ = try answered.readLineBytes(timeout: 5)                    // its answer is under way
        #expect(try daemon.connect().request(#"{"op":"ping"}"#).isOK)   // both are accepted by now
        let status = daemon.stop()
        #expect(status == 0, "exit status \(status): \(daemon.log.suffix(600))")
        #expect(daemon.log.contains("hearthd info: stopped"))
        #expect(!daemon.log.contains("Fatal error"))
    }

    @Test func badHTTPRequestsAreAnsweredWithAnErrorStatus() throws {
        #expect(try http("GET /other HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        #expect(try http("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
        #expect(try http("GARBAGE\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        #expect(try http("GET  /metrics HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        #expect(try http("get /metrics HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        #expect(try http("GET /metrics HTTP/2.0\r\n\r\n").hasPrefix("HTTP/1.1 505 "))
        #expect(try http("GET /metrics HTTP/1.1\r\n" + String(repeating: "X-Pad: aaaaaaaaaaaaaaaa\r\n", count: 600)).hasPrefix("HTTP/1.1 431 "))
        #expect(try http("\u{16}\u{03}\u{01}\u{00}\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        let head = try http("HEAD /metrics HTTP/1.0\n\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK"))
        #expect(!head.contains("# HELP"))
        #expect(try http("GET /metrics?x=1 HTTP/1.1\r\n\r\n").contains("# TYPE hearth_connections gauge"))
        // The daemon still serves its clients.
        #expect(try daemon.connect().request(#"{"op":"ping"}"#).isOK)
    }
}
