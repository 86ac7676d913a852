import HearthEngine
import HearthModel
import HearthStorage

extension Server {
    /// Reads what a write needs first (`Engine.readsNeeded`) on a reader thread; back on the loop the engine
    /// learns it, `then` runs with the read's failure (nil: learned; a DATA_LOSS is also logged), and what was
    /// learned is forgotten right after, since it is only for the commit `then` makes.
    func readForWrite(_ reads: WriteReads, then: @escaping (HearthError?) -> Void) {
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
            var failure: HearthError?
            switch outcome.result! {
            case .success(let result):
                engine.learn(result, for: reads)
            case .failure(let error):
                engine.learn(nil, for: reads)
                if error.code == .dataLoss { engine.onDataLoss?(error) }
                failure = error
            }
            defer { engine.forgetLearned() }
            then(failure)
        })
    }
}

/// Carries a write's reads back from a reader thread (written before `done` runs; the worker pool's lock
/// orders it).
final class WriteReadOutcome: @unchecked Sendable {
    var result: Result<WriteReadResult, HearthError>?
}
