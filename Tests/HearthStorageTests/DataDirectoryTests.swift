import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// The data directory as the SQLite store uses it: one store per directory (`LOCK`), owner-only files, and
/// start-up errors that say what is wrong and name the path.
@Suite struct DataDirectoryTests {
    /// (name, size, modification time) of every file in `dir`: what "touches nothing" compares.
    static func listing(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map { name in
            let a = try FileManager.default.attributesOfItem(atPath: dir + "/" + name)
            return "\(name) \(a[.size] ?? "?") \((a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        }
    }

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int) ?? -1
    }

    @Test func aSecondStoreOnTheDirectoryIsRefusedAndChangesNothing() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a"))])
        try (f.store as! SQLiteStore).drainApplier()   // nothing left for the first store to write meanwhile
        let before = try Self.listing(f.directory)
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: f.directory) }
        #expect(error?.code == .unavailable)
        let message = error?.message ?? ""
        #expect(message.contains("in use by pid \(getpid())"), "\(message)")
        #expect(message.contains(f.directory), "\(message)")
        #expect(try Self.listing(f.directory) == before)
        // The first store carries on; once it is closed the directory can be opened again.
        try f.store.apply([h.put("c/b", bytes("b"))])
        try f.reopen()
        #expect(try f.store.lastSeq() == 2)
        let lock = try String(contentsOfFile: f.directory + "/LOCK", encoding: .utf8)
        #expect(lock == "\(getpid())\n")
    }

    /// A lock this process has released can still be held for a moment by a child another thread is spawning
    /// (its copy of the descriptor lives until its exec). The open waits for it instead of refusing the directory
    /// as "in use by this process". The hold here stands for that window; the open is tried during it.
    @Test func aLockThisProcessHoldsForAMomentIsWaitedFor() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a"))])
        f.store.close()
        let copy = open(f.directory + "/LOCK", O_RDWR | O_CLOEXEC)
        #expect(flock(copy, LOCK_EX | LOCK_NB) == 0)
        let opened = Locked<Result<SQLiteStore, HearthError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let directory = f.directory
        Thread.detachNewThread {
            let result = Result { () throws(HearthError) in try SQLiteStore(directory: directory) }
            opened.withLock { $0 = result }
            done.signal()
        }
        usleep(300_000)   // the child's window, before its exec closes the copy
        close(copy)
        done.wait()
        let store = try #require(try opened.withLock { $0 }?.get())
        defer { store.close() }
        #expect(try store.lastSeq() == 1)
    }

    @Test func theStoreCreatesOwnerOnlyFiles() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a"))])
        #expect(Self.mode(f.directory) == 0o700)
        for name in ["LOCK", "hearth.db", "hearth.db-wal", "hearth.db-shm"] {
            #expect(Self.mode(f.directory + "/" + name) == 0o600, "\(name) is \(String(Self.mode(f.directory + "/" + name), radix: 8))")
        }
    }

    @Test func aFileWhereTheDirectoryShouldBeIsNotADirectory() throws {
        let root = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(root) }
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        let file = parent + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        for dir in [file, file + "/data"] {
            let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("\(file) is not a directory") == true, "\(error?.message ?? "")")
        }
    }

    @Test func aDirectoryWhereTheDatabaseShouldBeIsNamed() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try FileManager.default.createDirectory(atPath: dir + "/hearth.db", withIntermediateDirectories: true)
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("\(dir)/hearth.db: is a directory") == true, "\(error?.message ?? "")")
        // The failed open released the lock.
        try FileManager.default.removeItem(atPath: dir + "/hearth.db")
        let store = try SQLiteStore(directory: dir)
        store.close()
    }
}
