@testable import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// A commit named by a request ID is applied once: a retry while it is pending gets its outcome when it
/// lands, and a retry after it is durable is answered from the store (`committedRequest`), with the same
/// seq, commit time, update times and transform results, marked as a duplicate.
@Suite struct RetriedCommitTests {
    func bump(_ path: String) -> Write {
        update(path, m([:]), mask: [], transforms: [FieldTransform(field: fp("n"), transform: .increment(.int(1)))])
    }

    @Test func aRetryWhilePendingOrAfterwardsAppliesOnce() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["n": .int(0)]))])
        var first: Result<CommitOutcome, HearthError>?, retry: Result<CommitOutcome, HearthError>?
        let seq = try h.engine.commit([bump("c/a")], requestID: "r1") { first = $0 }
        #expect(try h.engine.commit([bump("c/a")], requestID: "r1") { retry = $0 } == seq)
        #expect(try h.engine.committedRequest("r1") == nil, "pending: the retry waits for it")
        h.flush()
        let a = try first!.get(), b = try retry!.get()
        #expect(!a.duplicate && b.duplicate)
        #expect(a.seq == b.seq && a.commitTime == b.commitTime && a.results == b.results)
        #expect(a.results.first?.transformResults == [.int(1)])
        #expect(try h.fields("c/a")?["n"] == .int(1), "applied once")
        #expect(try h.store.lastSeq() == 2)

        // Later: answered from the store, exactly as the write was.
        let later = try #require(try h.engine.committedRequest("r1"))
        #expect(later.duplicate && later.seq == a.seq && later.commitTime == a.commitTime && later.results == a.results)
        // Another ID is another write.
        guard case .success(let other) = h.commit([bump("c/a")]) else { Issue.record("the commit failed"); return }
        #expect(other.seq == 3 && !other.duplicate)
        #expect(try h.fields("c/a")?["n"] == .int(2))
        #expect(try h.engine.committedRequest("r2") == nil)
    }

    @Test func aFailedCommitFailsItsRetriesAndAFreshTryApplies() throws {
        let h = try EngineHarness()
        var first: Result<CommitOutcome, HearthError>?, retry: Result<CommitOutcome, HearthError>?
        try h.engine.commit([set("c/a", m(["n": .int(5)]))], requestID: "r") { first = $0 }
        try h.engine.commit([set("c/a", m(["n": .int(5)]))], requestID: "r") { retry = $0 }
        let batch = try #require(h.engine.takeBatch())
        h.engine.finish(batch, error: HearthError(.unavailable, "the disk went away"))
        #expect(first.map { if case .failure = $0 { true } else { false } } == true)
        #expect(retry.map { if case .failure = $0 { true } else { false } } == true)
        #expect(try h.engine.committedRequest("r") == nil)
        var again: Result<CommitOutcome, HearthError>?
        try h.engine.commit([set("c/a", m(["n": .int(5)]))], requestID: "r") { again = $0 }
        h.flush()
        #expect(try again?.get().duplicate == false)
        #expect(try h.fields("c/a")?["n"] == .int(5))
    }
}
