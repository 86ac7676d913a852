#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthProtocol

/// `hearth top`: the daemon's `stats` as a live terminal view, redrawn every second (plain ANSI: clear and
/// home), until q or Ctrl-C; `--once` prints one frame without escape codes and exits.
enum TopCommand {
    static let discussion = """
        Shows connections, listeners, commits per second, group commit sizes and durable-write latency, queue depths,
        memory, CPU, cache hit rate, store size, and per op: requests per second (the last whole second), totals,
        errors, p50 and p99 latency (over the last 10 to 20 seconds). Needs the admin when rules are enforced
        (--admin-key-file or HEARTH_ADMIN_KEY). q or Ctrl-C quits.
        """

    static func run(_ a: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(a)
        let interval = try a.double("interval", default: 1, min: 0.1, max: 3_600) ?? 1
        let admin = try AdminClient(options)
        let target = "\(options.host):\(options.port)"
        if a.flag("once") {
            let r = try admin.call("stats")
            Console.out(frame(r.root!, target: target))
            return ExitCode.ok
        }
        let terminal = RawTerminal(fd: 0)
        defer {
            terminal?.restore()
            Console.out("\u{1B}[?25h")
            Console.flush()
        }
        Console.out("\u{1B}[?25l")
        while true {
            let r = try admin.call("stats")
            Console.out("\u{1B}[H\u{1B}[2J" + frame(r.root!, target: target))
            Console.flush()
            if waitForQuit(seconds: interval, terminal: terminal != nil) { return ExitCode.ok }
        }
    }

    /// Waits up to `seconds` for a key on standard input: true for q, Q or Ctrl-C (or the end of input).
    private static func waitForQuit(seconds: Double, terminal: Bool) -> Bool {
        guard terminal else {
            usleep(UInt32(seconds * 1_000_000))
            return false
        }
        let deadline = Double(Clock.nanos()) / 1e9 + seconds
        while true {
            let left = deadline - Double(Clock.nanos()) / 1e9
            if left <= 0 { return false }
            var p = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            let n = poll(&p, 1, Int32(left * 1000))
            if n <= 0 { if n < 0 && errno != EINTR { return true }; continue }
            var byte: UInt8 = 0
            if read(0, &byte, 1) != 1 { return true }
            if byte == UInt8(ascii: "q") || byte == UInt8(ascii: "Q") || byte == 3 { return true }
        }
    }

    /// One frame of the view (lines end with "\n").
    static func frame(_ s: JSONRef, target: String) -> String {
        func int(_ r: JSONRef?, _ k: String) -> Int64 { r?[k]?.int64 ?? 0 }
        func num(_ r: JSONRef?, _ k: String) -> Double { r?[k]?.number ?? 0 }
        let commits = s["commits"], queues = s["queues"], cache = s["cache"], store = s["store"], process = s["process"]
        var out = "hearth top  \(target)  hearthd \(s["version"]?.string ?? "?")  up \(duration(num(s, "uptimeSeconds")))\n"
        out += "connections \(int(s, "connections"))  listeners \(int(s, "listeners"))  shared views \(int(s, "sharedViews"))  coalescing \(int(s, "coalescingSubscribers"))\n"
        out += "commits/s \(int(commits, "perSecond"))  total \(int(commits, "total"))  batch mean \(NumberText.fixed(num(commits, "batchSizeMean"), 1))  durable p50 \(ms(int(commits, "durableP50Micros"))) p99 \(ms(int(commits, "durableP99Micros"))) ms\n"
        out += "pending commits \(int(queues, "pendingCommits"))  reads in flight \(int(queues, "readsInFlight"))\n"
        out += "memory \(NumberText.mebibytes(Int(int(process, "residentBytes"))))  cpu \(NumberText.fixed(num(process, "cpuSeconds"), 1)) s  cache hit rate \(NumberText.fixed(num(cache, "hitRate") * 100, 1))% (\(int(cache, "entries")) docs, \(NumberText.mebibytes(Int(int(cache, "bytes")))))\n"
        out += "store \(NumberText.mebibytes(Int(int(store, "bytesOnDisk"))))  seq \(int(store, "seq"))  oldest resumable \(int(store, "oldestResumableSeq"))\n"
        out += "\n" + pad("OP", 18) + lpad("REQ/S", 9) + lpad("TOTAL", 12) + lpad("ERRORS", 9) + lpad("P50 ms", 10) + lpad("P99 ms", 10) + "\n"
        var rows: [(String, Int64, Int64, Int64, Int64, Int64)] = []
        if let ops = s["ops"] {
            for m in ops.members {
                let o = m.value
                rows.append((m.key, int(o, "perSecond"), int(o, "count"), int(o, "errors"), int(o, "p50Micros"), int(o, "p99Micros")))
            }
        }
        rows.sort { ($0.1, $0.2) > ($1.1, $1.2) }
        for r in rows {
            out += pad(r.0, 18) + lpad("\(r.1)", 9) + lpad("\(r.2)", 12) + lpad("\(r.3)", 9) + lpad(ms(r.4), 10) + lpad(ms(r.5), 10) + "\n"
        }
        if rows.isEmpty { out += "(no requests yet)\n" }
        return out
    }

    static func ms(_ micros: Int64) -> String { NumberText.fixed(Double(micros) / 1000, 3) }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(String(format2: s % 60))s" }
        return "\(s / 3600)h\(String(format2: (s / 60) % 60))m"
    }

    private static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
    private static func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? " " + s : String(repeating: " ", count: n - s.count) + s }
}

private extension String {
    /// Two digits, zero-padded.
    init(format2 v: Int) { self = v < 10 ? "0\(v)" : "\(v)" }
}
