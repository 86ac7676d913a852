import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthTesting
import Testing

/// The commit feed over PostgreSQL: what another daemon on the same schema reads to publish commits it did not
/// make. Every commit arrives, in order, exactly once, as logged; wake-ups come from the writer's NOTIFY.
@Suite struct PostgresCommitFeedTests {
    /// A feed on another store of the same schema follows a writer committing groups of random sizes. Its own
    /// re-check is an hour away and each wait allows 20 s, so only the writer's NOTIFY can end a wait early: a
    /// call that took its whole timeout would mean a lost wake-up (each takes milliseconds otherwise).
    @Test func aFeedDeliversEveryCommitInOrderOnceWokenByTheWriter() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        let follower = try #require(try f.openSecond() as? PostgresStore)
        defer { follower.close() }
        let feed = try follower.feed(recheck: 3600)

        var h = History()
        var written: [CommitRecord] = []
        for _ in 0..<40 {
            let size = Int.random(in: 1...5)
            written += (0..<size).map { _ in h.put("c/d\(Int.random(in: 0..<10))", bytes("v\(Int.random(in: 0..<1000))")) }
        }
        let total = UInt64(written.count)
        let received = Locked<[CommitRecord]>([])
        let slowest = Locked(0.0)
        let failure = Locked<String?>(nil)
        let stop = Locked(false)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let reader = feed   // used by that thread alone until it signals
        Thread.detachNewThread {
            defer { done.signal() }
            var seen: UInt64 = 0
            while seen < total && !stop.withLock({ $0 }) {
                do {
                    let started = Date()
                    guard let batch = try reader.next(after: seen, limit: 7, timeout: 20) else {
                        failure.withLock { $0 = "the feed reported a pruned log" }
                        return
                    }
                    slowest.withLock { $0 = max($0, Date().timeIntervalSince(started)) }
                    received.withLock { $0 += batch }
                    seen = batch.last?.seq ?? seen
                } catch {
                    failure.withLock { $0 = "\(error)" }
                    return
                }
            }
        }
        // Groups of 1 to 4 commits, as the engine sends them. The reader thread is stopped and joined before
        // the feed closes, whatever happens here.
        let applied = Result { () throws -> Void in
            var i = 0
            while i < written.count {
                let n = min(Int.random(in: 1...4), written.count - i)
                try f.store.apply(Array(written[i..<(i + n)]))
                i += n
            }
        }
        if case .failure = applied { stop.withLock { $0 = true } }
        done.wait()
        feed.close()
        try applied.get()
        let failed = failure.withLock { $0 }
        #expect(failed == nil, "\(failed ?? "")")
        #expect(slowest.withLock { $0 } < 15, "a wait ran to its timeout: a lost wake-up")
        let got = received.withLock { $0 }
        #expect(got.map(\.seq) == Array(1...total), "in order, no gap, no duplicate")
        #expect(got == written.map(\.logged))
        #expect(thrownError { () throws(HearthError) in _ = try feed.next(after: 0, limit: 1, timeout: 0) }?.code == .unavailable,
                "a closed feed stays closed")
    }

    /// A feed asked for commits retention has pruned says so (nil), as a stale resume is told.
    @Test func aFeedBehindRetentionIsToldToReset() throws {
        let f = try StoreFixture(.postgres, retention: RetentionPolicy(maxAgeMicros: 1 << 40, maxBytes: 40))
        defer { f.finish() }
        var h = History()
        for n in 0..<5 { try f.store.apply([h.put("c/d", bytes("value \(n)"))]) }
        let store = try #require(f.store as? PostgresStore)
        let feed = try store.feed()
        defer { feed.close() }
        let pruned = try feed.next(after: 0, limit: 10, timeout: 0)
        #expect(pruned == nil)
        // Images of 7 and 14 bytes: the log keeps the last two commits within its 40 bytes.
        #expect(try store.oldestResumableSeq() == 3)
        #expect(try feed.next(after: 2, limit: 10, timeout: 0) == nil)
        let kept = try #require(try feed.next(after: 3, limit: 10, timeout: 0))
        #expect(kept.map(\.seq) == [4, 5])
    }

    /// PostgreSQL stops under a feed: it fails with UNAVAILABLE meanwhile, and once PostgreSQL is back it
    /// delivers, from the seq asked for, what was committed after the restart, with no gap.
    @Test func aFeedCarriesOnAcrossAPostgreSQLRestart() throws {
        let cluster = try PrivateCluster()
        defer { cluster.remove() }
        let writer = try PostgresStore(dsn: cluster.dsn, schema: "feed")
        defer { writer.close() }
        let follower = try PostgresStore(dsn: cluster.dsn, schema: "feed", lockingSchema: false)
        defer { follower.close() }
        let feed = try follower.feed()
        defer { feed.close() }
        var h = History()
        try writer.apply([h.put("c/a", bytes("1"))])
        #expect(try feed.next(after: 0, limit: 10, timeout: 5)?.map(\.seq) == [1])

        try cluster.stop()
        #expect(thrownError { () throws(HearthError) in _ = try feed.next(after: 1, limit: 10, timeout: 0) }?.code == .unavailable)
        try cluster.start()
        try writer.apply([h.put("c/b", bytes("2"))])
        var got: [UInt64] = []
        for _ in 0..<3 where got.count < 1 {
            got += (try feed.next(after: 1, limit: 10, timeout: 5) ?? []).map(\.seq)
        }
        #expect(got == [2])
        // The feed LISTENs again on its new session: a wait with no re-check in sight is woken by the next
        // commit (the commit is made once the wait has begun, or found at once if it came first).
        let slow = try follower.feed(recheck: 3600)
        _ = try slow.next(after: 2, limit: 10, timeout: 0)   // connects and LISTENs
        try cluster.stop()
        try cluster.start()
        let woke = Locked<(seqs: [UInt64], seconds: Double)>(([], 0))
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let reader = slow
        Thread.detachNewThread {
            defer { done.signal() }
            let started = Date()
            for _ in 0..<2 {
                let batch = (try? reader.next(after: 2, limit: 10, timeout: 20)) ?? nil
                if let batch, !batch.isEmpty {
                    woke.withLock { $0 = (batch.map(\.seq), Date().timeIntervalSince(started)) }
                    return
                }
            }
        }
        try writer.apply([h.put("c/c", bytes("3"))])
        done.wait()
        slow.close()
        let result = woke.withLock { $0 }
        #expect(result.seqs == [3])
        #expect(result.seconds < 15, "woken by the NOTIFY, not the timeout")
    }
}

