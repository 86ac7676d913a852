#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel

/// `hearth bench listen`: fan-out. `--listeners` subscriber connections each hold one query listener that
/// matches every written document; `--connections` writers keep `--pipeline` sets in flight; the report gives
/// deliveries/s and two latencies to the time the pushed line is read: from the commit (the document's
/// updateTime, wall clock) and from the write's send (a `sent` field the writer puts in the document, the
/// monotonic clock). With `--redis-port P` the same shape runs against Redis pub/sub (SUBSCRIBE on every
/// subscriber, PUBLISH from the writers; latency from the publish's send time, as `sent` for the daemon).
/// With `--idle`, the subscribers are idle listeners on a collection nobody writes, held for `--duration`
/// while the daemon's memory per listener connection is reported (run a write bench beside it).
final class ListenBench {
    let o: BenchOptions
    let loop: EventLoop
    var subscribers: [TCPConnection] = []
    var writers: [TCPConnection] = []
    var ready = 0
    var deliveries = 0
    var writes = 0
    var latency = LatencyHistogram()
    /// Hearth only: from the write's send (its `sent` field) to the delivery, as Redis's `latency` is.
    var sentLatency = LatencyHistogram()
    var measuring = false
    var stopped = false
    var counter: UInt64 = 0
    var buffers: [ObjectIdentifier: [UInt8]] = [:]
    var redisState: [ObjectIdentifier: Int] = [:]
    var gotInitial: Set<ObjectIdentifier> = []
    static let updateTimeKey = Array(#""updateTime":""#.utf8)
    static let sentKey = Array(#""sent":"#.utf8)

    init(_ o: BenchOptions) throws {
        self.o = o
        loop = try EventLoop()
    }

    static func run(_ o: BenchOptions) throws -> Int32 {
        let b = try ListenBench(o)
        return try b.execute()
    }

    private var redis: Bool { o.redisPort != nil }
    private var port: Int { o.redisPort ?? o.port }
    /// Redis gets no hello.
    private var credentials: Credentials { redis ? .anonymous : o.credentials }

    /// A connection to the daemon, or to Redis with --redis-port (TLS with --tls, for both).
    private func connect(_ done: @escaping (Result<TCPConnection, BenchConnectFailure>) -> Void) {
        o.connect(on: loop, port: o.redisPort, credentials: credentials, done)
    }

    func execute() throws -> Int32 {
        let serverPID = o.serverPID ?? ProcStats.listeningPID(port: port)
        let before = serverPID.flatMap { ProcStats.sample(pid: $0) }
        var failure: String?
        let subscriberConnections = o.idle ? min(o.connections, o.listeners) : o.listeners
        for _ in 0..<subscriberConnections {
            connect { [unowned self] r in
                switch r {
                case .failure(let e): failure = e.message; self.loop.stop()
                case .success(let c): self.subscribed(c)
                }
            }
        }
        // Until every subscriber has its listener (or subscription) confirmed.
        let deadline = loop.timer(after: 60_000) { [unowned self] in failure = failure ?? "subscribing timed out"; self.loop.stop() }
        while failure == nil && ready < (o.idle ? (o.listeners / max(1, min(o.connections, o.listeners))) * subscriberConnections : o.listeners) {
            _ = loop.runOnce(nowait: false)
        }
        deadline.cancel()
        if let failure { Console.error("error: \(failure)"); return ExitCode.connection }
        let subscribed = serverPID.flatMap { ProcStats.sample(pid: $0) }
        var cpuStart = subscribed?.cpuSeconds ?? 0

        if o.idle {
            let grown = Double((subscribed?.rssBytes ?? 0) - (before?.rssBytes ?? 0))
            if o.json {
                var r = WorkloadReport(o, port: port, connections: subscriberConnections, requests: 0, errors: [:])
                r.server(serverPID, cpuStart: cpuStart, seconds: 0)
                r.bool("idle", true)
                r.int("listeners", o.listeners)
                r.int("rss_before_bytes", before?.rssBytes ?? 0)
                r.int("rss_subscribed_bytes", subscribed?.rssBytes ?? 0)
                r.int("bytes_per_listener", Int(grown / Double(o.listeners)))
                r.int("bytes_per_connection", Int(grown / Double(subscriberConnections)))
                Console.line(r.text())
            } else {
                Console.line("idle: \(o.listeners) listeners on \(subscriberConnections) connections; daemon RSS \(mib(before?.rssBytes)) -> \(mib(subscribed?.rssBytes)) MiB: \(Int(grown / Double(o.listeners))) bytes per listener, \(Int(grown / Double(subscriberConnections))) bytes per connection; holding for \(o.duration) s")
            }
            _ = loop.timer(after: UInt64(o.duration * 1000)) { [unowned self] in self.finish() }
            loop.run()
            return ExitCode.ok
        }

        for _ in 0..<o.connections {
            o.connect(on: loop, port: o.redisPort, to: redis ? nil : o.writerAddress, credentials: credentials) { [unowned self] r in
                let c: TCPConnection
                switch r {
                case .failure(let e): failure = "writer: \(e.message)"; self.loop.stop(); return
                case .success(let connection): c = connection
                }
                self.writers.append(c)
                c.onRead = { [unowned self] bytes in self.writerRead(c, bytes) }
                c.startReading()
                for _ in 0..<self.o.pipeline { self.write(on: c) }
            }
        }
        _ = loop.timer(after: UInt64(o.warmup * 1000)) { [unowned self] in
            self.measuring = true
            self.deliveries = 0
            self.writes = 0
            cpuStart = serverPID.flatMap { ProcStats.sample(pid: $0) }?.cpuSeconds ?? 0
        }
        _ = loop.timer(after: UInt64((o.warmup + o.duration) * 1000)) { [unowned self] in self.finish() }
        loop.run()
        if let failure { Console.error("error: \(failure)"); return ExitCode.connection }
        let after = serverPID.flatMap { ProcStats.sample(pid: $0) }
        let cpu = (after?.cpuSeconds ?? 0) - cpuStart
        let us = { (p: Double) in NumberText.fixed(Double(self.latency.percentile(p)) / 1000, 3) }
        let sentUs = { (p: Double) in NumberText.fixed(Double(self.sentLatency.percentile(p)) / 1000, 3) }
        let sentLine = redis ? "" : "\n  delivery    p50 \(sentUs(50))  p90 \(sentUs(90))  p99 \(sentUs(99))  max \(sentUs(100)) ms (write sent -> received)"

        let text = """
        hearth bench listen  \(redis ? "redis pub/sub 127.0.0.1:\(port)" : "hearthd \(o.target)")\(o.tls != nil ? " (TLS)" : "")  \(o.listeners) subscribers, \(o.connections) writer(s)\(o.writerAddress.map { " on \($0.host):\($0.port)" } ?? "") x \(o.pipeline) in flight
          writes      \(NumberText.grouped(writes)) in \(o.duration) s = \(NumberText.grouped(Int(Double(writes) / o.duration))) /s
          deliveries  \(NumberText.grouped(deliveries)) = \(NumberText.grouped(Int(Double(deliveries) / o.duration))) /s
          delivery    p50 \(us(50))  p90 \(us(90))  p99 \(us(99))  max \(us(100)) ms (\(redis ? "publish sent" : "commit") -> received)\(sentLine)
          server      \(serverPID.map { pid in after == nil ? "pid \(pid): gone by the end of the run (exited), or /proc not readable" : "pid \(pid): \(NumberText.fixed(cpu / o.duration * 100, 1))% CPU, RSS \(mib(after?.rssBytes)) MiB" } ?? "not found")
        """
        if o.json {
            var r = WorkloadReport(o, port: port, connections: o.connections, requests: writes, errors: [:])
            r.histogram("latency_us", latency)
            if !redis { r.histogram("sent_latency_us", sentLatency) }
            r.server(serverPID, cpuStart: cpuStart, seconds: o.duration)
            r.string("target", redis ? "redis" : "hearthd")
            r.int("listeners", o.listeners)
            r.int("deliveries", deliveries)
            r.double("deliveries_per_sec", (Double(deliveries) / o.duration).rounded())
            Console.line(r.text())
        } else {
            Console.line(text)
        }
        return ExitCode.ok
    }

    private func mib(_ b: Int?) -> String { NumberText.fixed(Double(b ?? 0) / 1_048_576, 1) }

    private func finish() {
        stopped = true
        for c in subscribers + writers { c.abort() }
        loop.stop()
    }

    private func subscribed(_ c: TCPConnection) {
        subscribers.append(c)
        let id = ObjectIdentifier(c)
        c.onRead = { [unowned self] bytes in self.subscriberRead(c, id, bytes) }
        c.startReading()
        if redis {
            c.send("SUBSCRIBE \(o.collection)\r\n")
        } else if o.idle {
            // --listeners spread over --connections; each on its own customer of a collection nobody writes.
            let perConnection = o.listeners / max(1, min(o.connections, o.listeners))
            var lines = ""
            for k in 0..<perConnection {
                lines += #"{"op":"listen","query":{"collection":"\#(o.collection)_idle","where":[["customerId","==","idle-\#(subscribers.count)-\#(k)"]]}}"# + "\n"
            }
            c.send(lines)
        } else {
            c.send(#"{"op":"listen","query":{"collection":"\#(o.collection)","where":[["topic","==","fanout"]]}}"# + "\n")
        }
    }

    private func write(on c: TCPConnection) {
        guard !stopped else { return }
        counter += 1
        if redis {
            let payload = String(loop.hrtimeNanos())
            c.send("*3\r\n$7\r\nPUBLISH\r\n$\(o.collection.utf8.count)\r\n\(o.collection)\r\n$\(payload.utf8.count)\r\n\(payload)\r\n")
        } else {
            c.send(#"{"op":"set","path":"\#(o.collection)/d\#(counter % 100)","data":{"topic":"fanout","n":\#(counter),"sent":\#(loop.hrtimeNanos())}}"# + "\n")
        }
    }

    private func writerRead(_ c: TCPConnection, _ bytes: UnsafeRawBufferPointer) {
        // One reply per write (a JSON line, or a RESP integer line for PUBLISH).
        let n = bytes.reduce(0) { $1 == 10 ? $0 + 1 : $0 }
        if measuring { writes += n }
        for _ in 0..<n { write(on: c) }
    }

    private func subscriberRead(_ c: TCPConnection, _ id: ObjectIdentifier, _ bytes: UnsafeRawBufferPointer) {
        let nowNanos = loop.hrtimeNanos()
        var pending = buffers.removeValue(forKey: id) ?? []
        var start = 0
        func scan(_ body: UnsafeRawBufferPointer) -> Int {
            var lineStart = 0
            for i in 0..<body.count where body[i] == 10 {
                let line = UnsafeRawBufferPointer(rebasing: body[lineStart..<i])
                if redis { redisLine(id, line, nowNanos) } else { hearthLine(id, line) }
                lineStart = i + 1
            }
            return lineStart
        }
        if pending.isEmpty {
            start = scan(bytes)
            if start < bytes.count { buffers[id] = Array(bytes[start...]) }
        } else {
            pending.append(contentsOf: bytes)
            start = pending.withUnsafeBytes { scan($0) }
            if start < pending.count { buffers[id] = Array(pending[start...]) }
        }
    }

    /// A pushed snapshot line: the first per subscriber is its initial snapshot; later ones are deliveries
    /// whose document's updateTime (the commit time) gives the latency.
    private func hearthLine(_ id: ObjectIdentifier, _ line: UnsafeRawBufferPointer) {
        guard line.count > 6, line[2] == UInt8(ascii: "s"), line[3] == UInt8(ascii: "u") else { return }   // {"sub"...
        if o.idle { ready += 1; return }
        if !gotInitial.contains(id) { gotInitial.insert(id); ready += 1; return }
        guard measuring else { return }
        deliveries += 1
        if let at = Workload.find(ListenBench.sentKey, in: line) {
            var j = at, sent: UInt64 = 0
            while j < line.count, line[j] >= 48, line[j] <= 57 { sent = sent &* 10 &+ UInt64(line[j] - 48); j += 1 }
            let now = loop.hrtimeNanos()
            sentLatency.record(nanos: now >= sent ? now - sent : 0)
        }
        if let at = Workload.find(ListenBench.updateTimeKey, in: line), at + 27 <= line.count,
           let t = Timestamp.parse(bytes: UnsafeRawBufferPointer(rebasing: line[at..<(at + 27)])) {
            latency.record(micros: UInt64(max(0, Workload.realtimeMicros() - t.micros)))
        }
    }

    /// RESP pushes: `*3 $9 subscribe $N chan :1` confirms; `*3 $7 message $N chan $M payload` delivers.
    private func redisLine(_ id: ObjectIdentifier, _ line: UnsafeRawBufferPointer, _ now: UInt64) {
        let text = String(decoding: line.count > 0 && line[line.count - 1] == 13 ? UnsafeRawBufferPointer(rebasing: line[0..<(line.count - 1)]) : line, as: UTF8.self)
        var state = redisState[id] ?? 0
        if text == "subscribe" { ready += 1 }
        if text == "message" { state = 1 } else if state > 0 { state += 1 }
        if state == 5 {
            state = 0
            if measuring, let sent = UInt64(text) {
                deliveries += 1
                latency.record(nanos: now >= sent ? now - sent : 0)
            }
        }
        redisState[id] = state
    }
}
