import HearthLoop

/// One bench connection's driver (loop thread only): keeps up to `pipeline` requests in flight, remembers
/// each one's intended send time in a ring (responses arrive in request order on a connection, so the
/// oldest in-flight request is always the one answered), and reports completions to its worker.
///
/// Closed loop: a request is sent as soon as a slot frees up; its intended time is its send time.
/// Fixed rate: requests are due at `nextDue`, `interval` apart; a due request waits for a free slot but
/// keeps its scheduled time, so a stalled server shows up as latency (no coordinated omission).
final class BenchConnection {
    unowned let worker: BenchWorker
    let tcp: TCPConnection
    private var state: RequestState
    private var scanner = ResponseScanner()
    private let capacity: Int
    private let intended: UnsafeMutablePointer<UInt64>
    private let sentAt: UnsafeMutablePointer<UInt64>
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
        intended = .allocate(capacity: pipeline)
        sentAt = .allocate(capacity: pipeline)
    }

    deinit {
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

    /// Sends whatever may go now: closed loop fills free slots; fixed rate sends due requests.
    @inline(__always)
    func pump(now: UInt64) {
        guard alive else { return }
        if interval == 0 {
            while inflight < capacity && worker.maySend(at: now, budget: budget) { send(intended: now, now: now) }
        } else {
            while inflight < capacity && nextDue <= now && worker.maySend(at: nextDue, budget: budget) {
                send(intended: nextDue, now: now)
                nextDue += interval
            }
        }
    }

    @inline(__always)
    private func send(intended time: UInt64, now: UInt64) {
        let scenario = worker.scenario
        tcp.send(reserving: scenario.maxRequestBytes) { buffer in
            scenario.writeRequest(into: buffer.baseAddress!, state: &state)
        }
        state.sent &+= 1
        let slot = (head + inflight) % capacity
        intended[slot] = time
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
            let t = intended[head]
            let s = sentAt[head]
            head = head + 1 == capacity ? 0 : head + 1
            inflight -= 1
            worker.completed(intended: t, sentAt: s, now: now, kind: kind, line: line)
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
