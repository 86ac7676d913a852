import HearthLoop

/// One bench connection's driver (loop thread only): keeps up to `pipeline` requests in flight, remembers
/// each one's intended send time in a ring (responses arrive in request order on a connection, so the
/// oldest in-flight request is always the one answered), and reports completions to its worker.
///
/// Closed loop: a request is sent as soon as a slot frees up; its intended time is its send time.
/// Fixed rate: requests are due at `nextDue`, `interval` apart. A due request that finds every slot
/// taken waits, and its latency counts from its scheduled time, so a stalled server shows up as latency
/// (no coordinated omission). A request that had a free slot at its scheduled time but went out late only
/// because the pacing timer ticks once a millisecond counts from its actual send: that lag is the
/// generator's, not the server's. Whether it is measured depends on its scheduled time either way.
final class BenchConnection {
    unowned let worker: BenchWorker
    let tcp: TCPConnection
    private var state: RequestState
    private var scanner = ResponseScanner()
    private let capacity: Int
    /// Per in-flight request: scheduled time (decides whether it is measured), latency origin, actual send.
    private let scheduled: UnsafeMutablePointer<UInt64>
    private let intended: UnsafeMutablePointer<UInt64>
    private let sentAt: UnsafeMutablePointer<UInt64>
    /// When a slot last became free after all were taken (fixed rate: tells server-caused waits apart).
    private var lastFreedAt: UInt64 = 0
    private var head = 0
    private(set) var inflight = 0
    /// Measured requests this connection may still send (Int.max without --requests).
    private(set) var budget: Int
    /// Fixed-rate mode: the next request's scheduled time and the spacing.
    private var nextDue: UInt64 = 0
    private let interval: UInt64
    private(set) var alive = true

    init(worker: BenchWorker, tcp: TCPConnection, index: Int, pipeline: Int, budget: Int, interval: UInt64, seed: UInt64) {
        self.worker = worker
        self.tcp = tcp
        capacity = pipeline
        self.budget = budget
        self.interval = interval
        state = RequestState(connection: index, random: FastRandom(seed: seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
        scheduled = .allocate(capacity: pipeline)
        intended = .allocate(capacity: pipeline)
        sentAt = .allocate(capacity: pipeline)
    }

    deinit {
        scheduled.deallocate()
        intended.deallocate()
        sentAt.deallocate()
    }

    /// Starts reading and sending; fixed-rate connections start `offset` ns after `start` (staggered).
    func start(at start: UInt64, offset: UInt64) {
        nextDue = start + offset
        tcp.onRead = { [unowned self] bytes in self.received(bytes) }
        tcp.onClose = { [unowned self] error in self.closed(error) }
        tcp.startReading()
        pump(now: Clock.nanos())
    }

    /// True when this connection will send nothing more and owes nothing.
    var isFinished: Bool {
        !alive || (inflight == 0 && (budget == 0 || !worker.isSending))
    }

    /// Fixed rate: true once every request scheduled before the end of measuring has been sent (always
    /// true in closed-loop mode).
    var scheduleExhausted: Bool {
        interval == 0 || !alive || budget == 0 || nextDue >= worker.measureEnd
    }

    /// Fixed rate: requests scheduled before the end of measuring that were never sent (they count as
    /// unanswered when the run has to stop).
    var unsentScheduled: Int {
        guard !scheduleExhausted else { return 0 }
        let due = Int((worker.measureEnd - nextDue + interval - 1) / interval)
        return budget == Int.max ? due : min(due, budget)
    }

    /// Sends whatever may go now: closed loop fills free slots; fixed rate sends due requests.
    @inline(__always)
    func pump(now: UInt64) {
        guard alive else { return }
        if interval == 0 {
            while inflight < capacity && worker.maySend(at: now, budget: budget) { send(scheduled: now, intended: now, now: now) }
        } else {
            while inflight < capacity && nextDue <= now && worker.maySend(at: nextDue, budget: budget) {
                send(scheduled: nextDue, intended: lastFreedAt > nextDue ? nextDue : now, now: now)
                nextDue += interval
            }
        }
    }

    @inline(__always)
    private func send(scheduled time: UInt64, intended origin: UInt64, now: UInt64) {
        let scenario = worker.scenario
        tcp.send(reserving: scenario.maxRequestBytes) { buffer in
            scenario.writeRequest(into: buffer.baseAddress!, state: &state)
        }
        state.sent &+= 1
        let slot = (head + inflight) % capacity
        scheduled[slot] = time
        intended[slot] = origin
        sentAt[slot] = now
        inflight += 1
        if time >= worker.measureStart && budget != Int.max { budget -= 1 }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        let now = Clock.nanos()
        scanner.feed(bytes) { kind, line in
            if kind == .push {
                worker.pushed(line, now: now)
                return
            }
            guard inflight > 0 else { worker.unexpectedLine(); return }
            let (sc, t, s) = (scheduled[head], intended[head], sentAt[head])
            head = head + 1 == capacity ? 0 : head + 1
            if inflight == capacity { lastFreedAt = now }
            inflight -= 1
            worker.completed(scheduled: sc, intended: t, sentAt: s, now: now, kind: kind, line: line)
        }
        pump(now: now)
        if inflight == 0 && isFinished { worker.connectionFinished() }
    }

    private func closed(_ error: LoopError?) {
        guard alive else { return }
        alive = false
        worker.connectionLost(self, owed: inflight, error: error)
        inflight = 0
    }

    /// Closes the socket at the end of the run; in-flight requests are reported by the worker, not as lost.
    func stop() {
        guard alive else { return }
        alive = false
        tcp.abort()
    }
}
