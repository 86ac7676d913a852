import Foundation
import HearthModel
import HearthStorage
import Testing

/// Snapshots, for every backend: all reads of a snapshot see the state after one commit, whatever the store
/// applies meanwhile, on any thread; closing gives the connection back; a closed store gives none.
@Suite struct SnapshotConformanceTests {
    @Test(arguments: Backend.allCases)
    func aSnapshotKeepsReadingItsSeq(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([("c/a", bytes("1")), ("c/b", bytes("1"))], index: IndexChanges(added: [entry([1], "c/a"), entry([2], "c/b")]))])
        let snap = try f.store.snapshot()
        #expect(snap.seq == 1)
        try f.store.apply([h.commit([("c/a", bytes("2")), ("c/b", nil)], index: IndexChanges(removed: [entry([2], "c/b")], added: [entry([3], "c/c")])),
                           h.commit([("c/c", bytes("3"))])])
        #expect(try f.store.lastSeq() == 3)
        #expect(try snap.get(path("c/a"))?.data == bytes("1"))
        #expect(try snap.get(path("c/b"))?.data == bytes("1"))
        #expect(try snap.get(path("c/c")) == nil)
        #expect(try snap.scanIndex(from: [], to: [], reverse: false, limit: 10).map(\.document.path.description) == ["c/a", "c/b"])
        #expect(try snap.countIndex(from: [], to: []) == 2)
        let snapLog: [UInt64]? = try snap.changes(after: 0, limit: 10)?.map(\.seq)
        #expect(snapLog == [1])
        snap.close()
        let later = try f.store.snapshot()
        defer { later.close() }
        #expect(later.seq == 3)
        let laterLog: [CommitRecord]? = try later.changes(after: 1, limit: 10)
        let storeLog: [CommitRecord]? = try f.store.changes(after: 1, limit: 10)
        #expect(laterLog == storeLog && laterLog?.map(\.seq) == [2, 3])
        #expect(try later.get(path("c/a"))?.data == bytes("2"))
        #expect(try later.scanIndex(from: [], to: [], reverse: false, limit: 10).map(\.document.path.description) == ["c/a", "c/c"])
    }

    /// Readers on other threads, each holding a snapshot across many of the writer's commits: every read of
    /// a snapshot agrees with its seq (document `c/x` holds the seq that wrote it).
    @Test(arguments: Backend.allCases)
    func snapshotsOnOtherThreadsAreConsistentWhileTheWriterCommits(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let store = f.store
        var h = History()
        try store.apply([h.commit([("c/x", bytes("1")), ("c/y", bytes("1"))])])
        let done = Locked(false)
        let torn = Locked(0), reads = Locked(0)
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while !done.withLock({ $0 }) {
                    guard let snap = try? store.snapshot() else { continue }
                    let want = bytes(String(snap.seq))
                    for _ in 0..<5 {
                        let x = try? snap.get(path("c/x")), y = try? snap.get(path("c/y"))
                        if x.flatMap({ $0 })?.data != want || y.flatMap({ $0 })?.data != want { torn.withLock { $0 += 1 } }
                    }
                    snap.close()
                    reads.withLock { $0 += 1 }
                }
            }
        }
        // At least 200 commits, and on until the readers have read during them (their threads may start late
        // on a loaded machine).
        var commits = 0
        while commits < 200 || (reads.withLock { $0 } < 3 && commits < 1_000_000) {
            commits += 1
            let next = String(h.seq + 1)
            try store.apply([h.commit([("c/x", bytes(next)), ("c/y", bytes(next))])])
        }
        done.withLock { $0 = true }
        group.wait()
        #expect(torn.withLock { $0 } == 0)
        #expect(reads.withLock { $0 } > 0)
    }

    @Test(arguments: Backend.allCases)
    func aClosedStoreGivesNoSnapshot(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let open = try f.store.snapshot()
        open.close()
        f.store.close()
        #expect(thrownError { () throws(HearthError) in _ = try f.store.snapshot() }?.code == .unavailable)
    }
}
