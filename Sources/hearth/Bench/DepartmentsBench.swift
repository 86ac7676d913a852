#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel

/// `hearth bench departments`: joins. Setup creates `--departments` departments (memberCount 0). Each of
/// `--connections` connections keeps `--pipeline` commits in flight, each one join of a random user of
/// `--keys` to a random department: create `department_memberships/u<k>_d<d>` and increment
/// `departments/d<d>.memberCount`, atomically. A double join is refused with ALREADY_EXISTS (the whole
/// commit, so the counter stays exact); those are counted apart, not as errors. At the end the counters'
/// sum is checked against the memberships. Department IDs carry a tag of the run (`departments/r<tag>d7`),
/// so a run again against the same daemon starts from empty departments; the check covers all runs.
final class DepartmentsBench {
    let o: BenchOptions
    let loop: EventLoop
    var joins = 0
    var doubles = 0
    var errors: [String: Int] = [:]
    var latency = LatencyHistogram()
    var measuring = false
    var stopped = false
    var random: FastRandom
    /// `r<run>d`: the departments of this run are `<prefix><n>`.
    let prefix = "r\(Workload.runTag())d"

    init(_ o: BenchOptions) throws {
        self.o = o
        loop = try EventLoop()
        random = FastRandom(seed: o.seed &* 0x9E37_79B9)
    }

    static func run(_ o: BenchOptions) throws -> Int32 { try DepartmentsBench(o).execute() }

    func execute() throws -> Int32 {
        let serverPID = o.serverPID ?? ProcStats.listeningPID(port: o.port)
        let (clients, failure) = Workload.connect(loop, o, o.connections)
        if let failure { Console.error("error: \(failure)"); return ExitCode.connection }
        // Setup: the departments, 500 per commit.
        var d = 0
        while d < o.departments {
            let end = min(o.departments, d + 500)
            let writes = (d..<end).map { #"{"op":"set","path":"departments/\#(prefix)\#($0)","data":{"departmentId":"\#(prefix)\#($0)","departmentName":"Department \#($0)","memberCount":0}}"# }
            let r = Workload.call(loop, clients[0], #"{"op":"commit","writes":["# + writes.joined(separator: ",") + "]}")
            guard r.contains(#""ok":true"#) else { Console.error("error: setup failed: \(r)"); return ExitCode.serverError }
            d = end
        }
        if !o.json { Console.error("departments: \(o.departments) departments created (\(prefix)0...); users u0..u\(o.keys - 1)") }
        var cpuStart = Workload.cpu(serverPID)
        for c in clients {
            c.onResponse = { [unowned self, unowned c] kind, line, _, sent in
                let now = self.loop.hrtimeNanos()
                if self.measuring && !self.stopped {
                    if kind == .ok { self.joins += 1 } else {
                        let code = Workload.errorCode(line)
                        if code == "ALREADY_EXISTS" { self.doubles += 1 } else { self.errors[code, default: 0] += 1 }
                    }
                    self.latency.record(nanos: now - sent)
                }
                self.send(c)
            }
            for _ in 0..<o.pipeline { send(c) }
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
        // Drain what is still in flight before the consistency check.
        stopped = true
        var drained = false
        _ = loop.timer(after: 5000) { drained = true }
        while !drained && clients.contains(where: { $0.inFlight > 0 }) { _ = loop.runOnce(nowait: false) }
        for c in clients { c.onResponse = nil }
        let sum = Workload.call(loop, clients[0], #"{"op":"aggregate","query":{"collection":"departments"},"aggregations":{"members":{"sum":"memberCount"}}}"#)
        let count = Workload.call(loop, clients[0], #"{"op":"count","collection":"department_memberships"}"#)
        for c in clients { c.connection.abort() }
        let total = joins + doubles + errors.values.reduce(0, +)
        let text = """
        hearth bench departments  hearthd \(o.target)  \(o.connections) connection(s) x \(o.pipeline) in flight, \(NumberText.grouped(o.keys)) users x \(NumberText.grouped(o.departments)) departments
          joins       \(NumberText.grouped(joins)) in \(o.duration) s = \(NumberText.grouped(Int(Double(joins) / o.duration))) joins/s (commit: create membership + increment memberCount)
          double joins \(NumberText.grouped(doubles)) ALREADY_EXISTS (expected, not errors) = \(NumberText.grouped(Int(Double(doubles) / o.duration))) /s; all commits \(NumberText.grouped(Int(Double(total) / o.duration))) /s
          latency     \(Workload.latencyLine(latency))
          errors      \(Workload.errorsText(errors))
          check       sum(memberCount): \(sum)
                      count(memberships): \(count)
          server      \(server)
        """
        if o.json {
            var r = WorkloadReport(o, connections: o.connections, requests: joins, errors: errors)
            r.histogram("latency_us", latency)
            r.server(serverPID, cpuStart: cpuStart, seconds: o.duration)
            r.int("keys", o.keys)
            r.int("departments", o.departments)
            r.int("double_joins", doubles)
            r.string("check_sum_response", sum)
            r.string("check_count_response", count)
            Console.line(r.text())
        } else {
            Console.line(text)
        }
        return errors.isEmpty ? ExitCode.ok : ExitCode.serverError
    }

    private func send(_ c: WorkloadClient) {
        guard !stopped else { return }
        let u = random.below(UInt64(o.keys)), d = random.below(UInt64(o.departments))
        c.send(#"{"op":"commit","writes":[{"op":"create","path":"department_memberships/u\#(u)_\#(prefix)\#(d)","data":{"userId":"u\#(u)","departmentId":"\#(prefix)\#(d)","joinedAt":{"$serverTimestamp":true}}},{"op":"update","path":"departments/\#(prefix)\#(d)","data":{"memberCount":{"$increment":1}}}]}"#,
               now: loop.hrtimeNanos())
    }
}

// MARK: - callrecords
