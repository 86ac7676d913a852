import HearthEngine
import HearthModel
import HearthStorage
import Testing

@Suite struct EngineWriteTests {
    @Test func createThenCreateAgainIsAlreadyExists() throws {
        let h = try EngineHarness()
        #expect(try h.commit([create("c/a", m(["x": 1]))]).get().seq == 1)
        let r = h.commit([create("c/a", m(["x": 2]))])
        #expect(r.failureCode == .alreadyExists)
        #expect(try h.fields("c/a") == m(["x": 1]))
    }

    @Test func updateMissingIsNotFound() throws {
        let h = try EngineHarness()
        let r = h.commit([update("c/a", m(["x": 1]), mask: ["x"])])
        #expect(r.failureCode == .notFound)
        #expect(r.failureMessage?.contains("c/a") == true)
    }

    @Test func setReplacesAndMergeKeeps() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["x": 1, "y": ["z": 2]]))])
        _ = h.commit([merge("c/a", m(["y": ["w": 3]]), mask: ["y.w"])])
        #expect(try h.fields("c/a") == m(["x": 1, "y": ["w": 3, "z": 2]]))
        _ = h.commit([set("c/a", m(["q": true]))])
        #expect(try h.fields("c/a") == m(["q": true]))
    }

    @Test func updateMaskDeletesFieldsMissingFromData() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/a", m(["a": 1, "b": ["c": 1, "d": 2]]))])
        _ = h.commit([update("c/a", m([:]), mask: ["a", "b.c"])])
        #expect(try h.fields("c/a") == m(["b": ["d": 2]]))
    }

    @Test func updateTimeAdvancesOnlyOnRealChange() throws {
        let h = try EngineHarness()
        let t1 = try h.commit([set("c/a", m(["x": 1]))]).get().results[0].updateTime
        h.now += 10
        let same = try h.commit([set("c/a", m(["x": 1]))]).get()
        #expect(same.results[0].updateTime == t1)
        #expect(try h.doc("c/a")?.updateTime == t1)
        h.now += 10
        let changed = try h.commit([set("c/a", m(["x": 1.0]))]).get()   // 1 -> 1.0 is a change of type
        #expect(changed.results[0].updateTime > t1)
        #expect(try h.doc("c/a")?.createTime == t1)
    }

    @Test func unchangedCommitPublishesNoMutation() throws {
        let h = try EngineHarness()
        let t1 = try h.commit([set("c/a", m(["x": 1]))]).get().results[0].updateTime
        h.now += 10
        let back = try h.commit([set("c/a", m(["x": 2])), set("c/a", m(["x": 1]))]).get()   // changed and changed back
        #expect(h.published.count == 2)
        #expect(h.published[1].mutations.isEmpty)
        #expect(back.results.map(\.updateTime) == [t1, t1])
        // Beside a real change, each write reports its own document's time.
        h.now += 10
        let mixed = try h.commit([set("c/a", m(["x": 3])), set("c/b", m(["y": 1])), set("c/a", m(["x": 1]))]).get()
        #expect(mixed.results.map(\.updateTime) == [t1, mixed.commitTime, t1])
        #expect(h.published[2].mutations.map(\.path) == [path("c/b")])
    }

    /// A document deleted and created again in one commit is a new document, even with the same fields: its
    /// createTime and updateTime are the commit's, and the commit carries its mutation.
    @Test func deletedAndCreatedAgainInOneCommitIsANewDocument() throws {
        let h = try EngineHarness()
        let t1 = try h.commit([set("c/a", m(["x": 1]))]).get().results[0].updateTime
        h.now += 10
        let again = try h.commit([delete("c/a"), set("c/a", m(["x": 1]))]).get()
        #expect(again.commitTime > t1)
        #expect(again.results.map(\.updateTime) == [again.commitTime, again.commitTime])
        let doc = try #require(try h.doc("c/a"))
        #expect(doc.createTime == again.commitTime && doc.updateTime == again.commitTime)
        #expect(h.published.last?.mutations.map(\.path) == [path("c/a")])
        #expect(h.published.last?.mutations.first?.before?.createTime == t1)
    }

    @Test func preconditionUpdateTime() throws {
        let h = try EngineHarness()
        let t = try h.commit([set("c/a", m(["x": 1]))]).get().results[0].updateTime
        h.now += 5
        let wrong = Timestamp(micros: t.micros - 1)
        #expect(h.commit([set("c/a", m(["x": 2]), precondition: .updateTime(wrong))]).failureCode == .failedPrecondition)
        #expect(throws: Never.self) { try h.commit([set("c/a", m(["x": 2]), precondition: .updateTime(t))]).get() }
    }

    @Test func commitIsAllOrNothingAndNamesTheIndex() throws {
        let h = try EngineHarness()
        _ = h.commit([set("c/exists", m(["x": 1]))])
        let r = h.commit([set("c/b", m(["x": 1])), create("c/exists", m([:]))])
        #expect(r.failureCode == .alreadyExists)
        #expect(r.failureMessage?.hasPrefix("writes[1]") == true)
        #expect(try h.doc("c/b") == nil)
        #expect(h.engine.lastAssignedSeq == 1)
    }

    @Test func laterWritesInACommitSeeEarlierOnes() throws {
        let h = try EngineHarness()
        let r = try h.commit([
            create("c/a", m(["n": 1])),
            update("c/a", m([:]), mask: [], transforms: [FieldTransform(field: fp("n"), transform: .increment(1))]),
        ]).get()
        #expect(try h.fields("c/a") == m(["n": 2]))
        #expect(r.results[1].transformResults == [2])
        #expect(h.published.last?.mutations.count == 1)
        #expect(h.published.last?.mutations[0].before == nil)
    }

    /// A commit of up to 8 writes finds a document's earlier writes by comparing paths, a larger one through a
    /// dictionary: both give each document one mutation, in first-touch order, with every write seen. (`writes`
    /// increments, then one delete: 4 and 8 writes compare paths, 9 and 41 hash them.)
    @Test(arguments: [3, 7, 8, 40])
    func aDocumentWrittenSeveralTimesInACommitIsOneMutationAtAnySize(writes: Int) throws {
        let h = try EngineHarness()
        _ = try h.commit([set("c/x", m(["n": 0]))]).get()
        let inc = FieldTransform(field: fp("n"), transform: .increment(1))
        // Round robin over c/x (existing), c/y (new) and c/z (new, deleted at the end).
        let paths = ["c/x", "c/y", "c/z"]
        var ws = (0..<writes).map { i in
            i < 3 ? merge(paths[i], m([:]), mask: [], transforms: [inc]) : update(paths[i % 3], m([:]), mask: [], transforms: [inc])
        }
        ws.append(delete("c/z"))
        let r = try h.commit(ws).get()
        let per = (0..<3).map { k in (0..<writes).filter { $0 % 3 == k }.count }
        #expect(try h.fields("c/x") == m(["n": .int(Int64(per[0]))]))
        #expect(try h.fields("c/y") == m(["n": .int(Int64(per[1]))]))
        #expect(try h.fields("c/z") == nil)
        #expect(r.results.count == writes + 1)
        #expect(r.results[writes - 1].transformResults == [.int(Int64(per[(writes - 1) % 3]))])
        let mutations = try #require(h.published.last?.mutations)
        #expect(mutations.map(\.path.description) == ["c/x", "c/y"], "c/z was created and deleted: no mutation")
        #expect(mutations[0].before != nil && mutations[1].before == nil)
    }

    @Test func deleteOfMissingSucceedsWithNoMutation() throws {
        let h = try EngineHarness()
        let r = try h.commit([delete("c/none")]).get()
        #expect(r.seq == 1)
        #expect(h.published[0].mutations.isEmpty)
        #expect(h.commit([delete("c/none", precondition: .exists(true))]).failureCode == .notFound)
    }

    @Test func seqIsStrictlyIncreasingAndSurvivesReopen() throws {
        let h = try EngineHarness()
        for i in 0..<5 { _ = h.commit([set("c/a", m(["i": .int(Int64(i))]))]) }
        #expect(h.engine.lastDurableSeq == 5)
        let again = try Engine(store: h.store, codec: h.codec)
        #expect(again.lastAssignedSeq == 5)
    }

    @Test func serverTimestampsInOneCommitShareOneInstant() throws {
        let h = try EngineHarness()
        let st = FieldTransform(field: fp("t"), transform: .serverTimestamp)
        let r = try h.commit([set("c/a", m([:]), transforms: [st]), set("c/b", m([:]), transforms: [st])]).get()
        #expect(r.results[0].transformResults == r.results[1].transformResults)
        #expect(r.results[0].transformResults == [.timestamp(r.commitTime)])
    }

    @Test func commitTimesAreStrictlyIncreasingEvenIfTheClockStalls() throws {
        let h = try EngineHarness()
        let a = try h.commit([set("c/a", m(["x": 1]))]).get().commitTime
        let b = try h.commit([set("c/a", m(["x": 2]))]).get().commitTime
        h.now -= 1_000_000
        let c = try h.commit([set("c/a", m(["x": 3]))]).get().commitTime
        #expect(a < b && b < c)
    }

    @Test func documentSizeLimit() throws {
        let h = try EngineHarness()
        let big = String(repeating: "x", count: Limits.maxDocumentBytes)
        let r = h.commit([set("c/a", m(["s": .string(big)]))])
        #expect(r.failureCode == .invalidArgument)
        #expect(r.failureMessage?.contains("limit") == true)
    }

    @Test func tooManyWrites() throws {
        let h = try EngineHarness()
        let writes = (0...Limits.maxWritesPerCommit).map { set("c/d\($0)", m([:])) }
        #expect(h.commit(writes).failureCode == .invalidArgument)
        #expect(h.commit(writes).failureMessage?.contains("at most \(Limits.maxWritesPerCommit) writes (got \(writes.count))") == true)
        // Exactly the limit is one commit.
        let full = h.commit(Array(writes.dropLast()))
        #expect(full.failureCode == nil)
        #expect(try h.doc("c/d\(Limits.maxWritesPerCommit - 1)") != nil)
    }
}

extension Result where Failure == HearthError {
    var failureCode: ErrorCode? { if case .failure(let e) = self { return e.code } else { return nil } }
    var failureMessage: String? { if case .failure(let e) = self { return e.message } else { return nil } }
}
