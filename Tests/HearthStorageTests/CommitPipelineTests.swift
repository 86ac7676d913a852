import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The SQLite store acknowledges a group once its commit log holds it and applies it to SQLite in the
/// background (`CommitPipeline`). What that must keep: every acknowledged group is readable at once and
/// survives anything SQLite does with it later; a group SQLite refuses stops writes, not reads, and is applied
/// by the next start once the cause is gone.
@Suite struct CommitPipelineTests {
    /// A group SQLite refuses after the log took it was acknowledged: it is served, never dropped; the next
    /// write is refused with the cause; the files a kill leaves keep it; a start without the cause applies it.
    @Test func aGroupSQLiteRefusesStopsWritesNotReadsAndIsAppliedByTheNextStart() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        try f.refuseDocumentsNamedBoom()
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        try store.drainApplier()
        let refused = h.commit([("c/b", bytes("b")), ("c/boom", bytes("x"))])
        try store.apply([refused])     // durable in the log: acknowledged
        #expect(try store.get(path("c/boom"))?.data == bytes("x"))
        #expect(try store.lastSeq() == 2)

        // The applier meets the trigger (waiting for it to apply says so), and the next write asks it to try
        // again, then is refused with the cause.
        #expect(throws: HearthError.self) { try store.drainApplier() }
        let error = thrownError { () throws(HearthError) in try store.apply([h.put("c/c", bytes("c"))]) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("boom refused") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("durable in the commit log") == true, "\(error?.message ?? "")")
        // Reads still see every acknowledged commit, through a snapshot too; SQLite's own files lack the group.
        #expect(try store.get(path("c/b"))?.data == bytes("b"))
        #expect(try store.changes(after: 1, limit: 10)?.map(\.seq) == [2])
        let snap = try store.snapshot()
        #expect(snap.seq == 2)
        #expect(try snap.get(path("c/boom"))?.data == bytes("x"))
        snap.close()
        let other = try StoreFixture.open(.sqlite, directory: f.directory, schema: f.schema, retention: .default, lockingDirectory: false)
        #expect(try other.lastSeq() == 1)
        other.close()

        // The files a kill leaves behind, copied with the trigger removed: the next start applies the group.
        let copy = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(copy) }
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["hearth.db", "hearth.db-wal", CommitLog.fileName] {
            try FileManager.default.copyItem(atPath: f.directory + "/" + name, toPath: copy + "/" + name)
        }
        let db = try SQLiteConnection(path: copy + "/hearth.db", role: "test", create: false)
        try db.exec("DROP TRIGGER boom", "dropping the trigger")
        db.close()
        let recovered = try StoreFixture.openSQLite(copy)
        defer { recovered.close() }
        #expect(recovered.recovery?.groups == 1)
        #expect(try recovered.lastSeq() == 2)
        #expect(try recovered.get(path("c/boom"))?.data == bytes("x"))
        try recovered.apply([h.put("c/c", bytes("c"))])

        // Closing the stuck store keeps its log (the group is still only there), so its own next start, with
        // the trigger still in place, refuses to open rather than lose it.
        store.close()
        #expect(FileManager.default.fileExists(atPath: f.directory + "/" + CommitLog.fileName))
        #expect {
            _ = try StoreFixture.openSQLite(f.directory)
        } throws: { error in
            (error as? HearthError)?.message.contains("boom refused") == true
        }
    }

    /// A cause that goes away (the trigger dropped while the store runs): the next write asks the applier to
    /// try again, the backlog applies, and the write goes through, without a restart.
    /// An entry SQLite holds whose document only the backlog has (an entry written before its document, which
    /// the engine never does but the contract allows): a scan of a range the backlog touches no key of still
    /// finds the document, whether SQLite lacks it or holds it.
    @Test func aScanFindsTheBacklogsDocumentOfAnEntrySQLiteHolds() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        try store.apply([h.index(adding: [entry([1], "c/a"), entry([2], "c/ghost"), entry([3], "c/b")])])
        try store.drainApplier()
        store.holdApplier(10)
        try store.apply([h.put("c/ghost", bytes("g"))])
        let hits = try store.scanIndex(from: [], to: [], reverse: false, limit: 2)
        #expect(hits.map(\.key) == [[1], [2]])
        #expect(hits.map(\.document.data) == [bytes("a"), bytes("g")])
        // A page whose last entry's document is missing everywhere comes up short through SQLite alone, and the
        // merge takes the long way to fill it: [3] (c/b) has no document.
        try store.apply([h.put("c/b", bytes("b"))])
        try store.apply([h.delete("c/b")])
        let all = try store.scanIndex(from: [], to: [], reverse: true, limit: 3)
        #expect(all.map(\.key) == [[2], [1]])
        let snapshot = try store.snapshot()
        defer { snapshot.close() }
        #expect(try snapshot.scanIndex(from: [2], to: [3], reverse: false, limit: 5).map(\.document.data) == [bytes("g")])
        store.holdApplier(0)
    }

    @Test func aStalledApplierResumesOnceTheCauseIsGone() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        try f.refuseDocumentsNamedBoom()
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/boom", bytes("x"))])
        #expect(throws: HearthError.self) { try store.drainApplier() }
        #expect(store.applier?.stalled?.contains("boom refused") == true)
        let db = try SQLiteConnection(path: f.directory + "/hearth.db", role: "test", create: false)
        try db.exec("DROP TRIGGER boom", "dropping the trigger")
        db.close()
        try store.apply([h.put("c/after", bytes("y"))])
        try store.drainApplier()
        #expect(store.applier?.stalled == nil)
        #expect(store.applier?.backlogCommits == 0)
        let other = try f.openSecond()
        defer { other.close() }
        #expect(try other.get(path("c/boom"))?.data == bytes("x"))
        #expect(try other.get(path("c/after"))?.data == bytes("y"))
    }

    /// A drain (backup, compaction, a listing) waits for the groups acknowledged before it began, not for the
    /// ones acknowledged meanwhile: here a group is acknowledged after every transaction the applier makes,
    /// before the applied groups leave the backlog, so the backlog is never empty. The drain still returns, long
    /// before the writes stop, with SQLite's own file holding the group acknowledged before it.
    @Test func steadyWritesCannotHoldADrainOff() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        store.holdApplier(1)                 // the first group waits for the drain
        var h = History()
        try store.apply([h.put("c/first", bytes("1"))])
        // The writes run on a thread of their own, one per transaction of the applier, which waits for each
        // (bounded: an append may itself wait for the applier, on a nearly full disk).
        let rounds = 200
        let go = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0), exited = DispatchSemaphore(value: 0)
        let state = Locked<(history: History, count: Int, stopped: Bool, failure: String?)>((h, 0, false, nil))
        let writer = Thread {
            while true {
                go.wait()
                let next: CommitRecord? = state.withLock { w in
                    guard !w.stopped, w.count < rounds else { return nil }
                    w.count += 1
                    return w.history.put("c/steady\(w.count)", bytes("\(w.count)"))
                }
                if let next {
                    do { try store.apply([next]) } catch { state.withLock { $0.failure = "\(error)" } }
                }
                written.signal()
                if next == nil { exited.signal(); return }
            }
        }
        writer.start()
        store.afterEachApplierTransaction {
            guard !state.withLock({ $0.stopped }) else { return }
            go.signal()
            _ = written.wait(timeout: .now() + 10)
        }
        try store.drainApplier()
        let countAtReturn = state.withLock { $0.count }
        // SQLite's own file, read apart from the store (which would merge the backlog): the group is there.
        let db = try SQLiteConnection(path: f.directory + "/hearth.db", role: "test", create: false)
        let first = try db.queryInt("SELECT count(*) FROM documents WHERE collection = 'c' AND id = 'first'")
        db.close()
        state.withLock { $0.stopped = true }
        store.afterEachApplierTransaction(nil)
        go.signal()
        exited.wait()                        // no write is in flight from here on
        #expect(first == 1, "the drain returned before SQLite held the group acknowledged before it")
        #expect(countAtReturn >= 1 && countAtReturn < rounds,
                "the drain returned after \(countAtReturn) of \(rounds) writes made during it")
        #expect(state.withLock { $0.failure } == nil)
        store.holdApplier(0)
        try store.drainApplier()
        let total = state.withLock { $0.count }
        #expect(try store.lastSeq() == UInt64(1 + total))
        #expect(store.applier?.backlogCommits == 0)
    }

    /// While it waits for its interval, the applier coalesces the backlog's groups in tiers of
    /// `coalesceFanIn`: reads consult a few groups and answer as before, nothing is applied early, and a drain
    /// then applies every acknowledged group.
    @Test func theApplierCoalescesTheGroupsItWaitsFor() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        store.setApplierInterval(seconds: 600)
        var h = History()
        let groups = 100
        // Each group moves c/d(i % 30)'s index entry from key [1, i - 30] to [1, i]; e's entries stay at [2, i].
        for i in 0..<groups {
            let d = "c/d\(i % 30)"
            let moved = IndexChanges(removed: i >= 30 ? [entry([1, UInt8(i - 30)], d)] : [], added: [entry([1, UInt8(i)], d)])
            try store.apply([h.commit([(d, bytes("\(i)"))], index: moved), h.commit([("c/e\(i)", bytes("e"))], index: IndexChanges(added: [entry([2, UInt8(i)], "c/e\(i)")]))])
            // An index read half-way: the groups then coalesced build their keys at once, the later ones when read.
            if i == 50 { #expect(try store.countIndex(from: [1], to: [2]) == 30) }
        }
        #expect(store.waitForCoalescing(within: 60), "the applier coalesced the backlog")
        let status = try #require(store.applier)
        let fanIn = CommitPipeline.coalesceFanIn
        // 100 groups: 12 runs of 8 became tier 1, 8 of those tier 2; 4 tier-0 and 4 tier-1 groups are left.
        #expect(status.backlogGroups == 9 && status.coalescedGroups == 12 * fanIn + fanIn, "\(status)")
        #expect(status.backlogCommits == 2 * groups && status.groups == 0 && status.transactions == 0, "\(status)")
        for i in 0..<30 {
            let last = (0..<groups).last { $0 % 30 == i }!
            #expect(try store.get(path("c/d\(i)"))?.data == bytes("\(last)"))
        }
        #expect(try store.list(collection: collection("c"), afterID: nil, limit: 1_000).count == 30 + groups)
        let moved = try store.scanIndex(from: [1], to: [2], reverse: true, limit: 5)
        #expect(moved.map(\.key) == (95..<100).reversed().map { [1, UInt8($0)] })
        #expect(moved.map(\.document.data) == (95..<100).reversed().map { bytes("\($0)") })
        #expect(try store.countIndex(from: [1], to: [2]) == 30 && store.countIndex(from: [2], to: [3]) == groups)
        store.setApplierInterval(seconds: 0.5)
        try store.drainApplier()
        let drained = try #require(store.applier)
        #expect(drained.backlogCommits == 0 && drained.backlogGroups == 0 && drained.groups == groups, "\(drained)")
        #expect(try store.get(path("c/e99"))?.data == bytes("e"))
        #expect(try store.scanIndex(from: [1], to: [2], reverse: true, limit: 1).map(\.key) == [[1, 99]])
    }

    /// Groups acknowledged while a transaction runs are coalesced apart from the transaction's own: coalescing
    /// then (`coalesceBacklog`, on the applier's thread after the transaction, before its groups leave) never
    /// takes a group the transaction applied, so the transaction removes exactly those, and every group is
    /// applied once.
    @Test func groupsAcknowledgedDuringATransactionAreCoalescedApartFromIt() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        store.setApplierInterval(seconds: 600)
        var h = History()
        let first = (0..<20).map { h.put("c/a\($0)", bytes("a\($0)")) }
        let later = (0..<16).map { h.put("c/b\($0)", bytes("b\($0)")) }
        for r in first { try store.apply([r]) }
        #expect(store.waitForCoalescing(within: 60))
        // Seen from inside the first transaction: the backlog before and after the later groups came.
        let seen = Locked<(before: ApplierStatus, after: ApplierStatus)?>(nil)
        let failure = Locked<String?>(nil)
        store.afterEachApplierTransaction {
            guard seen.withLock({ $0 == nil }), let before = store.applier else { return }
            do { for r in later { try store.apply([r]) } } catch { failure.withLock { $0 = "\(error)" } }
            store.coalesceBacklog()
            if let after = store.applier { seen.withLock { $0 = (before, after) } }
        }
        try store.drainApplier()             // one transaction takes the first 20 groups
        store.afterEachApplierTransaction(nil)
        #expect(failure.withLock { $0 } == nil)
        let (before, after) = try #require(seen.withLock { $0 })
        #expect(before.backlogCommits == 20 && before.backlogGroups == 6, "20 groups, coalesced: 2 of tier 1, 4 of tier 0: \(before)")
        #expect(after.backlogCommits == 36 && after.backlogGroups == 6 + 2, "the 16 later groups coalesced into 2, apart from the 6: \(after)")
        store.setApplierInterval(seconds: 0.5)
        try store.drainApplier()
        let drained = try #require(store.applier)
        #expect(drained.groups == 36 && drained.backlogCommits == 0 && drained.backlogGroups == 0, "every group applied once: \(drained)")
        for i in 0..<16 { #expect(try store.get(path("c/b\(i)"))?.data == bytes("b\(i)")) }
        #expect(try store.list(collection: collection("c"), afterID: nil, limit: 100).count == 36)
    }

    /// A group whose frame alone exceeds what one transaction takes is never coalesced, and does not keep
    /// the groups after it, of its tier, from coalescing.
    @Test func aGroupTooLargeToCoalesceLeavesTheRestOfItsTierCoalescible() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let reset = 64 << 10                 // one transaction takes up to 256 KiB of frames
        let store = try StoreFixture.openSQLite(dir, logResetBytes: reset)
        defer { store.close() }
        store.setApplierInterval(seconds: 600)
        var h = History()
        try store.apply([h.put("c/large", [UInt8](repeating: 120, count: CommitPipeline.transactionLogFactor * reset + 1))])
        for i in 0..<8 { try store.apply([h.put("c/small\(i)", bytes("\(i)"))]) }
        #expect(store.waitForCoalescing(within: 60))
        let status = try #require(store.applier)
        #expect(status.backlogGroups == 2 && status.coalescedGroups == 8 && status.transactions == 0,
                "the large group stays alone, the 8 small ones after it become one: \(status)")
        store.setApplierInterval(seconds: 0.5)
        try store.drainApplier()
        #expect(store.applier?.groups == 9)
        #expect(try store.get(path("c/small7"))?.data == bytes("7"))
    }

    /// A retired log segment waits for the applier's interval like any group, until the new log is due to
    /// rotate behind it: then the applier applies at once, the segment goes, and the log rotates again.
    @Test func aRotationDueBehindARetiredSegmentMakesTheApplierApplyAtOnce() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let reset = 16 << 10
        let store = try StoreFixture.openSQLite(dir, logResetBytes: reset)
        defer { store.close() }
        store.setApplierInterval(seconds: 600)
        let applied = DispatchSemaphore(value: 0)
        store.afterEachApplierTransaction { applied.signal() }
        defer { store.afterEachApplierTransaction(nil) }
        var h = History()
        let doc = [UInt8](repeating: 121, count: 2000)
        var i = 0
        while store.logRotations == 0 {     // fills the log to its reset size: it is retired
            try store.apply([h.put("c/d\(i % 10)", doc)])
            i += 1
        }
        for _ in 0..<3 {                    // 6 KiB of frames, under the reset size: nothing is applied
            try store.apply([h.put("c/d\(i % 10)", doc)])
            i += 1
        }
        #expect(store.applier?.transactions == 0, "the retired segment waited for the interval")
        for _ in 0..<7 {                    // 21 KiB in all: the new log is due to rotate
            try store.apply([h.put("c/d\(i % 10)", doc)])
            i += 1
        }
        #expect(applied.wait(timeout: .now() + 60) == .success, "the applier applied at once, not at its 600 s interval")
        try store.apply([h.put("c/last", doc)])
        try store.drainApplier()
        #expect(try store.get(path("c/last"))?.data == doc)
    }

    /// Backpressure: with the applier holding every group back, the backlog's bound makes `apply` have it
    /// applied, so memory stays bounded and nothing is refused.
    @Test func aFullBacklogIsAppliedBeforeMoreIsTaken() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        store.holdApplier(100_000)
        var h = History()
        let groups = CommitPipeline.maxPendingGroups + 40
        for i in 0..<groups { try store.apply([h.put("c/d\(i % 50)", bytes("\(i)"))]) }
        let status = try #require(store.applier)
        #expect(status.groups > 0, "the held groups were applied once the backlog was full")
        #expect(status.backlogCommits <= CommitPipeline.maxPendingGroups + 1)
        #expect(try store.lastSeq() == UInt64(groups))
        let lastWrite = (0..<groups).last { $0 % 50 == 49 }!
        #expect(try store.get(path("c/d49"))?.data == bytes("\(lastWrite)"))
    }

    /// A writer that outruns the applier waits for room in bounded steps: the backlog's log frames stay near
    /// `pendingLogFactor` times the reset size, each transaction applies at most `transactionLogFactor` times
    /// it (so a wait lasts about one such transaction, not the whole backlog), the log keeps rotating, and
    /// nothing is lost.
    @Test func aWriterThatOutrunsTheApplierWaitsInBoundedSteps() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let reset = 64 << 10
        let store = try StoreFixture.openSQLite(dir, logResetBytes: reset)
        defer { store.close() }
        store.holdApplier(100_000)           // nothing is applied unless a writer waits for room
        var h = History()
        let doc = [UInt8](repeating: 120, count: 4000)
        let groups = 300
        var largestBacklog = 0
        for i in 0..<groups {
            try store.apply([h.put("c/d\(i % 40)", doc + bytes("\(i)"))])
            largestBacklog = max(largestBacklog, store.applier?.backlogCommits ?? 0)
        }
        let status = try #require(store.applier)
        // A group's frame holds its document's new version and a little more (the log keeps no before images).
        let perFrame = doc.count
        #expect(status.transactions >= 3, "the backlog was applied in several transactions: \(status)")
        #expect(status.largestTransaction <= CommitPipeline.transactionLogFactor * reset / perFrame + 2,
                "one transaction held \(status.largestTransaction) groups")
        #expect(largestBacklog <= CommitPipeline.pendingLogFactor * reset / perFrame + 2,
                "the backlog reached \(largestBacklog) groups")
        #expect(store.logRotations > 0)
        try expectEveryGroupKept(store, groups: groups, doc: doc)
    }

    /// Over three quarters of its bounds, the backlog paces the writer to the applier's rate (`AppendPacer`) instead of
    /// letting it run into the bound: with the applier held, a writer slows down from the soft bound on, still
    /// reaches the hard bound (where the held applier applies), and loses nothing; a writer whose backlog stays
    /// below the soft bound is never paced. The counters reach `applier` (and the metrics).
    @Test func aWriterOverTheSoftBoundIsPacedToTheApplierAndLosesNothing() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let reset = 32 << 10
        let store = try StoreFixture.openSQLite(dir, logResetBytes: reset)
        defer { store.close() }
        var h = History()
        let doc = [UInt8](repeating: 120, count: 4000)
        // Below the soft bound: the applier is free and the backlog small, whatever the rate.
        store.assumeApplierRate(1)
        for i in 0..<20 { try store.apply([h.put("c/d\(i % 40)", doc + bytes("\(i)"))]) }
        #expect(store.applier?.pacedGroups == 0)
        #expect(store.applier?.blockedGroups == 0)

        store.holdApplier(100_000)           // nothing is applied unless a writer waits for room
        // 4 KB frames 40-80 ms apart over the soft bound (~12 groups up to the hard one), far longer than a
        // group's own write and fsync; the held applier's transactions at the bound (~20 ms each) move the
        // rate little against an assumed whole window of it.
        store.assumeApplierRate(1e5)
        let groups = 100
        for i in 20..<groups { try store.apply([h.put("c/d\(i % 40)", doc + bytes("\(i)"))]) }
        let status = try #require(store.applier)
        #expect(status.pacedGroups > 0, "\(status)")
        #expect(status.pacedMicros > 0, "\(status)")
        #expect(status.blockedGroups > 0, "the held applier still let the backlog reach its bound: \(status)")
        // Groups that waited at the hard bound were paced first (the fill passes the soft bound on its way).
        #expect(status.pacedGroups >= status.blockedGroups, "\(status)")
        try expectEveryGroupKept(store, groups: groups, doc: doc)
    }

    /// A paced writer waits for the pace or for the applier, whichever comes first: once the applier has brought
    /// the backlog under the soft bound, the waiting group goes at once, however long the pace would have held it.
    /// The counters count the wait while it lasts.
    /// (The applier is due here through the rotation waiting behind its retired segment as well as through the
    /// paced writer; `AppendPacerTests` covers the pace's arithmetic.)
    @Test func aPacedWriterGoesAsSoonAsTheApplierBringsTheBacklogUnderTheSoftBound() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let reset = 64 << 10
        let store = try StoreFixture.openSQLite(dir, logResetBytes: reset)
        defer { store.close() }
        var h = History()
        let doc = [UInt8](repeating: 120, count: 4000)
        store.holdApplier(100_000)
        store.setApplierInterval(seconds: 600)   // its interval does not end the wait
        // Up to just over the soft bound of log frames: nothing paced yet (no rate measured).
        let soft = Int(Double(CommitPipeline.pendingLogFactor * reset) * AppendPacer.softFill) / doc.count + 1
        for i in 0..<soft { try store.apply([h.put("c/d\(i)", doc)]) }
        #expect(store.applier?.pacedGroups == 0)
        store.assumeApplierRate(1)           // every group now holds the next back for `longestHold`
        try store.apply([h.put("c/x", doc)])  // not held: the group before it was appended unpaced
        let released = DispatchSemaphore(value: 0)
        let during = LockedStatus()
        DispatchQueue.global().async {
            // Once the writer below waits for the pace, lets the applier run; what the counters said while it
            // waited is checked below.
            if store.waitUntilPaced(within: 60) { during.set(store.applier) }
            store.holdApplier(0)
            released.signal()
        }
        try store.apply([h.put("c/y", doc)])  // paced: waits until the applier has brought the backlog under the soft bound
        released.wait()
        let waiting = try #require(during.get(), "the writer was never paced")
        #expect(waiting.pacedGroups == 1 && waiting.pacedMicros > 0, "the wait in progress is counted: \(waiting)")
        let status = try #require(store.applier)
        #expect(status.pacedGroups == 1, "\(status)")
        #expect(status.pacedMicros < AppendPacer.longestHold / 1000, "released by the applier, not by the hold: \(status)")
        #expect(status.transactions >= 1 && status.blockedGroups == 0, "\(status)")
        #expect(try store.get(path("c/y"))?.data == doc)
    }

    /// After write i of `groups` set `c/d<i % 40>` to `doc` followed by i: every one was acknowledged, the last
    /// write of `c/d39` is read back, and once the applier is let go it applies the whole backlog.
    private func expectEveryGroupKept(_ store: SQLiteStore, groups: Int, doc: [UInt8]) throws {
        #expect(try store.lastSeq() == UInt64(groups))
        let lastOf39 = (0..<groups).last { $0 % 40 == 39 }!
        #expect(try store.get(path("c/d39"))?.data == doc + bytes("\(lastOf39)"))
        store.holdApplier(0)
        try store.drainApplier()
        #expect(store.applier?.backlogCommits == 0)
    }

    /// Readers on other threads take snapshots while the applier moves SQLite past the groups they merged:
    /// every snapshot reads exactly the state at its seq (each document holds the seq that wrote it, and the
    /// index holds one entry per document naming its value).
    @Test func snapshotsStayExactWhileTheApplierCatchesUp() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let done = Locked<Result<Int, HearthError>?>(nil)
        let acknowledged = Locked<UInt64>(0)
        let writer = Thread {
            var h = History()
            var keyOf: [Int: [UInt8]] = [:]
            var groups = 0
            var outcome = Result<Int, HearthError>.success(0)
            for round in 0..<150 {
                var commits: [CommitRecord] = []
                for _ in 0..<3 {
                    let d = Int.random(in: 0..<20)
                    let seq = h.seq + 1
                    let key: [UInt8] = [1] + withUnsafeBytes(of: seq.bigEndian, Array.init)
                    var removed: [IndexEntry] = []
                    if let old = keyOf[d] { removed.append(IndexEntry(key: old, path: path("c/d\(d)"))) }
                    keyOf[d] = key
                    commits.append(h.commit([("c/d\(d)", withUnsafeBytes(of: seq, Array.init))],
                                            index: IndexChanges(removed: removed, added: [IndexEntry(key: key, path: path("c/d\(d)"))])))
                }
                do throws(HearthError) { try store.apply(commits) } catch { outcome = .failure(error); break }
                let last = h.seq
                acknowledged.withLock { $0 = last }
                groups += 1
                outcome = .success(groups)
                // Alternate between an applier that keeps up and one that lags by five groups.
                if round % 25 == 0 { store.holdApplier(round % 50 == 0 ? 5 : 0) }
            }
            store.holdApplier(0)
            let final = outcome
            done.withLock { $0 = final }
        }
        writer.start()
        var checked = 0
        var finished = false
        while !finished || checked < 50 {
            finished = done.withLock { $0 != nil }
            let floor = acknowledged.withLock { $0 }
            let snap = try store.snapshot()
            // A snapshot holds at least every group acknowledged before it was taken.
            #expect(snap.seq >= floor)
            defer { snap.close() }
            let hits = try snap.scanIndex(from: [1], to: [2], reverse: false, limit: 1000)
            // Every entry's key is the seq that wrote its document, and the document carries that seq.
            for hit in hits {
                let seq = hit.key.dropFirst().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                #expect(hit.document.seq == seq)
                #expect(seq <= snap.seq)
            }
            #expect(Set(hits.map(\.document.path)).count == hits.count)
            #expect(try snap.countIndex(from: [1], to: [2]) == hits.count)
            checked += 1
        }
        let groups = try done.withLock { $0 }!.get()
        try store.drainApplier()
        #expect(groups == 150)
        #expect(try store.lastSeq() == 450)
    }

    /// Random groups (puts, deletes, index entries moving with their documents, entries of documents that do
    /// not exist) applied to SQLite with an
    /// applier holding back a random number of groups, and to the in-memory store: every read answers the same
    /// on both after every group (point reads, index scans both ways with small limits and open bounds,
    /// counts, entry visits, listings with cursors, the change log cut by limits, and a snapshot's exports).
    @Test func everyReadMatchesTheInMemoryStoreWhateverTheApplierHoldsBack() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let model = MemoryStore()
        defer { model.close() }
        var rng = SplitMix(seed: 0x5EED_0F_A991)
        var h = History()
        let paths = (0..<24).map { i in ["c/d\(i)", "c/x/s/e\(i)", "e/d\(i)"][i % 3] }
        var keyOf: [String: [UInt8]] = [:]
        var orphans = 0
        for round in 0..<250 {
            if round % 10 == 0 { store.holdApplier(Int(rng.next() % 6)) }
            var group: [CommitRecord] = []
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                var writes: [(String, [UInt8]?)] = []
                var changes = IndexChanges()
                var touched = Set<String>()
                for _ in 0..<(1 + Int(rng.next() % 3)) {
                    let p = paths[Int(rng.next() % UInt64(paths.count))]
                    guard touched.insert(p).inserted else { continue }
                    if let old = keyOf[p] { changes.removed.append(entry(old, p)) }
                    if rng.next() % 4 == 0 {
                        writes.append((p, nil))
                        keyOf[p] = nil
                    } else {
                        let v = UInt8(rng.next() % 8)
                        // Keys collide across documents only through their path suffix: unique per document.
                        let key = [v, UInt8(rng.next() % 3)] + Array(p.utf8)
                        writes.append((p, [v, UInt8(round & 0xFF)]))
                        changes.added.append(entry(key, p))
                        keyOf[p] = key
                    }
                }
                // Now and then an entry whose document never exists: scans skip it, counts count it.
                if rng.next() % 8 == 0 {
                    orphans += 1
                    changes.added.append(entry([UInt8(rng.next() % 9), 5] + Array("z/o\(orphans)".utf8), "z/o\(orphans)"))
                }
                group.append(h.commit(writes, index: changes))
            }
            try store.apply(group)
            try model.apply(group)
            try compare(store, model, &rng, seq: h.seq)
        }
        store.holdApplier(0)
        try store.drainApplier()
        try compare(store, model, &rng, seq: h.seq)
    }

    private func compare(_ a: SQLiteStore, _ b: MemoryStore, _ rng: inout SplitMix, seq: UInt64) throws {
        #expect(try a.lastSeq() == seq)
        let p = ["c/d\(rng.next() % 24)", "c/x/s/e\(rng.next() % 24)", "e/d\(rng.next() % 24)"][Int(rng.next() % 3)]
        #expect(try a.get(path(p)) == b.get(path(p)), "get \(p)")
        func bound() -> [UInt8] {
            switch rng.next() % 4 {
            case 0: return []
            case 1: return [UInt8(rng.next() % 9)]
            default: return [UInt8(rng.next() % 9), UInt8(rng.next() % 3)]
            }
        }
        for _ in 0..<3 {
            let lower = bound(), upper = bound()
            let reverse = rng.next() % 2 == 0
            let limit = [1, 2, 3, 5, Int.max][Int(rng.next() % 5)]
            #expect(try a.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
                    == b.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit), "scan \(lower)..<\(upper) \(reverse) \(limit)")
            #expect(try a.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit)
                    == b.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit))
            #expect(try a.countIndex(from: lower, to: upper) == b.countIndex(from: lower, to: upper), "count \(lower)..<\(upper)")
        }
        let c = ["c", "c/x/s", "e"][Int(rng.next() % 3)]
        let after: String? = rng.next() % 2 == 0 ? nil : "d\(rng.next() % 24)"
        let limit = [1, 2, 4, 100][Int(rng.next() % 4)]
        #expect(try a.list(collection: collection(c), afterID: after, limit: limit)
                == b.list(collection: collection(c), afterID: after, limit: limit), "list \(c) after \(after ?? "-")")
        let from = seq == 0 ? 0 : rng.next() % (seq + 1)
        let changeLimit = [1, 3, 10, Int.max][Int(rng.next() % 4)]
        #expect(try a.changes(after: from, limit: changeLimit) == b.changes(after: from, limit: changeLimit), "changes after \(from)")
        let snapA = try a.snapshot(), snapB = try b.snapshot()
        defer { snapA.close(); snapB.close() }
        #expect(snapA.seq == snapB.seq)
        let scope: DocumentScope = [.all, .collection(collection(c)), .collectionGroup(["c", "s", "e"][Int(rng.next() % 3)])][Int(rng.next() % 3)]
        let cursor: DocumentPath? = rng.next() % 2 == 0 ? nil : path(p)
        #expect(try snapA.documents(in: scope, after: cursor, limit: limit) == snapB.documents(in: scope, after: cursor, limit: limit),
                "documents in \(scope) after \(cursor?.description ?? "-")")
        #expect(try snapA.scanIndex(from: [], to: [], reverse: true, limit: 7) == snapB.scanIndex(from: [], to: [], reverse: true, limit: 7))
    }
}

/// An `ApplierStatus` handed from a test's helper thread.
private final class LockedStatus: @unchecked Sendable {
    private let lock = NSLock()
    private var status: ApplierStatus?
    func set(_ s: ApplierStatus?) { lock.withLock { status = s } }
    func get() -> ApplierStatus? { lock.withLock { status } }
}
