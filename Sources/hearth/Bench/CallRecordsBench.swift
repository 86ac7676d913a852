#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel

/// `hearth bench callrecords`: the customer screen. Setup creates the composite index (customerId asc,
/// callDate desc) on `call_records`, waits until `index list` shows it ready, and loads `--preload` records
/// over `--keys` customers. Measured: `--connections` x `--pipeline` requests, `--read-percent` of them
/// (default 80) the customer query (where customerId == X orderBy callDate desc limit 20), the rest
/// appends of a call record (set with customerId and callDate) for a random customer.
final class CallRecordsBench {
    let o: BenchOptions
    let loop: EventLoop
    var queries = 0
    var appends = 0
    var errors: [String: Int] = [:]
    var queryLatency = LatencyHistogram()
    var appendLatency = LatencyHistogram()
    var measuring = false
    var stopped = false
    var random: FastRandom
    var seq = 0
    let baseMicros = Workload.realtimeMicros()

    init(_ o: BenchOptions) throws {
        self.o = o
        loop = try EventLoop()
        random = FastRandom(seed: o.seed &* 0x2545_F491)
    }

    static func run(_ o: BenchOptions) throws -> Int32 { try CallRecordsBench(o).execute() }

    private func customer(_ k: UInt64) -> String { "c" + Workload.pad(Int(k), 5) }

    private func callDate() -> String {
        // Distinct, increasing timestamps, one microsecond apart from now on.
        seq += 1
        let t = Timestamp(micros: baseMicros + Int64(seq))
        return #"{"$timestamp":"\#(t)"}"#
    }

    private func record(_ k: UInt64) -> String {
        seq += 1
        let d = callDate()
        return #"{"op":"set","path":"call_records/r\#(seq)","data":{"customerId":"\#(customer(k))","callDate":\#(d),"durationSec":\#(random.below(3600)),"agent":"a\#(random.below(50))","outcome":"resolved"}}"#
    }

    func execute() throws -> Int32 {
        let serverPID = o.serverPID ?? ProcStats.listeningPID(port: o.port)
        let (clients, failure) = Workload.connect(loop, o, o.connections)
        if let failure { Console.error("error: \(failure)"); return ExitCode.connection }
        let customers = UInt64(max(1, min(o.keys, 99_999)))
        let c0 = clients[0]
        let created = Workload.call(loop, c0, #"{"op":"index","action":"create","collection":"call_records","fields":[["customerId","asc"],["callDate","desc"]]}"#)
        if !created.contains(#""ok":true"#) && !created.contains("ALREADY_EXISTS") { Console.error("error: index create: \(created)"); return ExitCode.serverError }
        let t0 = loop.hrtimeNanos()
        var ready = false
        while !ready {
            let list = Workload.call(loop, c0, #"{"op":"index","action":"list"}"#)
            ready = list.contains(#""state":"ready""#) && list.contains("callDate")
            if !ready {
                var wake = false
                _ = loop.timer(after: 20) { wake = true }
                while !wake { _ = loop.runOnce(nowait: false) }
            }
            if loop.hrtimeNanos() - t0 > 60_000_000_000 { Console.error("error: index not ready after 60 s"); return ExitCode.serverError }
        }
        let indexMs = Double(loop.hrtimeNanos() - t0) / 1e6
        // Preload, 500 per commit, pipelined on one connection.
        var loaded = 0
        var loadFailure: String?
        c0.onResponse = { kind, line, _, _ in if kind != .ok { loadFailure = String(decoding: line, as: UTF8.self) } }
        while loaded < o.preload {
            let end = min(o.preload, loaded + 500)
            let writes = (loaded..<end).map { _ in record(random.below(customers)) }
            c0.send(#"{"op":"commit","writes":["# + writes.joined(separator: ",") + "]}", now: 0)
            loaded = end
        }
        while c0.inFlight > 0 && loadFailure == nil { _ = loop.runOnce(nowait: false) }
        if let loadFailure { Console.error("error: preload: \(loadFailure)"); return ExitCode.serverError }
        if !o.json { Console.error("callrecords: index ready in \(NumberText.fixed(indexMs, 0)) ms; \(o.preload) records preloaded over \(customers) customers") }

        var cpuStart = Workload.cpu(serverPID)
        for c in clients {
            c.onResponse = { [unowned self, unowned c] kind, line, tag, sent in
                let now = self.loop.hrtimeNanos()
                if self.measuring && !self.stopped {
                    if kind == .ok {
                        if tag == 0 { self.queries += 1; self.queryLatency.record(nanos: now - sent) } else { self.appends += 1; self.appendLatency.record(nanos: now - sent) }
                    } else { self.errors[Workload.errorCode(line), default: 0] += 1 }
                }
                self.send(c, customers)
            }
            for _ in 0..<o.pipeline { send(c, customers) }
        }
        _ = loop.timer(after: UInt64(o.warmup * 1000)) { [unowned self] in
            self.measuring = true
            cpuStart = Workload.cpu(serverPID)
        }
        _ = loop.timer(after: UInt64((o.warmup + o.duration) * 1000)) { [unowned self] in
            self.stopped = true
            self.loop.stop()
        }
        loop.run()
        let server = Workload.serverLine(serverPID, cpuStart: cpuStart, seconds: o.duration)
        for c in clients { c.connection.abort() }
        let text = """
        hearth bench callrecords  hearthd \(o.target)  \(o.connections) connection(s) x \(o.pipeline) in flight, \(o.readPercent)% queries, \(customers) customers, \(NumberText.grouped(o.preload)) records preloaded
          total       \(NumberText.grouped(Int(Double(queries + appends) / o.duration))) requests/s
          queries     \(NumberText.grouped(queries)) = \(NumberText.grouped(Int(Double(queries) / o.duration))) /s   \(Workload.latencyLine(queryLatency))
          appends     \(NumberText.grouped(appends)) = \(NumberText.grouped(Int(Double(appends) / o.duration))) /s   \(Workload.latencyLine(appendLatency))
          errors      \(Workload.errorsText(errors))
          server      \(server)
        """
        if o.json {
            var r = WorkloadReport(o, connections: o.connections, requests: queries + appends, errors: errors)
            var both = queryLatency
            both.merge(appendLatency)
            r.histogram("latency_us", both)
            r.server(serverPID, cpuStart: cpuStart, seconds: o.duration)
            r.int("customers", Int(customers))
            r.int("preload", o.preload)
            r.int("read_percent", o.readPercent)
            r.int("queries", queries)
            r.histogram("query_latency_us", queryLatency)
            r.int("appends", appends)
            r.histogram("append_latency_us", appendLatency)
            r.double("index_ready_ms", indexMs.rounded())
            Console.line(r.text())
        } else {
            Console.line(text)
        }
        return errors.isEmpty ? ExitCode.ok : ExitCode.serverError
    }

    private func send(_ c: WorkloadClient, _ customers: UInt64) {
        guard !stopped else { return }
        let k = random.below(customers)
        if random.below(100) < UInt64(o.readPercent) {
            c.send(#"{"op":"query","collection":"call_records","where":[["customerId","==","\#(customer(k))"]],"orderBy":[["callDate","desc"]],"limit":20}"#,
                   tag: 0, now: loop.hrtimeNanos())
        } else {
            c.send(record(k), tag: 1, now: loop.hrtimeNanos())
        }
    }
}
