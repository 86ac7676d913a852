#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthProtocol

/// The times of one measured phase on the monotonic clock (ns). Requests intended in
/// `[measureStart, measureEnd)` are measured; sending stops at `measureEnd`; in-flight requests get
/// until `drainDeadline`.
struct PhaseSchedule: Sendable {
    var start: UInt64 = 0
    var measureStart: UInt64 = 0
    var measureEnd: UInt64 = 0
    var drainDeadline: UInt64 = 0
    var abort = false
}

/// What a worker shares with the coordinator while it runs (under a lock).
struct WorkerProgress: Sendable {
    var completed = 0
    var measured = 0
    var errors = 0
    /// Set (before `ready` is counted down) when the worker could not connect.
    var connectFailure: String?
}

/// What a worker measured.
struct WorkerResult: Sendable {
    var latency = LatencyHistogram()
    /// Fixed-rate mode: latency from the actual send (what the server alone added).
    var service = LatencyHistogram()
    /// Listen scenarios: commit-to-receipt latency of pushed lines.
    var delivery = LatencyHistogram()
    var measured = 0
    var completed = 0
    /// Error answers to measured requests, by code (`requests` counts the same requests).
    var errors: [String: Int] = [:]
    /// Error answers during the warmup (not measured; shown apart).
    var warmupErrors = 0
    var unanswered = 0
    var lostConnections = 0
    var unexpectedLines = 0
    /// Ok responses of the form `{"ok":true,"doc":null}`: gets of absent documents.
    var notFound = 0
    var lastCompletion: UInt64 = 0
    var failure: String?
}

/// One event loop on its own thread driving a share of the connections. Connects everything, reports
/// ready, waits for the coordinator's go (with the schedule), runs until every connection has finished
/// or the drain deadline passes, then closes its connections.
final class BenchWorker: @unchecked Sendable {
    private let options: BenchOptions
    private let makeScenario: @Sendable (BenchOptions) -> any BenchScenario
    private let firstConnection: Int
    private let connectionCount: Int
    private let budgets: [Int]
    private let pipeline: Int
    private let ready: Latch
    private let go: Latch
    private let scheduleBox: Guarded<PhaseSchedule>
    let progress = Guarded(WorkerProgress())

    private(set) var scenario: any BenchScenario = PingScenario()
    private(set) var measureStart: UInt64 = .max
    private(set) var measureEnd: UInt64 = 0
    private var drainDeadline: UInt64 = 0
    private(set) var isSending = false
    private var connections: [BenchConnection] = []
    private var result = WorkerResult()
    private var loop: EventLoop?
    private var ticker: LoopTimer?
    private var pacer: LoopTimer?
    private var done = false
    private let parser = JSONParser()

    /// `budgets[i]` is the measured-request budget of connection i (Int.max for none).
    init(options: BenchOptions, make: @escaping @Sendable (BenchOptions) -> any BenchScenario,
         firstConnection: Int, budgets: [Int], pipeline: Int,
         ready: Latch, go: Latch, schedule: Guarded<PhaseSchedule>) {
        self.options = options
        makeScenario = make
        self.firstConnection = firstConnection
        connectionCount = budgets.count
        self.budgets = budgets
        self.pipeline = pipeline
        self.ready = ready
        self.go = go
        scheduleBox = schedule
    }

    /// The thread body: returns what was measured. The caller counts `finished` down afterwards.
    func run() -> WorkerResult {
        do {
            let loop = try EventLoop()
            self.loop = loop
            defer { loop.shutdown(); self.loop = nil }
            scenario = makeScenario(options)
            if let failure = connectAll(loop) {
                result.failure = failure
                progress.withLock { $0.connectFailure = failure }
                ready.countDown()
                return result
            }
            ready.countDown()
            go.wait()
            let schedule = scheduleBox.withLock { $0 }
            if schedule.abort { return result }
            begin(schedule, loop)
            loop.run()
        } catch {
            result.failure = "cannot create an event loop: \(error)"
            progress.withLock { $0.connectFailure = result.failure }
            ready.countDown()
        }
        return result
    }

    /// Opens every connection; returns the first failure's text.
    private func connectAll(_ loop: EventLoop) -> String? {
        var tcps: [TCPConnection?] = Array(repeating: nil, count: connectionCount)
        var pending = connectionCount
        var failure: String?
        for i in 0..<connectionCount {
            options.connect(on: loop) { outcome in
                pending -= 1
                switch outcome {
                case .success(let c): tcps[i] = c
                case .failure(let e): failure = failure ?? e.message
                }
            }
        }
        while pending > 0 { loop.runOnce() }
        if let failure {
            for c in tcps { c?.abort() }
            return failure
        }
        let interval = options.rate.map { UInt64(Double(options.connections) * 1e9 / $0) } ?? 0
        connections = tcps.enumerated().map { i, c in
            BenchConnection(worker: self, tcp: c!, index: firstConnection + i, pipeline: pipeline,
                            budget: budgets[i], interval: max(interval, options.rate == nil ? 0 : 1), seed: options.seed)
        }
        return nil
    }

    private func begin(_ schedule: PhaseSchedule, _ loop: EventLoop) {
        measureStart = schedule.measureStart
        measureEnd = schedule.measureEnd
        drainDeadline = schedule.drainDeadline
        isSending = true
        let interval = options.rate.map { Double(options.connections) * 1e9 / $0 } ?? 0
        for (i, c) in connections.enumerated() {
            let global = Double(firstConnection + i)
            c.start(at: schedule.start, offset: UInt64(interval * global / Double(options.connections)))
        }
        ticker = loop.timer(after: 10, repeat: 10) { [unowned self] in self.tick() }
        if options.rate != nil {
            pacer = loop.timer(after: 1, repeat: 1) { [unowned self] in
                let now = Clock.nanos()
                for c in self.connections { c.pump(now: now) }
            }
        }
    }

    /// Whether a request intended at `time` may be sent by a connection with `budget` measured requests left.
    @inline(__always)
    func maySend(at time: UInt64, budget: Int) -> Bool {
        isSending && time < measureEnd && (budget > 0 || time < measureStart)
    }

    @inline(__always)
    func completed(scheduled: UInt64, intended: UInt64, sentAt: UInt64, now: UInt64, kind: ResponseScanner.Kind,
                   line: UnsafeRawBufferPointer) {
        result.completed += 1
        let isMeasured = scheduled >= measureStart && scheduled < measureEnd
        if isMeasured {
            result.measured += 1
            result.latency.record(nanos: now &- intended)
            if options.rate != nil { result.service.record(nanos: now &- sentAt) }
            if now > result.lastCompletion { result.lastCompletion = now }
        }
        if kind == .error {
            if isMeasured { countError(line) } else { result.warmupErrors += 1 }
        } else if line.count == BenchWorker.nullDoc.count && BenchWorker.isNullDoc(line) {
            result.notFound += 1
        }
    }

    static let nullDoc = Array(#"{"ok":true,"doc":null}"#.utf8)

    private static func isNullDoc(_ line: UnsafeRawBufferPointer) -> Bool {
        nullDoc.withUnsafeBytes { memcmp($0.baseAddress!, line.baseAddress!, $0.count) == 0 }
    }

    private func countError(_ line: UnsafeRawBufferPointer) {
        var code = "MALFORMED_RESPONSE"
        if let root = try? parser.parse(line), let c = root["error"]?["code"]?.string { code = c }
        result.errors[code, default: 0] += 1
    }

    func pushed(_ line: UnsafeRawBufferPointer, now: UInt64) {
        if let latency = scenario.pushed(line, now: now), now >= measureStart && now < measureEnd {
            result.delivery.record(nanos: latency)
        }
    }

    func unexpectedLine() { result.unexpectedLines += 1 }

    func connectionLost(_ c: BenchConnection, owed: Int, error: LoopError?) {
        guard !done else { return }
        result.lostConnections += 1
        if owed > 0 { result.errors["CONNECTION_LOST", default: 0] += owed }
        if result.failure == nil { result.failure = "connection closed by the daemon" + (error.map { ": \($0.message)" } ?? "") }
        connectionFinished()
    }

    /// A connection may be done: finish when all are.
    func connectionFinished() {
        if !done && connections.allSatisfy({ $0.isFinished }) { finish() }
    }

    private func tick() {
        let now = Clock.nanos()
        // Fixed rate: requests scheduled before the end still go out (late, and measured as late).
        if isSending && now >= measureEnd && connections.allSatisfy({ $0.scheduleExhausted }) { isSending = false }
        publish()
        if now >= drainDeadline {
            result.unanswered += connections.reduce(0) { $0 + ($1.alive ? $1.inflight + $1.unsentScheduled : 0) }
            finish()
        } else {
            connectionFinished()
        }
    }

    private func publish() {
        let (completed, measured, errors) = (result.completed, result.measured, result.errors.values.reduce(0, +))
        progress.withLock {
            $0.completed = completed
            $0.measured = measured
            $0.errors = errors
        }
    }

    private func finish() {
        guard !done else { return }
        done = true
        isSending = false
        publish()
        ticker?.cancel()
        pacer?.cancel()
        for c in connections { c.stop() }
        loop?.stop()
    }
}
