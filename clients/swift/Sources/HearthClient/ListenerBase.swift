import Foundation

/// What the connection needs from a listener. Implementations are confined to the connection's queue.
protocol ListenerCore: AnyObject, Sendable {
    var localID: Int { get }
    /// The subscription ID on the current link, nil while unsubscribed.
    var sub: String? { get set }
    /// The history ID the current subscription's listen response named (nil: none, an older server).
    var subscriptionHistory: String? { get set }
    /// `{"op":"listen",...}` with `resumeAfter` (and the `history` it belongs to, when known) once the
    /// listener has a state to resume.
    func listenRequest() -> [String: JSON]
    /// Applies a pushed snapshot and delivers it when it changed what the app sees.
    func apply(snapshot: [String: JSON]) -> ApplyOutcome
    /// Every change up to `seq` has been delivered: the resume point moves there.
    func advance(toHeartbeat seq: Int64)
    /// Forgets the resume point (keeping the state) so the next listen starts fresh and is diffed.
    func prepareResync()
    /// Ends the listener with an error.
    func fail(_ error: HearthError)
}

/// What applying a pushed snapshot led to.
enum ApplyOutcome {
    /// Applied (or recognised as a replay and skipped).
    case applied
    /// The snapshot does not fit the state: subscribe afresh and diff.
    case resync
    /// The listener cannot continue.
    case failed(HearthError)
}

/// State shared by document and query listeners. Confined to the connection's queue after `start`.
class ListenerBase: @unchecked Sendable {
    private static let counter = IDCounter()

    let localID = ListenerBase.counter.next()
    var sub: String?
    var subscriptionHistory: String?
    let registration: Registration
    /// `{"path":..}` or `{"query":{..}}`.
    let target: [String: JSON]
    /// The seq the listener's state is exact at; sent as `resumeAfter`.
    var lastSeq: Int64?
    /// The database history `lastSeq` belongs to (from the listen response of the subscription whose
    /// snapshot set it); sent as `history` beside `resumeAfter`, so that a seq is never resumed against
    /// another database (or a restored one): the server answers that with a reset. Nil with a server that
    /// names no history.
    var history: String?
    /// A state has been delivered (the first snapshot arrived).
    var hasState = false
    /// A snapshot arrived since the last listen (heartbeats only count after one).
    var caughtUp = false
    /// Fresh listens in a row whose snapshots could not be applied.
    var failedResyncs = 0

    init(target: [String: JSON], registration: Registration) {
        self.target = target
        self.registration = registration
    }

    func listenRequest() -> [String: JSON] {
        var r = target
        r["op"] = .string("listen")
        if hasState, let lastSeq {
            r["resumeAfter"] = .int(lastSeq)
            if let history { r["history"] = .string(history) }
        }
        caughtUp = false
        subscriptionHistory = nil
        return r
    }

    func advance(toHeartbeat seq: Int64) {
        guard hasState, caughtUp, let last = lastSeq, seq > last else { return }
        lastSeq = seq
    }

    func prepareResync() {
        lastSeq = nil
        history = nil
        failedResyncs += 1
    }

    /// True when a snapshot is a replay of one already applied (same or older seq on a resumed stream).
    func isStale(seq: Int64, fresh: Bool) -> Bool {
        guard !fresh, let last = lastSeq else { return false }
        return seq <= last
    }

    /// Records a successfully applied snapshot: the state is exact at `seq` of the subscription's history.
    func applied(seq: Int64) {
        lastSeq = seq
        history = subscriptionHistory
        caughtUp = true
        hasState = true
        failedResyncs = 0
    }

    /// A snapshot could not be applied: resync, unless fresh subscriptions already failed repeatedly.
    func divergence() -> ApplyOutcome {
        guard failedResyncs < 3 else {
            return .failed(.internalError("listener snapshots could not be applied after \(failedResyncs) fresh subscriptions"))
        }
        return .resync
    }

    func fail(_ error: HearthError) {}
}

private final class IDCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value += 1; return value } }
}
