#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel

/// One bench connection for the standalone workload runners (`timeline`, `departments`, `callrecords`):
/// sends request lines, matches responses to requests in order (each remembers its send time and a tag),
/// and hands pushed lines to `onPush`. Lines are classified by `ResponseScanner` from their first keys.
final class WorkloadClient {
    let connection: TCPConnection
    private var scanner = ResponseScanner()
    private var pendingSent: [UInt64] = []
    private var pendingTag: [Int] = []
    private var head = 0
    var onResponse: ((ResponseScanner.Kind, UnsafeRawBufferPointer, Int, UInt64) -> Void)?
    var onPush: ((UnsafeRawBufferPointer) -> Void)?
    var inFlight: Int { pendingTag.count - head }

    init(_ c: TCPConnection) {
        connection = c
        c.onRead = { [unowned self] bytes in self.read(bytes) }
        c.startReading()
    }

    func send(_ line: String, tag: Int = 0, now: UInt64) {
        pendingSent.append(now)
        pendingTag.append(tag)
        connection.send(line + "\n")
    }

    private func read(_ bytes: UnsafeRawBufferPointer) {
        scanner.feed(bytes) { kind, line in
            if kind == .push { onPush?(line); return }
            guard head < pendingTag.count else { return }
            let tag = pendingTag[head], sent = pendingSent[head]
            head += 1
            if head > 4096 && head * 2 > pendingTag.count {
                pendingTag.removeFirst(head); pendingSent.removeFirst(head); head = 0
            }
            onResponse?(kind, line, tag, sent)
        }
    }
}

/// Helpers shared by the workload runners.
enum Workload {
    /// Opens `n` connections and runs the loop until all are up (nil and a message on failure).
    static func connect(_ loop: EventLoop, _ o: BenchOptions, _ n: Int) -> ([WorkloadClient], String?) {
        var out: [WorkloadClient] = []
        var failure: String?
        for _ in 0..<n {
            BenchHello.connect(loop, host: o.host, port: o.port, credentials: o.credentials) { r in
                switch r {
                case .failure(let e): failure = e.message
                case .success(let c): out.append(WorkloadClient(c))
                }
            }
        }
        while failure == nil && out.count < n { _ = loop.runOnce(nowait: false) }
        return (out, failure)
    }

    /// Sends one request and runs the loop until its response; returns the response line.
    static func call(_ loop: EventLoop, _ c: WorkloadClient, _ line: String) -> String {
        var result: String?
        let previous = c.onResponse
        c.onResponse = { _, bytes, _, _ in result = String(decoding: bytes, as: UTF8.self) }
        c.send(line, now: loop.hrtimeNanos())
        while result == nil && c.connection.isOpen { _ = loop.runOnce(nowait: false) }
        c.onResponse = previous
        return result ?? "(connection closed)"
    }

    /// Offset just past `needle` in `line` at or after `from`, or nil.
    static func find(_ needle: [UInt8], in line: UnsafeRawBufferPointer, from: Int = 0) -> Int? {
        guard let base = line.baseAddress, from < line.count else { return nil }
        let n = needle.count
        var i = from
        while i + n <= line.count {
            guard let hit = memchr(base + i, Int32(needle[0]), line.count - n + 1 - i) else { return nil }
            let j = UnsafeRawPointer(hit) - base
            var k = 1
            while k < n && line[j + k] == needle[k] { k += 1 }
            if k == n { return j + n }
            i = j + 1
        }
        return nil
    }

    /// The `"code":"..."` of an error line.
    static func errorCode(_ line: UnsafeRawBufferPointer) -> String {
        guard let i = find(Array(#""code":""#.utf8), in: line) else { return "MALFORMED" }
        var j = i
        while j < line.count && line[j] != 34 { j += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: line[i..<j]), as: UTF8.self)
    }

    static func realtimeMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    static func ms(_ h: LatencyHistogram, _ p: Double) -> String { NumberText.fixed(Double(h.percentile(p)) / 1000, 2) }

    static func latencyLine(_ h: LatencyHistogram) -> String {
        "p50 \(ms(h, 50))  p90 \(ms(h, 90))  p99 \(ms(h, 99))  max \(NumberText.fixed(Double(h.max) / 1000, 2)) ms  (n=\(NumberText.grouped(Int(h.total))))"
    }

    static func serverLine(_ pid: Int32?, cpuStart: Double, seconds: Double) -> String {
        guard let pid, let s = ProcStats.sample(pid: pid) else { return "not found" }
        return "pid \(pid): \(NumberText.fixed((s.cpuSeconds - cpuStart) / seconds * 100, 1))% CPU, RSS \(NumberText.fixed(Double(s.rssBytes) / 1_048_576, 1)) MiB"
    }

    static func cpu(_ pid: Int32?) -> Double { pid.flatMap { ProcStats.sample(pid: $0) }?.cpuSeconds ?? 0 }

    static func errorsText(_ e: [String: Int]) -> String {
        e.isEmpty ? "none" : e.sorted { $0.key < $1.key }.map { "\($0.key) x\($0.value)" }.joined(separator: ", ")
    }

    /// A tag unique to this run (base 36 of the wall-clock microseconds), so that a scenario run again
    /// against the same daemon works on documents of its own instead of finding the previous run's.
    static func runTag() -> String { String(UInt64(realtimeMicros()), radix: 36) }

    static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}

// MARK: - timeline

/// `hearth bench timeline`: follower fan-out. `--followers` F users each hold a live feed listener
/// (`users/<uid>/user-feed` by timestamp desc, limit 20) spread over `--listeners` subscriber connections
/// (default 1000, capped at F). One author posts: each post writes the author's document (`postCount`,
/// `lastPostAt`), `posts/<id>`, the author's own feed entry and one feed entry per follower (the commit of
/// docs/guides/timelines.md's post, without its reads), in one atomic commit (a commit holds up to 10,000 writes; a larger
/// fan-out is split into commits sent back to back); `--pipeline` posts are kept in flight. Reported: posts/s
/// (all of a post's commits acknowledged), and per post the time from its first commit's commitTime (and
/// from when the author sent it) until the LAST follower has received it. The followers' user IDs carry a
/// tag of the run (`users/t<tag>f000001`), so each run starts from empty feeds and runs repeat.
final class TimelineBench {
    let o: BenchOptions
    let loop: EventLoop
    var author: WorkloadClient!
    var subscribers: [WorkloadClient] = []
    var initial = 0
    var stopped = false
    var measuring = false
    var firstMeasured = Int.max
    var nextPost = 0
    var postsAcked = 0
    var postsInFlight = 0
    // Per post.
    var sentNanos: [UInt64] = []
    var commitMicros: [Int64] = []
    var chunksLeft: [Int] = []
    var delivered: [Int32] = []
    var lastSeen: [Int]
    var fromCommit = LatencyHistogram()
    var fromSend = LatencyHistogram()
    var completed = 0
    var lastCompletedNanos: UInt64 = 0
    var errors: [String: Int] = [:]
    /// `users/t<run>f`: the followers of this run.
    let followerPrefix: String
    let pathKey: [UInt8]
    static let commitTimeKey = Array(#""commitTime":""#.utf8)

    init(_ o: BenchOptions) throws {
        self.o = o
        loop = try EventLoop()
        lastSeen = [Int](repeating: -1, count: o.followers)
        followerPrefix = "users/t\(Workload.runTag())f"
        pathKey = Array(#""path":"\#(followerPrefix)"#.utf8)
    }

    static func run(_ o: BenchOptions) throws -> Int32 { try TimelineBench(o).execute() }

    func execute() throws -> Int32 {
        let serverPID = o.serverPID ?? ProcStats.listeningPID(port: o.port)
        let f = o.followers
        let nSubs = min(f, o.listeners)
        var (subs, failure) = Workload.connect(loop, o, nSubs)
        if failure == nil { (subscribers, failure) = (subs, nil) }
        let (a, failure2) = Workload.connect(loop, o, 1)
        guard failure == nil, failure2 == nil, let authorClient = a.first else {
            Console.error("error: \(failure ?? failure2 ?? "connect")"); return ExitCode.connection
        }
        author = authorClient
        subs = []
        for (k, s) in subscribers.enumerated() {
            s.onPush = { [unowned self] line in self.pushed(line) }
            s.onResponse = { [unowned self] kind, line, _, _ in
                if kind == .error { Console.error("listen failed: \(String(decoding: line, as: UTF8.self))"); self.errors["listen", default: 0] += 1 }
            }
            var i = k
            while i < f {
                s.send(#"{"op":"listen","query":{"collection":"\#(followerPrefix)\#(Workload.pad(i, 6))/user-feed","orderBy":[["timestamp","desc"]],"limit":20}}"#, now: 0)
                i += nSubs
            }
        }
        let deadline = loop.timer(after: 60_000) { [unowned self] in self.stopped = true }
        while initial < f && !stopped && errors.isEmpty { _ = loop.runOnce(nowait: false) }
        deadline.cancel()
        guard initial >= f else { Console.error("error: only \(initial) of \(f) listeners got their first snapshot"); return ExitCode.connection }
        let commitsPerPost = (f + 3 + Limits.maxWritesPerCommit - 1) / Limits.maxWritesPerCommit
        if !o.json { Console.error("timeline: \(f) follower listeners on \(nSubs) connections ready; a post is \(f + 3) writes = \(commitsPerPost) commit(s)") }

        author.onResponse = { [unowned self] kind, line, tag, _ in self.authorResponse(kind, line, tag) }
        var cpuStart = Workload.cpu(serverPID)
        for _ in 0..<o.pipeline { post() }
        _ = loop.timer(after: UInt64(o.warmup * 1000)) { [unowned self] in
            self.measuring = true
            self.firstMeasured = self.nextPost
            self.postsAcked = 0
            cpuStart = Workload.cpu(serverPID)
        }
        var measuredAcked = 0
        var measuredEndPost = 0
        _ = loop.timer(after: UInt64((o.warmup + o.duration) * 1000)) { [unowned self] in
            self.stopped = true
            measuredAcked = self.postsAcked
            measuredEndPost = self.nextPost
            // Wait for the fan-out of posts already sent, then stop.
            _ = self.loop.timer(after: UInt64(self.o.drainSeconds * 1000)) { [unowned self] in self.loop.stop() }
        }
        let drainCheck = loop.timer(after: 50, repeat: 50) { [unowned self] in
            if self.stopped && self.postsInFlight == 0 && self.allDelivered() { self.loop.stop() }
        }
        loop.run()
        drainCheck.cancel()
        let server = o.json ? "" : Workload.serverLine(serverPID, cpuStart: cpuStart, seconds: o.duration)
        for c in subscribers + [author!] { c.connection.abort() }
        let measuredPosts = max(0, measuredEndPost - firstMeasured)
        var incomplete = 0
        if firstMeasured < measuredEndPost { for p in firstMeasured..<measuredEndPost where delivered[p] < Int32(f) { incomplete += 1 } }
        let text = """
        hearth bench timeline  hearthd \(o.host):\(o.port)  \(f) followers (listeners) on \(nSubs) connections, 1 author x \(o.pipeline) post(s) in flight
          post        \(f + 3) writes = \(commitsPerPost) commit(s) of <= \(NumberText.grouped(Limits.maxWritesPerCommit)) writes (users/author, posts/<id>, the author's feed entry, one feed entry per follower)
          posts       \(NumberText.grouped(measuredAcked)) acknowledged in \(o.duration) s = \(NumberText.fixed(Double(measuredAcked) / o.duration, 1)) posts/s (\(NumberText.grouped(Int(Double(measuredAcked * (f + 1)) / o.duration))) feed writes/s, \(NumberText.grouped(Int(Double(measuredAcked * f) / o.duration))) deliveries/s)
          fan-out     \(NumberText.grouped(measuredPosts - incomplete)) of \(NumberText.grouped(measuredPosts)) measured posts reached all \(f) followers\(incomplete > 0 ? " (\(incomplete) not within the \(o.drainSeconds) s drain)" : "")
          last follower  commit -> received: \(Workload.latencyLine(fromCommit))
                         author sent -> received: \(Workload.latencyLine(fromSend))
          errors      \(Workload.errorsText(errors))
          server      \(server)
        """
        if o.json {
            var r = WorkloadReport(o, connections: nSubs + 1, requests: measuredAcked, errors: errors)
            r.histogram("latency_us", fromCommit)
            r.server(serverPID, cpuStart: cpuStart, seconds: o.duration)
            r.int("followers", f)
            r.int("listener_connections", nSubs)
            r.int("writes_per_post", f + 3)
            r.int("commits_per_post", commitsPerPost)
            r.int("posts_measured", measuredPosts)
            r.int("posts_incomplete", incomplete)
            r.double("deliveries_per_sec", (Double(measuredAcked * f) / o.duration).rounded())
            r.histogram("sent_to_last_follower_us", fromSend)
            Console.line(r.text())
        } else {
            Console.line(text)
        }
        return errors.isEmpty && incomplete == 0 ? ExitCode.ok : ExitCode.serverError
    }

    private func allDelivered() -> Bool {
        guard firstMeasured != Int.max else { return true }
        let f = Int32(o.followers)
        for p in firstMeasured..<nextPost where delivered[p] < f { return false }
        return true
    }

    private func post() {
        guard !stopped else { return }
        let p = nextPost
        nextPost += 1
        let id = "p" + Workload.pad(p, 7)
        let entry = #","data":{"postId":"\#(id)","authorId":"author","timestamp":{"$serverTimestamp":true}}}"#
        var writes: [String] = [#"{"op":"set","path":"users/author","merge":true,"data":{"postCount":{"$increment":1},"lastPostAt":{"$serverTimestamp":true}}}"#,
                                #"{"op":"set","path":"posts/\#(id)","data":{"authorId":"author","text":"post \#(p)","timestamp":{"$serverTimestamp":true}}}"#,
                                #"{"op":"set","path":"users/author/user-feed/\#(id)""# + entry]
        writes.reserveCapacity(o.followers + 3)
        for i in 0..<o.followers { writes.append(#"{"op":"set","path":"\#(followerPrefix)\#(Workload.pad(i, 6))/user-feed/\#(id)""# + entry) }
        let now = loop.hrtimeNanos()
        sentNanos.append(now)
        commitMicros.append(0)
        delivered.append(0)
        var chunks = 0
        var start = 0
        while start < writes.count {
            let end = min(writes.count, start + Limits.maxWritesPerCommit)
            author.send(#"{"op":"commit","writes":["# + writes[start..<end].joined(separator: ",") + "]}", tag: p * 16 + chunks, now: now)
            chunks += 1
            start = end
        }
        chunksLeft.append(chunks)
        postsInFlight += 1
    }

    private func authorResponse(_ kind: ResponseScanner.Kind, _ line: UnsafeRawBufferPointer, _ tag: Int) {
        let p = tag / 16, chunk = tag % 16
        if kind == .error { errors[Workload.errorCode(line), default: 0] += 1 }
        if chunk == 0, let i = Workload.find(TimelineBench.commitTimeKey, in: line), i + 27 <= line.count,
           let t = Timestamp.parse(bytes: UnsafeRawBufferPointer(rebasing: line[i..<(i + 27)])) {
            commitMicros[p] = t.micros
            if delivered[p] == Int32(o.followers) { finishPost(p) }
        }
        chunksLeft[p] -= 1
        if chunksLeft[p] == 0 {
            postsInFlight -= 1
            if measuring && !stopped { postsAcked += 1 }
            post()
        }
    }

    /// A pushed line: the first `"initial":true` per listener readies it; later ones carry feed paths
    /// `users/t<run>f<6 digits>/user-feed/p<7 digits>` (removed ones too, which are older); the highest post
    /// seen advances that follower, covering every post in between (coalesced snapshots).
    private func pushed(_ line: UnsafeRawBufferPointer) {
        guard line.count > 6, line[2] == UInt8(ascii: "s") else { return }
        if Workload.find(Array(#""initial":true"#.utf8), in: line) != nil { initial += 1; return }
        var i = 0
        var follower = -1
        var best = -1
        while let j = Workload.find(pathKey, in: line, from: i) {
            i = j
            guard j + 6 + 12 + 7 <= line.count else { break }
            var fnum = 0
            for k in 0..<6 { fnum = fnum * 10 + Int(line[j + k]) - 48 }
            var pnum = 0
            for k in 0..<7 { pnum = pnum * 10 + Int(line[j + 18 + k]) - 48 }
            follower = fnum
            best = max(best, pnum)
        }
        if follower < 0 { return }
        guard follower < lastSeen.count, best > lastSeen[follower], best < delivered.count else { return }
        let now = loop.hrtimeNanos()
        for p in (lastSeen[follower] + 1)...best {
            delivered[p] += 1
            if delivered[p] == Int32(o.followers) {
                lastCompletedNanos = now
                if p >= firstMeasured { fromSend.record(nanos: now - sentNanos[p]) }
                sentNanos[p] = UInt64(Workload.realtimeMicros())   // reused: receipt wall-clock time
                if commitMicros[p] != 0 { finishPost(p) }
            }
        }
        lastSeen[follower] = best
    }

    private func finishPost(_ p: Int) {
        completed += 1
        if p >= firstMeasured { fromCommit.record(micros: UInt64(max(0, Int64(sentNanos[p]) - commitMicros[p]))) }
    }
}

// MARK: - departments

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
        hearth bench departments  hearthd \(o.host):\(o.port)  \(o.connections) connection(s) x \(o.pipeline) in flight, \(NumberText.grouped(o.keys)) users x \(NumberText.grouped(o.departments)) departments
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
        hearth bench callrecords  hearthd \(o.host):\(o.port)  \(o.connections) connection(s) x \(o.pipeline) in flight, \(o.readPercent)% queries, \(customers) customers, \(NumberText.grouped(o.preload)) records preloaded
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
