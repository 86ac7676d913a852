import HearthEngine
import HearthModel
import HearthStorage

extension Server {
    /// How many times one piece of work may miss and read again before it is refused: each round reads
    /// what the last one found missing (a rule's `get()` can depend on another's result), or what a
    /// publication changed while it was read.
    static let maxReadRounds = 24

    static func readRoundsExceeded(_ rounds: Int) -> HearthError {
        HearthError(.unavailable, "the documents this request reads changed or kept leading to others while they were read from the store (\(rounds) rounds); try again")
    }

    /// Reads what the loop needs first (`Engine.readsNeeded`: what a write touches, or what the loop missed) on
    /// a reader thread. Back on the loop, and for a read of the published state once its snapshot's seq is
    /// published here, the engine learns it; `then` runs with the read's failure (nil: learned; a DATA_LOSS is
    /// also logged), and what was learned is forgotten right after, since it is only for the work `then` runs.
    func readFirst(_ reads: WriteReads, then: @escaping (HearthError?) -> Void) {
        let store = self.store
        let codec = engine.codec
        let outcome = WriteReadOutcome()
        offLoopReadStarted()
        readers.submit({
            do throws(HearthError) {
                outcome.result = .success(try reads.read(from: store, codec: codec))
            } catch {
                outcome.result = .failure(error)
            }
        }, done: { [unowned self] in
            offLoopReadReturned()
            defer { maybeFinishShutdown() }
            switch outcome.result! {
            case .success(let result):
                guard result.seq > engine.lastDurableSeq else { return learned(result, reads, then) }
                engine.gate.wait(PublicationWaiter(engine: engine, seq: result.seq) { [unowned self] in learned(result, reads, then) })
            case .failure(let error):
                engine.learn(nil, for: reads)
                if error.code == .dataLoss { engine.onDataLoss?(error) }
                then(error)
                engine.forgetLearned()
            }
        })
    }

    private func learned(_ result: WriteReadResult, _ reads: WriteReads, _ then: (HearthError?) -> Void) {
        engine.learn(result, for: reads)
        then(nil)
        engine.forgetLearned()
    }
}

/// Carries a write's reads back from a reader thread (written before `done` runs; the worker pool's lock
/// orders it).
final class WriteReadOutcome: @unchecked Sendable {
    var result: Result<WriteReadResult, HearthError>?
}
