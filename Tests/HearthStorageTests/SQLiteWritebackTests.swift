import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The pacer that pushes SQLite's writes to the disk while the applier and the checkpointer write
/// (`SQLiteWriteback`): it syncs while a writer is active, once more after the last one ends, and sleeps
/// otherwise; a store with a commit log runs one around every applier transaction and background checkpoint.
@Suite struct SQLiteWritebackTests {
    @Test func syncsWhileAWriterIsActiveThenOnceMoreThenSleeps() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let pacer = try SQLiteWriteback(path: store.databasePath)
        defer { pacer.close() }
        #expect(pacer.state.syncs == 0)
        #expect(pacer.state.idle)
        pacer.begin()
        // The first sync comes at once, the others one interval apart: this returns only if it keeps syncing.
        pacer.waitForSyncs(3)
        #expect(!pacer.state.idle)
        pacer.end()
        pacer.waitUntilIdle()
        let after = pacer.state
        #expect(after.syncs >= 4, "one more sync after the writer ended")
        #expect(after.failures == 0)
        #expect(after.idle)
        // Idle, it makes no sync of its own.
        pacer.waitUntilIdle()
        #expect(pacer.state.syncs == after.syncs)
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
        let n = pacer.state.syncs
        pacer.waitForSyncs(n + 3)   // one writer is still active: it keeps syncing
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
        pacer.waitForSyncs(1)
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
        #expect(store.writebackState?.syncs == 0)
        var h = History()
        let big = [UInt8](repeating: 7, count: 64 * 1024)
        for i in 0..<20 { try store.apply([h.put("c/d\(i)", big)]) }
        try store.drainApplier()
        store.waitForWritebackIdle()
        let state = try #require(store.writebackState)
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
