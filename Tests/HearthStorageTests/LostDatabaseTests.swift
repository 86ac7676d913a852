import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import HearthTesting
import Testing

/// A data directory whose database lost its contents (hearth.db truncated or deleted, its WAL damaged before
/// the commits) is refused with DATA_LOSS and left exactly as found, never turned into a new, empty store: the
/// commit log that every open leaves behind marks the directory as a store's. A directory that never held a
/// store still gets one.
@Suite struct LostDatabaseTests {
    /// Every file of `dir` with its bytes, but LOCK (which each open rewrites with its pid) and SQLite's
    /// `-shm` (an index of the WAL that SQLite rebuilds from it, made by any connection that reads it).
    static func files(_ dir: String) throws -> [String: Data] {
        var found: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir)
        where name != DataDirectoryLock.fileName && !name.hasSuffix("-shm") {
            found[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
        }
        return found
    }

    /// A closed store in a new directory holding `count` commits.
    static func closedStore(_ count: Int = 20) throws -> String {
        let dir = StoreFixture.makeTemporaryDirectory()
        let store = try StoreFixture.openSQLite(dir)
        var h = History()
        for i in 0..<count { try store.apply([h.put("c/d\(i)", bytes("{\"i\":\(i)}"))]) }
        store.close()
        return dir
    }

    static func expectRefused(_ dir: String, creating: Bool = true, _ what: String) throws {
        let before = try files(dir)
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir, creating: creating) }
        #expect(error?.code == .dataLoss, "\(what): \(error?.description ?? "opened")")
        #expect(error?.message.contains("shows that this data directory held one") == true, "\(what): \(error?.message ?? "")")
        #expect(error?.message.contains("Nothing was changed") == true)
        #expect(try files(dir) == before, "\(what): the refusal changed the directory's files")
    }

    @Test func aCleanCloseLeavesAnEmptyCommitLogBehind() throws {
        let dir = try Self.closedStore()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let found = try Self.files(dir)
        #expect(found[CommitLog.fileName] == Data(), "the log is there and empty: \(found.keys.sorted())")
        #expect(found[CommitLog.retiredName] == nil)
        let store = try StoreFixture.openSQLite(dir)   // and the store opens on it as before
        defer { store.close() }
        #expect(try store.lastSeq() == 20)
    }

    @Test func aTruncatedDatabaseIsRefusedAndLeftAsFound() throws {
        let dir = try Self.closedStore()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        #expect(truncate(dir + "/hearth.db", 0) == 0)
        try Self.expectRefused(dir, "truncated")
        try Self.expectRefused(dir, creating: false, "truncated, opened by the check")
        // The refusal is the same every time: nothing was created in its place.
        try Self.expectRefused(dir, "truncated, again")
    }

    /// The WAL and commit log of an open store holding 20 commits, copied into a new directory: the files a
    /// crash leaves, but for the database file, which `body` makes. `body` gets the directory.
    static func withCrashedFiles(_ body: (String) throws -> Void) throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        for i in 0..<20 { try f.store.apply([h.put("c/d\(i)", bytes("{\"i\":\(i)}"))]) }
        let crashed = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(crashed) }
        try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: true)
        for name in ["hearth.db-wal", CommitLog.fileName] {
            try FileManager.default.copyItem(atPath: f.directory + "/" + name, toPath: crashed + "/" + name)
        }
        try body(crashed)
    }

    /// A crash, then the database file truncated: its WAL (all that is left of the commits) stays as it was.
    /// SQLite would delete a WAL beside an empty file at its first read, so the refusal never opens it.
    @Test func aTruncatedDatabaseBesideItsWALIsRefusedAndTheWALKept() throws {
        try Self.withCrashedFiles { crashed in
            #expect(FileManager.default.createFile(atPath: crashed + "/hearth.db", contents: Data()))
            let wal = try Data(contentsOf: URL(fileURLWithPath: crashed + "/hearth.db-wal"))
            #expect(wal.count > 4096)
            try Self.expectRefused(crashed, "truncated beside its WAL")
            try Self.expectRefused(crashed, creating: false, "truncated beside its WAL, opened by the check")
            #expect(try Data(contentsOf: URL(fileURLWithPath: crashed + "/hearth.db-wal")) == wal)
        }
    }

    @Test func aDeletedDatabaseIsRefusedAndNotCreated() throws {
        let dir = try Self.closedStore()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try FileManager.default.removeItem(atPath: dir + "/hearth.db")
        try Self.expectRefused(dir, "deleted")
        #expect(!FileManager.default.fileExists(atPath: dir + "/hearth.db"))
    }

    /// The files a crash leaves (the database file without a schema yet, its WAL holding every commit, the
    /// log), with the WAL's first frame damaged as a bad sector would: SQLite then ignores the whole WAL and
    /// sees an empty database. The refusal keeps the WAL (no checkpoint, no removal at close).
    @Test func aWALDamagedBeforeItsCommitsIsRefusedAndKept() throws {
        try Self.withCrashedFiles { crashed in
            let walURL = URL(fileURLWithPath: crashed + "/hearth.db-wal")
            var wal = try Data(contentsOf: walURL)
            #expect(wal.count > 32 + 24 + 4096, "the WAL holds frames")
            // A database file with SQLite's header and no schema: what a new store's file holds before its
            // first checkpoint (made without the WAL beside it, which SQLite would take up or remove).
            try FileManager.default.removeItem(at: walURL)
            let fresh = try SQLiteConnection(path: crashed + "/hearth.db", role: "test", create: true)
            _ = try fresh.queryText("PRAGMA journal_mode = WAL")
            fresh.close()
            wal[32 + 24 + 100] ^= 0x80   // inside the first frame's page: its checksum no longer matches
            try wal.write(to: walURL)
            try Self.expectRefused(crashed, "damaged WAL")
            #expect(try Data(contentsOf: walURL) == wal)
        }
    }

    @Test func aDirectoryThatNeverHeldAStoreGetsOne() throws {
        // A new directory, and one whose first open stopped before its schema was committed (an empty
        // database file, no log yet).
        let new = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(new) }
        let interrupted = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(interrupted) }
        try FileManager.default.createDirectory(atPath: interrupted, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: interrupted + "/hearth.db", contents: Data()))
        for dir in [new, interrupted] {
            let store = try StoreFixture.openSQLite(dir)
            var h = History()
            try store.apply([h.put("c/a", bytes("{}"))])
            #expect(try store.lastSeq() == 1)
            store.close()
        }
        // The check never creates one.
        let checked = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(checked) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: checked, creating: false) }
        #expect(error?.code == .notFound, "\(error?.description ?? "opened")")
        #expect(!FileManager.default.fileExists(atPath: checked + "/" + CommitLog.fileName))
    }
}
