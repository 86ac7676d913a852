import HearthProtocol

/// `--json` for the scenarios with runners of their own (`listen`, `timeline`, `departments`,
/// `callrecords`): one JSON object with the fields of `BenchReport.json()` that apply to them (scenario,
/// host, port, tls, connections, pipeline, warmup_s, duration_limit_s, elapsed_s, requests, ops_per_sec,
/// errors, error_codes, latency_us, server), then the scenario's own fields. Latencies in microseconds.
struct WorkloadReport {
    private var w = JSONWriter(capacity: 2048)

    /// Starts the object with the fields every scenario has. `requests` is what the scenario counts as its
    /// operations (posts, joins, writes...), measured over `o.duration` seconds.
    init(_ o: BenchOptions, port: Int? = nil, connections: Int, requests: Int, errors: [String: Int]) {
        w.beginObject()
        w.key("scenario"); w.string(o.scenario)
        w.key("host"); w.string(o.host)
        w.key("port"); w.int(Int64(port ?? o.port))
        w.key("tls"); w.bool(o.tls != nil)
        w.key("connections"); w.int(Int64(connections))
        w.key("pipeline"); w.int(Int64(o.pipeline))
        w.key("warmup_s"); w.double(o.warmup)
        w.key("duration_limit_s"); w.double(o.duration)
        w.key("elapsed_s"); w.double(o.duration)
        w.key("requests"); w.int(Int64(requests))
        w.key("ops_per_sec"); w.double(o.duration > 0 ? (Double(requests) / o.duration).rounded() : 0)
        w.key("errors"); w.int(Int64(errors.values.reduce(0, +)))
        w.key("error_codes")
        w.beginObject()
        for (code, n) in errors.sorted(by: { $0.key < $1.key }) { w.key(code); w.int(Int64(n)) }
        w.endObject()
    }

    mutating func int(_ key: String, _ v: Int) { w.key(key); w.int(Int64(v)) }
    mutating func double(_ key: String, _ v: Double) { w.key(key); w.double(v) }
    mutating func string(_ key: String, _ v: String) { w.key(key); w.string(v) }
    mutating func bool(_ key: String, _ v: Bool) { w.key(key); w.bool(v) }
    mutating func histogram(_ key: String, _ h: LatencyHistogram) { w.key(key); BenchReport.histogram(h, &w) }

    /// `"server":{"pid":..,"cpu_percent":..,"rss_bytes":..}` over the measured `seconds` from `cpuStart`, or
    /// null when the daemon's process was not found on this machine.
    mutating func server(_ pid: Int32?, cpuStart: Double, seconds: Double) {
        w.key("server")
        guard let pid, let s = ProcStats.sample(pid: pid) else { return w.null() }
        w.beginObject()
        w.key("pid"); w.int(Int64(pid))
        w.key("cpu_percent"); w.double(seconds > 0 ? ((s.cpuSeconds - cpuStart) / seconds * 1000).rounded() / 10 : 0)
        w.key("rss_bytes"); w.int(Int64(s.rssBytes))
        w.key("peak_rss_bytes"); w.int(Int64(s.peakRSSBytes))
        w.endObject()
    }

    mutating func text() -> String {
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
