import Foundation
import HearthModel
import HearthStorage
import Testing

/// The change log and its retention, for every backend.
@Suite struct ChangeLogConformanceTests {
    /// A store has a history of its own from the start: positive, the same on every call and after commits
    /// (and, for durable backends, after reopening), different from another new store's.
    @Test(arguments: Backend.allCases)
    func eachStoreHasAHistoryOfItsOwn(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let g = try StoreFixture(backend)
        defer { g.finish() }
        let id = try f.store.historyID()
        #expect(id > 0 && id <= UInt64(Int64.max))
        #expect(try g.store.historyID() != id)
        var h = History()
        try f.store.apply([h.commit([("c/a", Array("1".utf8))])])
        #expect(try f.store.historyID() == id)
        if backend != .memory {
            try f.reopen()
            #expect(try f.store.historyID() == id)
            #expect(try f.openSecond().historyID() == id)
        }
    }

    /// Creates, updates, deletes, a multi-document commit, an index-only commit (no mutations), and index
    /// changes alongside mutations. The log returns each without its index changes (`CommitRecord.logged`).
    static func sampleHistory() -> [CommitRecord] {
        var h = History()
        return [
            h.put("users/u1", bytes("v1")),
            h.commit([("users/u1", bytes("v2")), ("users/u2", bytes("w1")), ("users/u1/user-feed/p9", [])],
                     index: IndexChanges(added: [entry([0x50, 1], "users/u1"), entry([0x50, 2], "users/u2")])),
            h.index(adding: [entry([0x60, 1], "users/u1")]),
            h.commit([("users/u2", nil)], index: IndexChanges(removed: [entry([0x50, 2], "users/u2")])),
            h.commit([("users/u1/user-feed/p9", nil), ("users/u2", bytes("w2")), ("café/é", Array(repeating: 0, count: 300))]),
        ]
    }

    /// A commit's request ID and answer are found while the log holds the commit (also pending in a commit
    /// log, and after a reopen), never returned by `changes`, and go with the commit when retention prunes it.
    @Test(arguments: Backend.allCases)
    func requestIDsAreFoundWhileTheLogHoldsTheirCommit(_ backend: Backend) throws {
        let f = try StoreFixture(backend, retention: RetentionPolicy(maxAgeMicros: Int64.max, maxBytes: 2000))
        defer { f.finish() }
        var h = History()
        var first = h.put("c/a", bytes("1"))
        first.request = CommitRequest(id: "req-1", answer: bytes("answer one"))
        let middle = h.put("c/c", bytes("3"))
        var second = h.commit([("c/b", bytes("2")), ("c/a", nil)])
        second.request = CommitRequest(id: "réq-2 ✓", answer: [])
        try f.store.apply([first, middle, second])
        #expect(try f.store.committedRequest("req-1") == CommittedRequest(seq: 1, answer: bytes("answer one")))
        #expect(try f.store.committedRequest("réq-2 ✓") == CommittedRequest(seq: 3, answer: []))
        #expect(try f.store.committedRequest("req-9") == nil)
        #expect(try f.store.committedRequest("req") == nil, "an exact match only")
        // Read as the store holds them now, from another thread: what get and committedRequest say.
        let store = f.store
        let latest = try onAnotherThread { () throws(HearthError) in
            try store.readLatest([path("c/a"), path("c/b"), path("c/zzz")], requestID: "réq-2 ✓")
        }
        let expected = LatestReads(documents: [try f.store.get(path("c/a")), try f.store.get(path("c/b")), nil],
                                   request: CommittedRequest(seq: 3, answer: []))
        #expect(latest == expected)
        let none = try f.store.readLatest([], requestID: nil)
        #expect(none == LatestReads(documents: [], request: nil))
        // A snapshot finds those its seq holds, whatever is applied after it.
        let early = try f.store.snapshot()
        var third = h.put("c/d", bytes("4"))
        third.request = CommitRequest(id: "req-3", answer: bytes("three"))
        try f.store.apply([third])
        let earlyFirst: CommittedRequest? = try early.committedRequest("req-1")
        let earlyThird: CommittedRequest? = try early.committedRequest("req-3")
        early.close()
        #expect(earlyFirst == CommittedRequest(seq: 1, answer: bytes("answer one")) && earlyThird == nil)
        let late = try f.store.snapshot()
        let lateThird: CommittedRequest? = try late.committedRequest("req-3")
        late.close()
        #expect(lateThird == CommittedRequest(seq: 4, answer: bytes("three")))
        #expect(try f.store.changes(after: 0, limit: 10)?.allSatisfy { $0.request == nil } == true)
        if backend != .memory {
            try f.reopen()
            #expect(try f.store.committedRequest("req-1") == CommittedRequest(seq: 1, answer: bytes("answer one")))
        }
        // 2,000 bytes of images: the first commits go, and their request IDs with them.
        try f.store.apply([h.put("c/big", Array(repeating: 7, count: 1500)), h.put("c/big2", Array(repeating: 7, count: 1500))])
        try f.settle()
        #expect(try f.store.oldestResumableSeq() >= 3)
        #expect(try f.store.committedRequest("req-1") == nil)
        #expect(try f.store.committedRequest("réq-2 ✓") == nil)
    }

    @Test(arguments: Backend.allCases)
    func changesReturnExactRecords(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let applied = Self.sampleHistory()
        let history = applied.map(\.logged)
        try f.store.apply(Array(applied[0..<2]))
        try f.store.apply(Array(applied[2...]))
        #expect(try f.store.changes(after: 0, limit: 100) == history)
        #expect(try f.store.changes(after: 2, limit: 2) == Array(history[2..<4]))
        #expect(try f.store.changes(after: 1, limit: 1) == [history[1]])
        // Index changes are applied but never logged; the index-only commit is logged with no mutations.
        #expect(try f.store.changes(after: 0, limit: 100)?.allSatisfy(\.indexChanges.isEmpty) == true)
        #expect(try f.store.changes(after: 2, limit: 1)?.first?.mutations == [])
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10).map(\.key) == [[0x50, 1], [0x60, 1]])
        #expect(try f.store.changes(after: 5, limit: 100) == [])
        #expect(try f.store.changes(after: 50, limit: 100) == [])
        #expect(try f.store.changes(after: UInt64.max, limit: 100) == [])
        #expect(try f.store.changes(after: 0, limit: 0) == [])
        #expect(try f.store.oldestResumableSeq() == 0)
        // The images are the exact documents, including an update's before image and a delete's.
        let update = try #require(try f.store.changes(after: 1, limit: 1)?.first?.mutations.first)
        #expect(update.before?.data == bytes("v1") && update.after?.data == bytes("v2"))
        #expect(update.after?.createTime == history[0].commitTime)
        let delete = try #require(try f.store.changes(after: 3, limit: 1)?.first?.mutations.first)
        #expect(delete.before?.data == bytes("w1") && delete.after == nil)
    }

    @Test(arguments: Backend.allCases)
    func retentionByBytesPrunesOldestWholeCommits(_ backend: Backend) throws {
        var h = History()
        let history = (0..<10).map { i in
            h.commit([("c/d\(i % 3)", Array(repeating: UInt8(i), count: 100)), ("c/e\(i)", Array(repeating: 1, count: 50))])
        }
        // Each commit: 150 bytes of after images, plus 100 bytes of before image from the 4th on.
        let sizes = history.map(\.imageBytes)
        #expect(sizes.prefix(3) == [150, 150, 150] && sizes[3] == 250)
        let maxBytes: Int64 = 700
        let f = try StoreFixture(backend, retention: RetentionPolicy(maxAgeMicros: Int64.max, maxBytes: maxBytes))
        defer { f.finish() }

        var expectedPruned: UInt64 = 0
        var logged: [CommitRecord] = []
        for c in history {
            try f.store.apply([c])
            logged.append(c)
            while logged.map(\.imageBytes).reduce(0, +) > maxBytes {
                expectedPruned = logged.removeFirst().seq
            }
            try f.settle()
            #expect(try f.store.oldestResumableSeq() == expectedPruned)
            #expect(try f.store.changes(after: expectedPruned, limit: 100) == logged)
        }
        #expect(expectedPruned == 8)
        #expect(try f.store.changes(after: 0, limit: 100) == nil)
        #expect(try f.store.changes(after: expectedPruned - 1, limit: 100) == nil)
        #expect(try f.store.lastSeq() == 10)
        // Pruning the log never touches documents.
        #expect(try f.store.get(path("c/e0"))?.data == Array(repeating: 1, count: 50))
        #expect(try f.store.list(collection: collection("c"), afterID: nil, limit: 100).count == 13)
    }

    @Test(arguments: Backend.allCases)
    func retentionByAgePrunesCommitsOlderThanTheNewestMinusMaxAge(_ backend: Backend) throws {
        let second: Int64 = 1_000_000
        let f = try StoreFixture(backend, retention: RetentionPolicy(maxAgeMicros: 10 * second, maxBytes: Int64.max))
        defer { f.finish() }
        var h = History()
        let t0 = h.clock
        let early = [h.put("c/a", [1], at: t0), h.put("c/b", [2], at: t0 + 1 * second), h.put("c/c", [3], at: t0 + 2 * second)]
        try f.store.apply(early)
        #expect(try f.store.oldestResumableSeq() == 0)
        // The newest commit is at t0 + 12 s: the cutoff is t0 + 2 s, so commits before it (seqs 1, 2) go; seq 3
        // (exactly at the cutoff) stays.
        let late = h.put("c/d", [4], at: t0 + 12 * second)
        try f.store.apply([late])
        try f.settle()
        #expect(try f.store.oldestResumableSeq() == 2)
        #expect(try f.store.changes(after: 0, limit: 10) == nil)
        #expect(try f.store.changes(after: 1, limit: 10) == nil)
        #expect(try f.store.changes(after: 2, limit: 10) == [early[2], late])
        // A much later commit prunes everything before it, not itself.
        let latest = h.put("c/e", [5], at: t0 + 100 * second)
        try f.store.apply([latest])
        try f.settle()
        #expect(try f.store.oldestResumableSeq() == 4)
        #expect(try f.store.changes(after: 4, limit: 10) == [latest])
    }

    @Test(arguments: Backend.allCases)
    func pruningEverythingKeepsLastSeq(_ backend: Backend) throws {
        let f = try StoreFixture(backend, retention: RetentionPolicy(maxAgeMicros: Int64.max, maxBytes: 0))
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a")), h.put("c/b", bytes("b"))])
        try f.settle()
        #expect(try f.store.lastSeq() == 2)
        #expect(try f.store.oldestResumableSeq() == 2)
        #expect(try f.store.changes(after: 2, limit: 10) == [])
        #expect(try f.store.changes(after: 1, limit: 10) == nil)
        #expect(try f.store.get(path("c/b"))?.data == bytes("b"))
        // A commit holding no image bytes is not over the byte budget, so it stays.
        let empty = h.commit([])
        try f.store.apply([empty])
        #expect(try f.store.changes(after: 2, limit: 10) == [empty])
        let stale = commitAt(seq: 2, putting: "c/z")
        #expect(thrownError { () throws(HearthError) in try f.store.apply([stale]) }?.code == .internal)
    }
}

/// Runs `body` on a thread of its own and waits for it.
func onAnotherThread<R: Sendable>(_ body: @escaping @Sendable () throws(HearthError) -> R) throws(HearthError) -> R {
    let result = Locked<Result<R, HearthError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let r: Result<R, HearthError>
        do throws(HearthError) { r = .success(try body()) } catch { r = .failure(error) }
        result.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
