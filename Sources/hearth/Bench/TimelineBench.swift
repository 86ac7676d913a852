#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel

/// `hearth bench timeline`: follower fan-out. `--followers` F users each hold a live feed listener
/// (`users/<uid>/user-feed` by timestamp desc, limit 20) spread over `--listeners` subscriber connections
/// (default 1000, capped at F). One author posts: each post writes the author's document (`postCount`,
/// `lastPostAt`), `posts/<id>`, the author's own feed entry and one feed entry per follower (the commit of
/// docs/guides/timelines.md's post, without its reads), in one atomic commit (a commit holds up to 10,000 writes; a larger
/// fan-out is split into commits sent back to back); `--pipeline` posts are kept in flight, or with `--rate` posts
/// are due at fixed intervals, at most `--pipeline` of them in flight (a post due while that many are waits, and
/// its time from the author counts from when it was due: no coordinated omission). Reported: posts/s
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
    /// `--rate`: the spacing of posts and when the next one is due (nil: closed loop).
    let interval: UInt64?
    var nextDue: UInt64 = 0
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
    /// Per follower, `{"op":"set","path":"users/t<run>f<6 digits>/user-feed/`: the start of its feed entry's
    /// write, built once (a post writes one per follower).
    let followerWrites: [String]
    let pathKey: [UInt8]
    static let commitTimeKey = Array(#""commitTime":""#.utf8)
    static let initialKey = Array(#""initial":true"#.utf8)

    init(_ o: BenchOptions) throws {
        self.o = o
        interval = o.rate.map { UInt64(max(1, 1e9 / $0)) }
        loop = try EventLoop()
        lastSeen = [Int](repeating: -1, count: o.followers)
        followerPrefix = "users/t\(Workload.runTag())f"
        pathKey = Array(#""path":"\#(followerPrefix)"#.utf8)
        followerWrites = (0..<o.followers).map { [followerPrefix] i in #"{"op":"set","path":"\#(followerPrefix)\#(Workload.pad(i, 6))/user-feed/"# }
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
        var pacing: LoopTimer?
        if interval != nil {
            nextDue = loop.hrtimeNanos()
            pump()
            pacing = loop.timer(after: 1, repeat: 1) { [unowned self] in self.pump() }
        } else {
            for _ in 0..<o.pipeline { post(dueAt: nil) }
        }
        _ = loop.timer(after: UInt64(o.warmup * 1000)) { [unowned self] in
            self.measuring = true
            self.firstMeasured = self.nextPost
            self.postsAcked = 0
            cpuStart = Workload.cpu(serverPID)
        }
        var measuredAcked = 0
        var measuredEndPost = 0
        var dueUnsent = 0
        _ = loop.timer(after: UInt64((o.warmup + o.duration) * 1000)) { [unowned self] in
            if let interval = self.interval {
                // What is due by now goes while a slot is free; the rest found every slot taken. A post due for
                // less than one interval is on time yet (its slot may free up any moment).
                self.pump()
                let now = self.loop.hrtimeNanos()
                if self.nextDue <= now { dueUnsent = Int((now - self.nextDue) / interval) }
            }
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
        pacing?.cancel()
        let server = o.json ? "" : Workload.serverLine(serverPID, cpuStart: cpuStart, seconds: o.duration)
        for c in subscribers + [author!] { c.connection.abort() }
        let measuredPosts = max(0, measuredEndPost - firstMeasured)
        var incomplete = 0
        if firstMeasured < measuredEndPost { for p in firstMeasured..<measuredEndPost where delivered[p] < Int32(f) { incomplete += 1 } }
        let text = """
        hearth bench timeline  hearthd \(o.target)  \(f) followers (listeners) on \(nSubs) connections, 1 author x \(o.pipeline) post(s) in flight\(o.rate.map { ", due at \(NumberText.fixed($0, 1)) posts/s" } ?? "")
          post        \(f + 3) writes = \(commitsPerPost) commit(s) of <= \(NumberText.grouped(Limits.maxWritesPerCommit)) writes (users/author, posts/<id>, the author's feed entry, one feed entry per follower)
          posts       \(NumberText.grouped(measuredAcked)) acknowledged in \(o.duration) s = \(NumberText.fixed(Double(measuredAcked) / o.duration, 1)) posts/s (\(NumberText.grouped(Int(Double(measuredAcked * (f + 1)) / o.duration))) feed writes/s, \(NumberText.grouped(Int(Double(measuredAcked * f) / o.duration))) deliveries/s)
          \(dueUnsent > 0 ? "late        \(NumberText.grouped(dueUnsent)) post(s) due and never sent, with --pipeline \(o.pipeline) in flight (the daemon did not keep up with --rate)\n  " : "")fan-out     \(NumberText.grouped(measuredPosts - incomplete)) of \(NumberText.grouped(measuredPosts)) measured posts reached all \(f) followers\(incomplete > 0 ? " (\(incomplete) not within the \(o.drainSeconds) s drain)" : "")
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
            if let rate = o.rate {
                r.double("rate", rate)
                r.int("posts_due_unsent", dueUnsent)
            }
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
        return errors.isEmpty && incomplete == 0 && dueUnsent == 0 ? ExitCode.ok : ExitCode.serverError
    }

    private func allDelivered() -> Bool {
        guard firstMeasured != Int.max else { return true }
        let f = Int32(o.followers)
        for p in firstMeasured..<nextPost where delivered[p] < f { return false }
        return true
    }

    /// `--rate`: sends every post due by now while fewer than `--pipeline` are in flight.
    private func pump() {
        guard let interval else { return }
        let now = loop.hrtimeNanos()
        while !stopped && postsInFlight < o.pipeline && nextDue <= now {
            post(dueAt: nextDue)
            nextDue += interval
        }
    }

    /// Sends the next post; `due`: when it was due (`--rate`), the origin of its time from the author.
    private func post(dueAt due: UInt64?) {
        guard !stopped else { return }
        let p = nextPost
        nextPost += 1
        let id = "p" + Workload.pad(p, 7)
        let entry = #","data":{"postId":"\#(id)","authorId":"author","timestamp":{"$serverTimestamp":true}}}"#
        var writes: [String] = [#"{"op":"set","path":"users/author","merge":true,"data":{"postCount":{"$increment":1},"lastPostAt":{"$serverTimestamp":true}}}"#,
                                #"{"op":"set","path":"posts/\#(id)","data":{"authorId":"author","text":"post \#(p)","timestamp":{"$serverTimestamp":true}}}"#,
                                #"{"op":"set","path":"users/author/user-feed/\#(id)""# + entry]
        writes.reserveCapacity(o.followers + 3)
        let idAndEntry = id + "\"" + entry
        for start in followerWrites { writes.append(start + idAndEntry) }
        let now = loop.hrtimeNanos()
        sentNanos.append(due ?? now)
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
            if interval == nil { post(dueAt: nil) } else { pump() }
        }
    }

    /// A pushed line: the first `"initial":true` per listener readies it; later ones carry feed paths
    /// `users/t<run>f<6 digits>/user-feed/p<7 digits>` (removed ones too, which are older); the highest post
    /// seen advances that follower, covering every post in between (coalesced snapshots).
    private func pushed(_ line: UnsafeRawBufferPointer) {
        guard line.count > 6, line[2] == UInt8(ascii: "s") else { return }
        if Workload.find(TimelineBench.initialKey, in: line) != nil { initial += 1; return }
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
