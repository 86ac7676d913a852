import HearthEngine
import HearthModel
import HearthStorage

/// The group commit: each loop turn hands the commits queued since the last batch to the writer thread, and
/// the loop publishes what it made durable.
extension Server {
    /// Whether the loop's flush passes are bounded (`EventLoop.boundsFlushPasses`) after the commits `records`
    /// were taken (the last batch taken, while it is made durable and its publication is written; on a
    /// follower, the commits adopted from the feed). Bounded passes let a write read between them be
    /// committed during the fan-out (its fsync no longer waits for the fan-out's end), but the loop's work on
    /// that write then delays the rest of the fan-out. That pays while writes are scarce and small, as the
    /// last batch is taken to show: one commit changing at most `smallCommitDocuments` documents. A batch of
    /// several commits means writes are queued deep and keep the writer busy anyway; a large commit (a post
    /// fanned out to 1,000 feeds) is likely followed by another, whose loop work costs more than the fsync it
    /// would overlap.
    static func boundsFlushPasses(after records: [CommitRecord]) -> Bool {
        records.count <= 1 && (records.first?.mutations.count ?? 0) <= smallCommitDocuments
    }
    static let smallCommitDocuments = 32

    /// Once per loop turn: if no batch is being made durable, hand every commit queued since the last one
    /// to the writer thread as one transaction.
    func startGroupCommit() {
        guard let batch = engine.takeBatch() else { return }
        loop.boundsFlushPasses = Self.boundsFlushPasses(after: batch.records)   // until the next batch is taken
        let store = self.store
        let outcome = BatchOutcome()
        loop.submit({
            let started = ServerMetrics.nanos()
            outcome.error = Engine.makeDurable(batch, in: store)
            outcome.micros = (ServerMetrics.nanos() &- started) / 1000
        }, done: { [unowned self] in
            if outcome.error == nil { self.metrics.batchLanded(commits: batch.records.count, micros: outcome.micros) }
            self.batchLanded(batch, error: outcome.error)
        })
    }

    /// Back on the loop thread with a batch the writer made durable (or failed): the engine publishes it,
    /// acknowledges its commits and wakes the reads that waited for it (`Engine.finish`).
    package func batchLanded(_ batch: CommitBatch, error: HearthError?) {
        // A window the publication would refill is read first, off the loop (the batch stays in flight).
        guard error != nil || windowsReady(for: batch.records, whenRead: { [unowned self] in self.batchLanded(batch, error: nil) }) else { return }
        if let error {
            let first = batch.records.first?.seq ?? 0, last = batch.records.last?.seq ?? 0
            let what = "commit of seq \(first)\(last == first ? "" : "...\(last)") failed"
            if !error.isDiskFull {
                logger.error("\(what): \(error)")
            } else if engine.diskFull == nil {
                enterDiskFull(cause: "\(what): \(error.message)")
            } else {
                logger.debug("\(what), the disk is still full: \(error.message)")
            }
        }
        engine.finish(batch, error: error)
        cluster?.engineSettled()
        if error == nil && engine.diskFull != nil { checkDiskSpace() }
        if shuttingDown { maybeFinishShutdown() }
    }
}

/// Carries the writer thread's result back to the loop thread (written before `done` runs; libuv orders it).
private final class BatchOutcome: @unchecked Sendable {
    var error: HearthError?
    /// How long the writer thread took.
    var micros: UInt64 = 0
}
