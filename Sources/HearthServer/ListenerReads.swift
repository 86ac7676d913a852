import HearthEngine
import HearthModel
import HearthStorage

/// Reads the listener hub makes off the loop: a listener's first snapshot, and a limit window to refill in
/// the next publication (`ListenerHub+WindowReads.swift`), on a reader thread against a snapshot.
extension Server {
    /// Runs `read` on a reader; `done` runs on the loop, once the snapshot's seq is published unless
    /// `waitForPublication` is false (a window's rows at a seq, exact whatever is published). With
    /// `encodeInitialAs`, the reader also encodes the initial snapshot of the rows it read for that
    /// subscription (`InitialSnapshotLine`).
    func readForListeners(_ read: FirstSnapshotRead, waitForPublication: Bool = true, encodeInitialAs sub: String? = nil,
                          urgent: Bool = false,
                          then done: @escaping (Result<FirstSnapshot, HearthError>, InitialSnapshotLine?) -> Void) {
        let store = self.store
        let catalog = engine.catalogView
        let codec = engine.codec
        let cache = engine.documentCache
        onReader({ () throws(HearthError) in
            let (snapshot, indexes) = try catalog.open { () throws(HearthError) in try store.snapshot() }
            defer { snapshot.close() }
            let first = try read.read(on: snapshot, indexes: indexes, codec: codec, cache: cache)
            return (first, sub.map { InitialSnapshotLine(sub: $0, seq: first.seq, rows: first.rows) })
        }, urgent: urgent, done: { [unowned self] outcome in
            let result = outcome.map(\.0)
            let line = try? outcome.get().1
            switch result {
            case .failure(let error): if error.code == .dataLoss { engine.onDataLoss?(error) }
            case .success(let first): if let damage = first.damage { engine.onDataLoss?(damage) }
            }
            guard waitForPublication, case .success(let first) = result else { return done(result, line) }
            whenPublished(first.seq) { done(result, line) }
        })
    }
}

extension Server {
    /// After `Engine.reset(to:)`: each listener's whole result is read on a reader thread, and its
    /// connection sends it as a reset once registered (`Session.readAfterReset`).
    func readAfterReset(_ reads: [(Listener, FirstSnapshotRead)]) {
        for (l, read) in reads {
            guard let session = l.subscriber as? Session else { continue }
            session.readAfterReset(l, read)
        }
    }

    /// True when `records` can be published now without a listener's limit window read on the loop. Else
    /// (some window would be refilled) those reads are under way on reader threads, and `whenRead` runs once
    /// they are all back: ask again then (a refill can lead to another). Over every store: a refill over
    /// many index entries the query's filters skip would hold every client (`ListenerHub.readsOffLoop`).
    func windowsReady(for records: [CommitRecord], whenRead: @escaping () -> Void) -> Bool {
        guard listenerHub.readsOffLoop else { return true }
        let reads = listenerHub.windowReads(for: records)
        guard !reads.isEmpty else { return true }
        let left = Counter(reads.count)
        for w in reads {
            // Urgent: the batch, and so every connection's writes, waits for it.
            readForListeners(w.read, waitForPublication: false, urgent: true) { [unowned self] result, _ in
                listenerHub.provide(w, result)
                left.value -= 1
                if left.value == 0 { whenRead() }
            }
        }
        return false
    }
}

/// A count the loop thread keeps across callbacks.
private final class Counter {
    var value: Int
    init(_ value: Int) { self.value = value }
}

extension Server {
    /// Runs `then` now if `seq` is published here, else once it is (parked at the snapshot gate until then).
    func whenPublished(_ seq: UInt64, _ then: @escaping () -> Void) {
        PublicationWaiter(engine: engine, seq: seq, then: then).snapshotGateOpened()
    }
}

/// Runs `then` once the engine has published `seq` (parked at the snapshot gate until then).
final class PublicationWaiter: SnapshotWaiter {
    private let engine: Engine
    private let seq: UInt64
    private let then: () -> Void

    init(engine: Engine, seq: UInt64, then: @escaping () -> Void) {
        self.engine = engine
        self.seq = seq
        self.then = then
    }

    func snapshotGateOpened() {
        if seq <= engine.lastDurableSeq { then() } else { engine.gate.wait(self) }
    }
}
