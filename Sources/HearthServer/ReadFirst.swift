import HearthEngine
import HearthModel
import HearthStorage

extension Server {
    /// How many times one piece of work may miss and read again before it is refused (`MissedReads`).
    static let maxReadRounds = 24

    /// Reads what the loop needs first (`Engine.readsNeeded`: what a write touches, or what the loop missed) on
    /// a reader thread. Back on the loop, and for a read of the published state once its snapshot's seq is
    /// published here, the engine learns it; `then` runs with the read's failure (nil: learned; a DATA_LOSS is
    /// also logged), and what was learned is forgotten right after, since it is only for the work `then` runs.
    func readFirst(_ reads: WriteReads, then: @escaping (HearthError?) -> Void) {
        let store = self.store
        let codec = engine.codec
        onReader({ () throws(HearthError) in try reads.read(from: store, codec: codec) }, done: { [unowned self] outcome in
            switch outcome {
            case .success(let result):
                whenPublished(result.seq) { [unowned self] in learned(result, reads, then) }
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

    /// Runs `read` on a reader thread; `done` runs on the loop with its outcome. The read counts as in flight
    /// until then (`readsInFlight`: a shutdown waits for it). An `urgent` read (one a publication waits for,
    /// and so every connection's writes) starts before the client reads queued on the readers.
    func onReader<T>(_ read: @escaping @Sendable () throws(HearthError) -> T, urgent: Bool = false,
                     done: @escaping (Result<T, HearthError>) -> Void) {
        offLoopReadStarted()
        readers.submit({ () -> Result<T, HearthError> in
            do throws(HearthError) { return .success(try read()) } catch { return .failure(error) }
        }, urgent: urgent, done: { [unowned self] (outcome: Result<T, HearthError>) in
            offLoopReadReturned()
            defer { maybeFinishShutdown() }
            done(outcome)
        })
    }
}

/// What a piece of work missed in its runs so far (`Engine.takeMissing`), read again with what it misses
/// next: each round reads what the last one found missing (a rule's `get()` can depend on another's result),
/// or what a publication changed while it was read; after `Server.maxReadRounds` rounds the work is refused.
struct MissedReads {
    private(set) var paths: [DocumentPath] = []
    private(set) var rounds = 0

    /// Adds a run's misses; the refusal instead once the work has run `Server.maxReadRounds` times.
    mutating func add(_ missed: [DocumentPath]) -> HearthError? {
        guard rounds < Server.maxReadRounds else {
            return HearthError(.unavailable, "the documents this request reads changed or kept leading to others while they were read from the store (\(rounds) rounds); try again")
        }
        rounds += 1
        paths += missed
        return nil
    }

    /// What follows a run of the work that threw.
    enum Step {
        /// The loop missed nothing (or nothing needs reading): the work's own error stands.
        case stands
        /// Refused after `Server.maxReadRounds` rounds.
        case refused(HearthError)
        /// Read `reads` (`Server.readFirst`), then run the work again with `missed`.
        case again(MissedReads, WriteReads)
    }

    /// After a run of the work threw: takes what the loop missed meanwhile (`Engine.takeMissing`), adds it to
    /// these rounds, and asks `reads` what to read next, given every path missed so far and the request ID
    /// missed in this run.
    func next(_ engine: Engine, reads: (MissedReads, String?) -> WriteReads?) -> Step {
        let missed = engine.takeMissing()
        guard !missed.paths.isEmpty || missed.requestID != nil else { return .stands }
        var next = self
        if let refusal = next.add(missed.paths) { return .refused(refusal) }
        guard let toRead = reads(next, missed.requestID) else { return .stands }
        return .again(next, toRead)
    }
}
