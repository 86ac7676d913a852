import HearthEngine
import HearthModel
import HearthStorage

/// Reads the listener hub makes off the loop (a limit window read again, `ListenerHub+Refill.swift`): on a
/// reader thread against a snapshot, answered on the loop once the snapshot's seq is published.
extension Server {
    func readForListeners(_ read: FirstSnapshotRead, then done: @escaping (Result<FirstSnapshot, HearthError>) -> Void) {
        let store = self.store
        let catalog = engine.catalogView
        let codec = engine.codec
        let cache = engine.documentCache
        let outcome = FirstSnapshotOutcome()
        offLoopReadStarted()
        readers.submit({
            do throws(HearthError) {
                let (snapshot, indexes) = try catalog.open { () throws(HearthError) in try store.snapshot() }
                defer { snapshot.close() }
                outcome.result = .success(try read.read(on: snapshot, indexes: indexes, codec: codec, cache: cache))
            } catch {
                outcome.result = .failure(error)
            }
        }, done: { [unowned self] in
            offLoopReadReturned()
            defer { maybeFinishShutdown() }
            let result = outcome.result!
            switch result {
            case .failure(let error): if error.code == .dataLoss { engine.onDataLoss?(error) }
            case .success(let first): if let damage = first.damage { engine.onDataLoss?(damage) }
            }
            guard case .success(let first) = result, first.seq > engine.lastDurableSeq else { return done(result) }
            engine.gate.wait(PublicationWaiter(engine: engine, seq: first.seq) { done(result) })
        })
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

/// Carries a first snapshot read on a reader thread back to the loop (written before `done` runs; the worker
/// pool's lock orders it).
final class FirstSnapshotOutcome: @unchecked Sendable {
    var result: Result<FirstSnapshot, HearthError>?
}
