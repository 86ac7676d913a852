import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The pacer that pushes SQLite's writes to the disk while the applier and the checkpointer write
/// (`SQLiteWriteback`): it makes a pass every interval while a writer is active and once more after the last
/// one ends, syncing the files written since their last sync, and sleeps otherwise; a store with a commit log
/// runs one around every applier transaction and background checkpoint.
@Suite struct SQLiteWritebackTests {
    @Test func passesWhileAWriterIsActiveThenOnceMoreThenSleeps() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        #expect(pacer.state.passes == 0)
        #expect(pacer.state.idle)
        pacer.begin()
        // The first pass comes at once, the others one interval apart: this returns only if it keeps passing.
        pacer.waitForPasses(3)
        #expect(!pacer.state.idle)
        pacer.end()
        pacer.waitUntilIdle()
        let after = pacer.state
        #expect(after.passes >= 4, "one more pass after the writer ended")
        #expect(after.failures == 0)
        #expect(after.idle)
        // Idle, it makes no pass of its own.
        pacer.waitUntilIdle()
        #expect(pacer.state.passes == after.passes)
    }

    /// A pass syncs a file only when it was written since its last sync: the first syncs both, passes over
    /// files nobody writes sync nothing, and a write to the WAL is synced by the next pass.
    @Test func aPassSyncsOnlyTheFilesWrittenSinceTheirLastSync() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        try store.drainApplier()   // the WAL exists
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        pacer.begin()
        pacer.waitForPasses(1)
        #expect(pacer.state.syncs == 2, "the first pass syncs the WAL and hearth.db")
        pacer.waitForPasses(3)
        #expect(pacer.state.syncs == 2, "nothing written since: nothing synced")
        try store.apply([h.put("c/b", [UInt8](repeating: 1, count: 100_000))])
        try store.drainApplier()   // the applier wrote the WAL
        let before = pacer.state.passes
        pacer.waitForPasses(before + 2)   // a pass that began after the write
        #expect(pacer.state.syncs >= 3)
        pacer.end()
        pacer.waitUntilIdle()
        #expect(pacer.state.failures == 0)
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
        pacer.waitForPasses(n + 3)   // one writer is still active: it keeps passing
        #expect(!pacer.state.idle)
        pacer.end()
        pacer.waitUntilIdle()
        #expect(pacer.state.idle)
    }

    @Test func closesPromptlyWhileAWriterIsActive() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        pacer.begin()
        pacer.waitForPasses(1)
        pacer.close()   // returns although the writer never ended
        pacer.close()   // idempotent
        pacer.end()     // a writer ending after the close changes nothing
        #expect(pacer.state.failures == 0)
    }

    /// The store's applier runs the pacer around each transaction: once SQLite holds a group, the pacer has
    /// synced and gone back to sleep. A store without a commit log (SQLite syncs every commit) has none.
    @Test func theApplierPacesItsTransactions() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        #expect(store.writebackState?.passes == 0)
        var h = History()
        let big = [UInt8](repeating: 7, count: 64 * 1024)
        for i in 0..<20 { try store.apply([h.put("c/d\(i)", big)]) }
        try store.drainApplier()
        store.waitForWritebackIdle()
        let state = try #require(store.writebackState)
        #expect(state.passes > 0)
        #expect(state.syncs > 0)
        #expect(state.failures == 0)
        #expect(state.idle)
        // What the pacer synced is what SQLite holds: a second connection set reads it.
        let second = try f.openSecond()
        defer { second.close() }
        #expect(try second.get(path("c/d19"))?.data == big)
        #expect((second as? SQLiteStore)?.writebackState == nil)
    }
}
