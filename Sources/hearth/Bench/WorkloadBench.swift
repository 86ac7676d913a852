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
            o.connect(on: loop) { r in
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
        guard let base = line.baseAddress, from < line.count, !needle.isEmpty else { return nil }
        let n = needle.count
        // memchr for the needle's first byte that is not a quote: a JSON line holds quotes everywhere.
        let a = needle.firstIndex { $0 != 34 } ?? 0
        var i = from
        while i + n <= line.count {
            guard let hit = memchr(base + i + a, Int32(needle[a]), line.count - n + 1 - i) else { return nil }
            let j = UnsafeRawPointer(hit) - base - a
            var k = 0
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
        guard let pid else { return "not found" }
        guard let s = ProcStats.sample(pid: pid) else { return "pid \(pid): gone by the end of the run (exited), or /proc not readable" }
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
