#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One timed phase of a bench run (the key-space load, or the measured run).
struct PhasePlan {
    var connections: Int
    var pipeline: Int
    var threads: Int
    var warmup: Double
    /// Measured seconds; the hard limit when `requests` is set.
    var duration: Double
    var requests: Int?
    var showProgress: Bool
    var label: String
    /// What the progress line calls the requests counted so far: "measured", or "written" while loading.
    var countWord = "measured"
    var serverPID: Int32?
    var make: @Sendable (BenchOptions) -> any BenchScenario
}

/// What a phase measured: the workers' results merged, the measured elapsed time, and resource use of
/// the daemon and of this process over the measured interval.
struct PhaseOutcome {
    var result = WorkerResult()
    /// From the start of measuring to the last measured response, in seconds.
    var elapsed = 0.0
    /// Seconds between the two resource samples.
    var sampledWall = 0.0
    var serverStart: ProcStats.Sample?
    var serverEnd: ProcStats.Sample?
    var clientCPU = 0.0

    var opsPerSecond: Double { elapsed > 0 ? Double(result.measured) / elapsed : 0 }
}

/// Runs a phase: starts one `BenchWorker` thread per `threads`, waits until all are connected, gives them
/// one shared schedule, samples /proc at the start and end of the measured interval, shows progress once
/// a second on a terminal, and merges the results.
enum BenchPhase {
    /// How long connecting may take before the run is abandoned.
    static let connectTimeout: UInt64 = 10_000_000_000

    static func run(_ options: BenchOptions, _ plan: PhasePlan) throws(ClientError) -> PhaseOutcome {
        let threads = max(1, min(plan.threads, plan.connections))
        let ready = Latch(count: threads)
        let go = Latch(count: 1)
        let finished = Latch(count: threads)
        let scheduleBox = Guarded(PhaseSchedule())
        var workers: [BenchWorker] = []
        var outcomes: [Guarded<WorkerResult?>] = []
        var handles: [WorkerThread] = []
        var first = 0
        for t in 0..<threads {
            let count = plan.connections / threads + (t < plan.connections % threads ? 1 : 0)
            let budgets = (first..<(first + count)).map { i -> Int in
                guard let n = plan.requests else { return Int.max }
                return n / plan.connections + (i < n % plan.connections ? 1 : 0)
            }
            let worker = BenchWorker(options: options, make: plan.make, firstConnection: first, budgets: budgets,
                                     pipeline: plan.pipeline, ready: ready, go: go, schedule: scheduleBox)
            let box = Guarded<WorkerResult?>(nil)
            workers.append(worker)
            outcomes.append(box)
            handles.append(WorkerThread {
                let r = worker.run()
                box.withLock { $0 = r }
                finished.countDown()
            })
            first += count
        }
        if !ready.wait(untilNanos: Clock.nanos() + connectTimeout) {
            throw .connect("cannot connect to \(options.host):\(options.port): timed out")
        }
        if let failure = workers.lazy.compactMap({ $0.progress.withLock { $0.connectFailure } }).first {
            scheduleBox.withLock { $0.abort = true }
            go.countDown()
            handles.forEach { $0.join() }
            throw .connect(failure)
        }
        var schedule = PhaseSchedule()
        schedule.start = Clock.nanos()
        schedule.measureStart = schedule.start + UInt64(plan.warmup * 1e9)
        schedule.measureEnd = schedule.measureStart + UInt64(plan.duration * 1e9)
        schedule.drainDeadline = schedule.measureEnd + UInt64(options.drainSeconds * 1e9)
        let s = schedule
        scheduleBox.withLock { $0 = s }
        go.countDown()

        var outcome = PhaseOutcome()
        let sampler = Sampler(pid: plan.serverPID)
        var progress = ProgressLine(label: plan.label, countWord: plan.countWord, enabled: plan.showProgress,
                                    start: schedule.start, measureStart: schedule.measureStart)
        while true {
            var deadline = progress.nextTick
            if sampler.startTime == nil { deadline = min(deadline, schedule.measureStart) }
            let allDone = finished.wait(untilNanos: deadline)
            let now = Clock.nanos()
            if sampler.startTime == nil && (now >= schedule.measureStart || allDone) { sampler.takeStart() }
            if allDone { break }
            progress.update(now: now, workers: workers)
        }
        sampler.takeEnd()
        progress.clear()
        handles.forEach { $0.join() }

        for box in outcomes {
            guard let r = box.withLock({ $0 }) else { continue }
            outcome.result.latency.merge(r.latency)
            outcome.result.service.merge(r.service)
            outcome.result.delivery.merge(r.delivery)
            outcome.result.measured += r.measured
            outcome.result.completed += r.completed
            outcome.result.errors.merge(r.errors, uniquingKeysWith: +)
            outcome.result.warmupErrors += r.warmupErrors
            outcome.result.unanswered += r.unanswered
            outcome.result.lostConnections += r.lostConnections
            outcome.result.unexpectedLines += r.unexpectedLines
            outcome.result.notFound += r.notFound
            outcome.result.lastCompletion = max(outcome.result.lastCompletion, r.lastCompletion)
            outcome.result.failure = outcome.result.failure ?? r.failure
        }
        let end = outcome.result.lastCompletion > schedule.measureStart ? outcome.result.lastCompletion : (sampler.endTime ?? 0)
        outcome.elapsed = end > schedule.measureStart ? Double(end - schedule.measureStart) / 1e9 : 0
        outcome.sampledWall = Double((sampler.endTime ?? 0) &- (sampler.startTime ?? 0)) / 1e9
        outcome.serverStart = sampler.serverStart
        outcome.serverEnd = sampler.serverEnd
        outcome.clientCPU = sampler.clientEnd - sampler.clientStart
        return outcome
    }
}

/// The /proc readings at the start of measuring and when the phase has finished (after the last
/// measured response).
private final class Sampler {
    let pid: Int32?
    var startTime: UInt64?
    var endTime: UInt64?
    var serverStart: ProcStats.Sample?
    var serverEnd: ProcStats.Sample?
    var clientStart = 0.0
    var clientEnd = 0.0

    init(pid: Int32?) { self.pid = pid }

    func takeStart() {
        serverStart = pid.flatMap { ProcStats.sample(pid: $0) }
        clientStart = ProcStats.ownCPUSeconds()
        startTime = Clock.nanos()
    }

    func takeEnd() {
        endTime = Clock.nanos()
        serverEnd = pid.flatMap { ProcStats.sample(pid: $0) }
        clientEnd = ProcStats.ownCPUSeconds()
    }
}

/// The live progress line on stderr (only when stderr is a terminal): refreshed once a second.
private struct ProgressLine {
    let label: String
    let countWord: String
    let enabled: Bool
    let start: UInt64
    let measureStart: UInt64
    private(set) var nextTick: UInt64
    private var lastMeasured = 0
    private var lastCompleted = 0
    private var shown = false

    init(label: String, countWord: String, enabled: Bool, start: UInt64, measureStart: UInt64) {
        self.label = label
        self.countWord = countWord
        self.enabled = enabled
        self.start = start
        self.measureStart = measureStart
        nextTick = enabled ? start + 1_000_000_000 : .max
    }

    mutating func update(now: UInt64, workers: [BenchWorker]) {
        guard enabled, now >= nextTick else { return }
        nextTick += 1_000_000_000
        var measured = 0, completed = 0, errors = 0
        for w in workers {
            let p = w.progress.withLock { $0 }
            measured += p.measured
            completed += p.completed
            errors += p.errors
        }
        let rate = completed - lastCompleted
        lastCompleted = completed
        lastMeasured = measured
        let seconds = Int((now - start) / 1_000_000_000)
        let phase = now < measureStart ? "warming up" : "\(countWord) \(NumberText.grouped(measured))"
        Console.status("\r\u{1B}[K[\(seconds)s] \(label): \(NumberText.grouped(rate)) ops/s, \(phase), errors \(errors)")
        shown = true
    }

    mutating func clear() {
        if shown { Console.status("\r\u{1B}[K") }
        shown = false
    }
}
