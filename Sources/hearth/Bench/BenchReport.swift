import HearthProtocol

/// The results of a bench run, rendered for people (`text()`) or as one JSON object (`json()`).
/// Latencies are in microseconds in JSON and milliseconds in text; CPU percentages are of one core.
struct BenchReport {
    let options: BenchOptions
    let serverPID: Int32?
    var load: PhaseOutcome?
    var main = PhaseOutcome()

    static let percentiles: [(name: String, p: Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)]

    var mode: String { options.rate == nil ? "closed-loop" : "fixed-rate" }

    var serverCPU: (seconds: Double, percent: Double)? {
        guard let a = main.serverStart, let b = main.serverEnd, main.sampledWall > 0 else { return nil }
        let used = b.cpuSeconds - a.cpuSeconds
        return (used, used / main.sampledWall * 100)
    }

    func text() -> String {
        let r = main.result
        let threads = max(1, min(options.threads, options.connections))
        var lines = ["hearth bench \(options.scenario)  \(options.target)\(options.tls != nil ? " (TLS)" : "")  \(options.connections) connections x \(options.pipeline) in flight, \(threads) thread\(threads == 1 ? "" : "s"), \(mode)"
                     + (options.rate.map { " at \(NumberText.grouped(Int($0))) req/s" } ?? "")]
        if let load {
            lines.append("  load        \(NumberText.grouped(options.keys)) documents of \(options.docSize) bytes in \(NumberText.fixed(load.elapsed, 2)) s (\(NumberText.grouped(Int(load.opsPerSecond))) sets/s)")
        }
        let warm = options.warmup > 0 ? " after \(NumberText.fixed(options.warmup, 1)) s warmup" : ""
        lines.append("  measured    \(NumberText.grouped(r.measured)) requests in \(NumberText.fixed(main.elapsed, 2)) s\(warm)")
        lines.append("  throughput  \(NumberText.grouped(Int(main.opsPerSecond.rounded()))) ops/s")
        lines.append("  latency     " + latencyText(r.latency))
        if options.rate != nil { lines.append("  service     " + latencyText(r.service) + "  (from actual send)") }
        if r.delivery.total > 0 { lines.append("  delivery    " + latencyText(r.delivery)) }
        let errorText = BenchRunner.describe(r)
        lines.append("  errors      " + (errorText.isEmpty ? "none" : errorText))
        if r.notFound > 0 { lines.append("  not found   \(NumberText.grouped(r.notFound)) gets found no document") }
        if let pid = serverPID {
            if let cpu = serverCPU, let end = main.serverEnd {
                lines.append("  server      pid \(pid): \(NumberText.fixed(cpu.percent, 1))% CPU (\(NumberText.fixed(cpu.seconds, 2)) s in \(NumberText.fixed(main.sampledWall, 2)) s, \(perRequest(cpu.seconds)) µs per request), RSS \(NumberText.mebibytes(end.rssBytes)) (peak \(NumberText.mebibytes(end.peakRSSBytes)))")
            } else {
                lines.append("  server      pid \(pid): gone by the end of the run (exited), or /proc not readable")
            }
        } else {
            lines.append("  server      not found on this machine (pass --server-pid for CPU and RSS)")
        }
        if main.sampledWall > 0 {
            lines.append("  client      \(NumberText.fixed(main.clientCPU / main.sampledWall * 100, 1))% CPU (\(NumberText.fixed(main.clientCPU, 2)) s, \(perRequest(main.clientCPU)) µs per request)")
        }
        return lines.joined(separator: "\n")
    }

    /// CPU microseconds per measured request, one decimal.
    private func perRequest(_ seconds: Double) -> String {
        main.result.measured > 0 ? NumberText.fixed(seconds * 1e6 / Double(main.result.measured), 1) : "-"
    }

    private func latencyText(_ h: LatencyHistogram) -> String {
        var parts = BenchReport.percentiles.map { "\($0.name.replacingFirst("_", with: ".")) \(NumberText.millis(micros: h.percentile($0.p)))" }
        parts.append("max \(NumberText.millis(micros: h.max))")
        return parts.joined(separator: "  ") + " ms  (mean \(NumberText.fixed(h.mean / 1000, 3)))"
    }

    func json() -> String {
        let r = main.result
        var w = JSONWriter(capacity: 2048)
        w.beginObject()
        w.key("scenario"); w.string(options.scenario)
        w.key("host"); w.string(options.host)
        w.key("port"); w.int(Int64(options.port))
        w.key("tls"); w.bool(options.tls != nil)
        w.key("connections"); w.int(Int64(options.connections))
        w.key("pipeline"); w.int(Int64(options.pipeline))
        w.key("threads"); w.int(Int64(max(1, min(options.threads, options.connections))))
        w.key("mode"); w.string(mode)
        w.key("rate"); if let rate = options.rate { w.double(rate) } else { w.null() }
        w.key("warmup_s"); w.double(options.warmup)
        w.key("duration_limit_s"); w.double(options.duration)
        w.key("requests_limit"); if let n = options.requests { w.int(Int64(n)) } else { w.null() }
        w.key("keys"); w.int(Int64(options.keys))
        w.key("doc_size"); w.int(Int64(options.docSize))
        w.key("load")
        if let load {
            w.beginObject()
            w.key("documents"); w.int(Int64(options.keys))
            w.key("elapsed_s"); w.double(rounded(load.elapsed, 6))
            w.key("ops_per_sec"); w.double(load.opsPerSecond.rounded())
            w.endObject()
        } else { w.null() }
        w.key("requests"); w.int(Int64(r.measured))
        w.key("elapsed_s"); w.double(rounded(main.elapsed, 6))
        w.key("ops_per_sec"); w.double(main.opsPerSecond.rounded())
        w.key("errors"); w.int(Int64(r.errors.values.reduce(0, +)))
        w.key("error_codes")
        w.beginObject()
        for (code, n) in r.errors.sorted(by: { $0.key < $1.key }) { w.key(code); w.int(Int64(n)) }
        w.endObject()
        w.key("warmup_errors"); w.int(Int64(r.warmupErrors))
        w.key("not_found"); w.int(Int64(r.notFound))
        w.key("unanswered"); w.int(Int64(r.unanswered))
        w.key("lost_connections"); w.int(Int64(r.lostConnections))
        w.key("latency_us"); histogram(r.latency, &w)
        if options.rate != nil { w.key("service_latency_us"); histogram(r.service, &w) }
        if r.delivery.total > 0 { w.key("delivery_latency_us"); histogram(r.delivery, &w) }
        w.key("server")
        if let pid = serverPID {
            w.beginObject()
            w.key("pid"); w.int(Int64(pid))
            if let cpu = serverCPU, let end = main.serverEnd {
                w.key("cpu_seconds"); w.double(rounded(cpu.seconds, 3))
                w.key("cpu_percent"); w.double(rounded(cpu.percent, 1))
                w.key("cpu_us_per_request"); w.double(r.measured > 0 ? rounded(cpu.seconds * 1e6 / Double(r.measured), 2) : 0)
                w.key("rss_bytes"); w.int(Int64(end.rssBytes))
                w.key("peak_rss_bytes"); w.int(Int64(end.peakRSSBytes))
            }
            w.endObject()
        } else { w.null() }
        w.key("client")
        w.beginObject()
        w.key("cpu_seconds"); w.double(rounded(main.clientCPU, 3))
        w.key("cpu_percent"); w.double(main.sampledWall > 0 ? rounded(main.clientCPU / main.sampledWall * 100, 1) : 0)
        w.key("cpu_us_per_request"); w.double(r.measured > 0 ? rounded(main.clientCPU * 1e6 / Double(r.measured), 2) : 0)
        w.endObject()
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    private func rounded(_ v: Double, _ decimals: Int) -> Double {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return (v * scale).rounded() / scale
    }

    private func histogram(_ h: LatencyHistogram, _ w: inout JSONWriter) { BenchReport.histogram(h, &w) }

    /// A latency histogram as `{"min":..,"mean":..,"p50":..,"p90":..,"p99":..,"p99_9":..,"max":..,"count":..}` (µs).
    static func histogram(_ h: LatencyHistogram, _ w: inout JSONWriter) {
        w.beginObject()
        w.key("min"); w.int(Int64(h.minimum))
        w.key("mean"); w.double((h.mean * 10).rounded() / 10)
        for (name, p) in BenchReport.percentiles { w.key(name); w.int(Int64(h.percentile(p))) }
        w.key("max"); w.int(Int64(h.max))
        w.key("count"); w.int(Int64(h.total))
        w.endObject()
    }
}
