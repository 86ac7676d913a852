import HearthEngine
import HearthModel
import HearthStorage
import Testing

/// The pipeline: commits queue in memory, go to the store in one batch, and are acknowledged only after it.
@Suite struct GroupCommitTests {
    @Test func commitsQueuedTogetherBecomeOneBatchAndAckAfterDurability() throws {
        let h = try EngineHarness()
        var acks: [UInt64] = []
        for i in 0..<10 {
            try h.engine.commit([set("c/d\(i)", m(["i": .int(Int64(i))]))]) { acks.append(try! $0.get().seq) }
        }
        #expect(acks.isEmpty)
        #expect(try h.store.lastSeq() == 0)
        #expect(try h.engine.get(path("c/d0")) == nil)        // reads see durable state only
        let batch = try #require(h.engine.takeBatch())
        #expect(batch.records.count == 10)
        #expect(h.engine.takeBatch() == nil)                  // one batch in flight at a time
        #expect(Engine.makeDurable(batch, in: h.store) == nil)
        #expect(acks.isEmpty)
        h.engine.finish(batch, error: nil)
        #expect(acks == Array(1...10))
        #expect(try h.engine.get(path("c/d9")) != nil)
    }

    @Test func writesSeeEarlierNonDurableWrites() throws {
        let h = try EngineHarness()
        var results: [Result<CommitOutcome, HearthError>] = []
        try h.engine.commit([create("c/a", m(["n": 0]))]) { results.append($0) }
        #expect(throws: HearthError.self) { try h.engine.commit([create("c/a", m([:]))]) { _ in } }
        let inc = FieldTransform(field: fp("n"), transform: .increment(1))
        for _ in 0..<100 { try h.engine.commit([update("c/a", m([:]), mask: [], transforms: [inc])]) { results.append($0) } }
        h.flush()
        #expect(results.count == 101)
        #expect(try h.fields("c/a") == m(["n": 100]))
    }

    @Test func aFailedBatchFailsEverythingBehindIt() throws {
        let h = try EngineHarness()
        var results: [Result<CommitOutcome, HearthError>] = []
        try h.engine.commit([set("c/a", m(["n": 1]))]) { results.append($0) }
        let batch = try #require(h.engine.takeBatch())
        try h.engine.commit([update("c/a", m(["n": 2]), mask: ["n"])]) { results.append($0) }
        h.engine.finish(batch, error: HearthError(.internal, "disk on fire"))
        #expect(results.count == 2)
        #expect(results.allSatisfy { if case .failure = $0 { return true } else { return false } })
        #expect(h.engine.isIdle)
        // The state the failed commits built on is gone: the document never existed.
        #expect(throws: HearthError.self) { try h.engine.commit([update("c/a", m(["n": 3]), mask: ["n"])]) { _ in } }
        // Seqs are never reused.
        try h.engine.commit([set("c/b", m([:]))]) { results.append($0) }
        h.flush()
        #expect(try results.last!.get().seq == 3)
    }
}
