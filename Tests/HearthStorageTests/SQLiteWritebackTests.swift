import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The pacer that pushes SQLite's writes to the disk while the applier and the checkpointer write
/// (`SQLiteWriteback`): it makes a pass every interval while a writer is active and once more after the last
/// one ends, syncing the files written since their last sync, and sleeps otherwise; a store with a commit log
/// runs one around every applier transaction, background checkpoint and compaction.
@Suite struct SQLiteWritebackTests {
    /// Generous bounds for what must happen (a regression fails instead of hanging the suite).
    static let patience = 30.0

    @Test func passesEveryIntervalWhileAWriterIsActiveThenOnceMoreThenSleeps() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        #expect(pacer.state.passes == 0)
        #expect(pacer.state.idle)
        let start = DispatchTime.now().uptimeNanoseconds
        pacer.begin()
        // The first pass comes at once, the others one interval apart.
        #expect(pacer.waitForPasses(5, within: Self.patience))
        let interval = Double(SQLiteWriteback.interval) / 1e9
        #expect(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 >= 4 * interval * 0.9, "passes wait an interval between them")
        #expect(!pacer.state.idle)
        pacer.end()
        #expect(pacer.waitUntilIdle(within: Self.patience))
        let after = pacer.state
        #expect(after.passes >= 6, "one more pass after the writer ended")
        #expect(after.failures == 0)
        #expect(after.idle)
        // Idle, it makes no pass of its own: none in five intervals.
        #expect(!pacer.waitForPasses(after.passes + 1, within: 5 * interval))
        #expect(pacer.state.passes == after.passes)
    }

    /// A pass writes a file back only when it was written since its last write-back: the first writes both
    /// back, passes over files nobody writes write nothing back, a write to the WAL is written back by the
    /// next pass, and the pass after the last writer ends writes both back. (On a file system that keeps whole
    /// seconds in file times every pass writes both back.)
    @Test func aPassSyncsOnlyTheFilesWrittenSinceTheirLastSync() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        try store.drainApplier()   // the WAL exists
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        let wholeSeconds = Self.fileTimeNanoseconds(store.databasePath + "-wal") == 0
        pacer.begin()
        #expect(pacer.waitForPasses(1, within: Self.patience))
        #expect(pacer.state.syncs == 2, "the first pass writes the WAL and hearth.db back")
        #expect(pacer.waitForPasses(3, within: Self.patience))
        if !wholeSeconds { #expect(pacer.state.syncs == 2, "nothing written since: nothing written back") }
        try store.apply([h.put("c/b", [UInt8](repeating: 1, count: 100_000))])
        try store.drainApplier()   // the applier wrote the WAL
        let before = pacer.state.passes
        #expect(pacer.waitForPasses(before + 2, within: Self.patience))   // a pass that began after the write
        #expect(pacer.state.syncs >= 3)
        let beforeEnd = pacer.state.syncs
        pacer.end()
        #expect(pacer.waitUntilIdle(within: Self.patience))
        #expect(pacer.state.syncs >= beforeEnd + 2, "the pass after the last writer writes both files back")
        #expect(pacer.state.failures == 0)
        #expect(pacer.failure == nil)
    }

    @Test func staysActiveUntilEveryWriterEnds() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        pacer.begin()
        pacer.begin()
        pacer.end()
        let n = pacer.state.passes
        #expect(pacer.waitForPasses(n + 3, within: Self.patience))   // one writer is still active: it keeps passing
        #expect(!pacer.state.idle)
        pacer.end()
        #expect(pacer.waitUntilIdle(within: Self.patience))
        #expect(pacer.state.idle)
    }

    @Test func closesWhileAWriterIsActive() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        pacer.begin()
        #expect(pacer.waitForPasses(1, within: Self.patience))
        pacer.close()   // returns although the writer never ended
        pacer.close()   // idempotent
        pacer.end()     // a writer ending after the close changes nothing
        #expect(pacer.state.failures == 0)
    }

    /// A database file the pacer cannot open is refused with the cause, and nothing waits.
    @Test func aFileThePacerCannotOpenIsRefused() throws {
        let directory = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(directory) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteWriteback(path: directory + "/missing/hearth.db") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("missing/hearth.db") == true, "\(String(describing: error))")
    }

    static func fileTimeNanoseconds(_ path: String) -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { return -1 }
        return Int(st.st_mtim.tv_nsec)
    }

    /// Closing the pacer's descriptor of hearth.db drops the process's POSIX locks on it, SQLite's included: a
    /// snapshot (or a backup) still open when the store closes keeps it open until it ends.
    @Test func thePacerClosesAfterTheLastConnectionToTheDatabase() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        let snapshot = try store.snapshot()
        #expect(try snapshot.get(path("c/a"))?.data == bytes("a"))
        store.close()
        #expect(store.writebackIsOpen == true, "a snapshot still holds hearth.db open")
        #expect(try snapshot.get(path("c/a"))?.data == bytes("a"))
        snapshot.close()
        #expect(store.writebackIsOpen == false)

        let g = try StoreFixture(.sqlite)
        defer { g.finish() }
        let other = try #require(g.store as? SQLiteStore)
        let s2 = try other.snapshot()
        s2.close()   // back in the pool: the store's own
        other.close()
        #expect(other.writebackIsOpen == false)
    }

    /// The store's applier runs the pacer around each transaction: once SQLite holds a group, the pacer has
    /// synced what the transaction wrote and gone back to sleep. A compaction runs it too. A store without a
    /// commit log (SQLite syncs every commit) has none.
    @Test func theApplierAndCompactionArePaced() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        #expect(store.writebackState?.passes == 0)
        var h = History()
        let big = [UInt8](repeating: 7, count: 64 * 1024)
        for i in 0..<20 { try store.apply([h.put("c/d\(i)", big)]) }
        try store.drainApplier()
        #expect(store.waitForWritebackIdle())
        let state = try #require(store.writebackState)
        #expect(state.passes > 0)
        #expect(state.syncs > 0, "the WAL the applier wrote was synced")
        #expect(state.failures == 0)
        #expect(state.idle)
        // The store's status carries them (the stats op and /metrics show it).
        #expect(store.applier?.writebacks == state.syncs)
        #expect(store.applier?.writebackFailures == 0)
        #expect(store.applier?.writebackFailure == nil)
        _ = try store.compact()
        #expect(store.waitForWritebackIdle())
        #expect(try #require(store.writebackState).passes > state.passes)
        // What the pacer synced is what SQLite holds: a second connection set reads it.
        let second = try f.openSecond()
        defer { second.close() }
        #expect(try second.get(path("c/d19"))?.data == big)
        #expect((second as? SQLiteStore)?.writebackState == nil)
    }
}
