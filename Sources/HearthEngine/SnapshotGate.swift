import HearthModel
import HearthStorage

/// Something parked until a publication has finished: a connection whose next line is a read.
public protocol SnapshotWaiter: AnyObject {
    /// The publication it waited for has finished: run what was parked. Called on the loop thread, with the
    /// gate quiet, after every listener has the batch and every commit of it has its response.
    func snapshotGateOpened()
}

/// The one rule for when a read may run, so that every read (get, getAll, query, count, aggregate, explain,
/// a listen's first snapshot) is exactly the published state, `Engine.lastDurableSeq`.
///
/// The store is at the published seq except between the moment the writer thread lands a batch and the end
/// of its publication on the loop. The gate tracks that window as a phase:
///
/// ```
///            takeBatch             writer landed it          finish starts        finish ends
///   quiet ───────────────► inFlight ─────────────► landed ───────────────► publishing ──────────► quiet
///     ▲                       │     (seen by a read or                                (waiters run)
///     │                       │      by the batch's flag)
///     └───────────────────────┘  finish of a failed batch (nothing landed)
/// ```
///
/// - `quiet`: a read runs and is exact.
/// - `inFlight`: a read runs at once (it never waits for an fsync it does not depend on). If it read the
///   store, it is confirmed afterwards: exact only if the batch still has not landed (`confirm`). In-memory
///   state (the document cache, shared listener views) only ever holds the published state, so a read that
///   touched nothing else needs no confirmation.
/// - `landed`: a read still runs at once, for the same reason: one that touched only memory is exact, and
///   one that read the store is known to be torn (`confirm` says so without asking the store) and runs again
///   after the publication. A batch can stay landed for a while (its limit-window refills are read on reader
///   threads first, `Server.windowsReady`), and a cached `get` need not wait for that.
/// - `publishing`: nothing reads (a read dispatched then is a re-entrancy bug); a parked read's waiter runs
///   when the publication has finished.
///
/// Publication order (`Engine.finish`), so nothing can observe a half-published batch: the engine's state
/// moves to the new seq, every listener and shared view applies the batch, each commit's completion fills its
/// response slot (and only that), and last the gate turns quiet and wakes its waiters in the order they
/// parked. A read dispatched while publishing would be a re-entrancy bug: it asserts in debug builds.
///
/// A read handed to a reader thread (every query, count, aggregation, explain, and a get the document cache
/// cannot answer) is admitted here like any other, but reads a snapshot of its own: nothing to confirm. Its
/// answer carries the snapshot's seq and waits, through `wait`, until that seq is published.
///
/// Loop thread only. Tested on its own in `SnapshotGateTests`.
public final class SnapshotGate {
    public enum Phase: Equatable, Sendable {
        /// The store holds exactly the published state.
        case quiet
        /// A batch is being made durable and has not been seen in the store.
        case inFlight
        /// The batch is in the store but not yet published.
        case landed
        /// `Engine.finish` is publishing the batch.
        case publishing
    }

    /// What a read was admitted with: hand it back to `confirm` once the read is done.
    public struct Ticket: Sendable {
        fileprivate let optimistic: Bool
        fileprivate let storeReads: UInt64
    }

    public enum Admission: Sendable {
        /// Run the read now, then `confirm` the ticket before anything it read leaves the engine.
        case run(Ticket)
        /// Park the read with `wait(_:)`; it runs again when the current publication has finished.
        case wait
    }

    public private(set) var phase: Phase = .quiet
    /// Store reads made by the engine so far (only compared, never interpreted).
    public private(set) var storeReads: UInt64 = 0
    /// How many reads had to be confirmed, and how many of those were found torn (ran again later).
    public private(set) var confirmations = 0
    public private(set) var retries = 0

    private var batch: CommitBatch?
    private var waiters: [SnapshotWaiter] = []
    private var waiting: Set<ObjectIdentifier> = []
    /// The store's own seq, read on the loop thread.
    private let storeSeq: () throws(HearthError) -> UInt64
    private let publishedSeq: () -> UInt64
    private var thread = ThreadOwner()

    /// `storeSeq` reads the seq of the last commit in the store; `publishedSeq` is the engine's published seq.
    public init(storeSeq: @escaping () throws(HearthError) -> UInt64, publishedSeq: @escaping () -> UInt64) {
        self.storeSeq = storeSeq
        self.publishedSeq = publishedSeq
    }

    func adoptCurrentThread() { thread.adopt() }

    /// The number of parked waiters.
    public var waiterCount: Int { waiters.count }

    // MARK: Reads

    /// May a read run now?
    public func admit() -> Admission {
        thread.check("SnapshotGate.admit")
        switch phase {
        case .quiet:
            return .run(Ticket(optimistic: false, storeReads: storeReads))
        case .inFlight, .landed:
            if phase == .inFlight, batch?.hasLanded == true { phase = .landed }
            return .run(Ticket(optimistic: true, storeReads: storeReads))
        case .publishing:
            assertionFailure("a read was dispatched while a batch was being published (re-entrancy)")
            return .wait
        }
    }

    /// True when the read admitted with `ticket` saw exactly the published state. False when it read the
    /// store and the batch in flight may have landed (or had) while it read: drop what it read, `wait`, and
    /// run it again.
    public func confirm(_ ticket: Ticket) -> Bool {
        thread.check("SnapshotGate.confirm")
        guard ticket.optimistic, storeReads != ticket.storeReads else { return true }
        confirmations += 1
        if phase == .inFlight && batch?.hasLanded != true {
            let seq: UInt64?
            do { seq = try storeSeq() } catch { seq = nil }
            if seq == publishedSeq() { return true }
        }
        if phase == .inFlight { phase = .landed }
        retries += 1
        return false
    }

    /// Parks `waiter` until the current publication (or, while a batch is in flight, the next one) has
    /// finished. Parking twice before then is parking once.
    public func wait(_ waiter: SnapshotWaiter) {
        thread.check("SnapshotGate.wait")
        assert(phase != .quiet || expectsPublications, "parking with no publication to wait for would never wake")
        guard waiting.insert(ObjectIdentifier(waiter)).inserted else { return }
        waiters.append(waiter)
    }

    /// Forgets a waiter that went away (a closed connection).
    public func forget(_ waiter: SnapshotWaiter) {
        guard waiting.remove(ObjectIdentifier(waiter)) != nil else { return }
        waiters.removeAll { $0 === waiter }
    }

    /// Counts a read of the store (the engine calls it at each read site).
    @inline(__always) func noteStoreRead() { storeReads &+= 1 }

    // MARK: The batch's life (Engine)

    func batchTaken(_ batch: CommitBatch) {
        precondition(phase == .quiet, "a batch was taken while another is in flight")
        self.batch = batch
        phase = .inFlight
    }

    /// Publications come without this node's batches (it publishes another node's commits from the feed,
    /// `Engine.adopt`): a read may wait while the gate is quiet, for a seq the feed has not brought yet.
    public var expectsPublications = false

    /// A publication of commits this node did not make (`Engine.adopt`): no batch of its own is in flight.
    func adoptionStarted() {
        precondition(phase == .quiet, "another node's commits are published only while no batch is in flight")
        phase = .publishing
    }

    func publicationStarted() {
        precondition(phase == .inFlight || phase == .landed, "publication without a batch in flight")
        phase = .publishing
    }

    /// The publication has finished: the store is at the published seq again. Wakes the waiters, oldest
    /// first; one that parks again while they run waits for the next publication.
    func publicationFinished() {
        precondition(phase == .publishing, "publication finished twice")
        phase = .quiet
        batch = nil
        guard !waiters.isEmpty else { return }
        let woken = waiters
        waiters.removeAll(keepingCapacity: true)
        waiting.removeAll(keepingCapacity: true)
        for w in woken { w.snapshotGateOpened() }
    }
}
