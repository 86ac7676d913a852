import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthStorageSQLite
import Testing

/// What only a durable backend can show: reopening, a second connection, recovery, the file itself.
@Suite struct SQLiteStoreTests {
    @Test func dataSurvivesCloseAndReopen() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let history = ChangeLogConformanceTests.sampleHistory()
        try f.store.apply(history)
        let before = try f.store.list(collection: collection("users"), afterID: nil, limit: 10)
        let hits = try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10)
        #expect(hits.count == 2)
        try f.reopen()
        #expect(try f.store.lastSeq() == 5)
        #expect(try f.store.changes(after: 0, limit: 100) == history.map(\.logged))
        #expect(try f.store.scanIndex(from: [], to: [], reverse: false, limit: 10) == hits)
        #expect(try f.store.countIndex(from: [], to: []) == 2)
        #expect(try f.store.list(collection: collection("users"), afterID: nil, limit: 10) == before)
        #expect(try f.store.get(path("café/é"))?.data.count == 300)
        // The data directory holds the database, its lock file and the emptied commit log; a clean close
        // checkpointed and removed the WAL.
        f.store.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: f.directory)
        #expect(files.sorted() == ["LOCK", "commit.log", "hearth.db"])
        #expect(FileManager.default.contents(atPath: f.directory + "/commit.log") == Data())
    }

    /// Checkpoints run off the writer: once the WAL holds `SQLiteStore.checkpointThresholdPages` pages a background
    /// checkpoint copies them into hearth.db, and the next commit starts the WAL over instead of growing it.
    @Test func walIsCheckpointedInTheBackgroundAndStartsOver() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        let big = [UInt8](repeating: 7, count: 64 * 1024)
        for i in 0..<10 { try store.apply([h.put("c/d\(i)", big)]) }   // ~330 pages (document + log image): below the threshold
        try store.drainApplier()   // SQLite holds them (the applier writes the WAL)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(store.backgroundCheckpoints.completed == 0)
        // ~33 pages per document: past the threshold by a quarter.
        let n = SQLiteStore.checkpointThresholdPages * 5 / 4 / 33
        for i in 10..<n { try store.apply([h.put("c/d\(i)", big)]) }
        try store.drainApplier()
        // Wait for the checkpoints the commits asked for to finish.
        for _ in 0..<500 where !store.backgroundCheckpoints.idle { Thread.sleep(forTimeInterval: 0.02) }
        #expect(store.backgroundCheckpoints.idle)
        #expect(store.backgroundCheckpoints.completed > 0)
        let wal = f.directory + "/hearth.db-wal"
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) ?? -1 }
        let before = size()
        #expect(before > n * big.count / 2)
        for i in 0..<10 { try store.apply([h.put("c/e\(i)", big)]) }
        try store.drainApplier()
        #expect(size() == before, "the WAL started over from its beginning")
        try f.reopen()
        #expect(try f.store.get(path("c/d\(n - 1)"))?.data == big)
        #expect(try f.store.get(path("c/e9"))?.data == big)
        #expect(try f.store.lastSeq() == UInt64(n + 10))
    }

    @Test func lastSeqNeverDecreasesAfterPruningEverything() throws {
        let f = try StoreFixture(.sqlite, retention: RetentionPolicy(maxAgeMicros: 0, maxBytes: 0))
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a")), h.put("c/b", bytes("b")), h.put("c/c", bytes("c"))])
        try f.settle()
        #expect(try f.store.oldestResumableSeq() == 3)
        try f.reopen()
        #expect(try f.store.lastSeq() == 3)
        #expect(try f.store.oldestResumableSeq() == 3)
        #expect(try f.store.changes(after: 3, limit: 10) == [])
        #expect(try f.store.changes(after: 2, limit: 10) == nil)
        let stale = commitAt(seq: 3, putting: "c/z")
        #expect(thrownError { () throws(HearthError) in try f.store.apply([stale]) }?.code == .internal)
        try f.store.apply([h.put("c/d", bytes("d"))])
        #expect(try f.store.lastSeq() == 4)
    }

    @Test func aSecondStoreSeesOnlyCommittedGroups() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let second = try f.openSecond()
        defer { second.close() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a")), h.put("c/b", bytes("b"))])
        try f.settle()
        #expect(try second.lastSeq() == 2)
        #expect(try second.get(path("c/b"))?.data == bytes("b"))
        // A group that fails half way leaves no trace for any reader.
        var broken = h.put("c/y", bytes("y"))
        broken.mutations[0].before = StoredDocument(path: path("c/other"), data: [], createTime: Timestamp(micros: 0),
                                                    updateTime: Timestamp(micros: 0), seq: 0)
        let error = thrownError { () throws(HearthError) in try f.store.apply([h.put("c/x", bytes("x")), broken]) }
        #expect(error?.code == .internal)
        #expect(try second.lastSeq() == 2)
        #expect(try second.get(path("c/x")) == nil)
        // And a writer thread racing a reader on the other connection.
        let fresh = try StoreFixture(.sqlite)
        defer { fresh.finish() }
        let other = try fresh.openSecond()
        defer { other.close() }
        try Race.run(writer: fresh.store, reader: other)
    }

    /// SQLite's transaction is all or nothing. Shown on a store without a commit log, whose `apply` commits
    /// to SQLite itself (the commit log's applier, which reports the same failure later, is in
    /// `CommitPipelineTests`).
    @Test func aStorageErrorMidGroupRollsBackAndTheStoreStaysUsable() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        // A trigger makes SQLite itself fail on the second commit's document, after the first commit's rows
        // were written inside the transaction.
        try f.refuseDocumentsNamedBoom()
        let store = try f.openSecond()
        defer { store.close() }
        var h = History()
        let group = [h.put("c/a", bytes("a")), h.commit([("c/b", bytes("b")), ("c/boom", bytes("x"))])]
        let error = thrownError { () throws(HearthError) in try store.apply(group) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("boom refused") == true)
        #expect(error?.message.contains("put document") == true)
        #expect(try store.lastSeq() == 0)
        #expect(try store.get(path("c/a")) == nil)
        #expect(try store.changes(after: 0, limit: 10) == [])
        var retry = History()
        let ok = [retry.put("c/a", bytes("a")), retry.put("c/b", bytes("b"))]
        try store.apply(ok)
        #expect(try store.lastSeq() == 2)
        #expect(try store.changes(after: 0, limit: 10) == ok)
    }

    @Test func dataSurvivesWithoutClose() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        let commits = (0..<20).map { h.put("c/d\($0)", Array(repeating: UInt8($0), count: 300)) }
        try f.store.apply(commits)
        try f.settle()
        // No close: the first store's WAL is not checkpointed; new connections on the same files must see it.
        // (A second store is refused the directory's lock; its connections are what another process would open.)
        let second = try f.openSecond()
        defer { second.close() }
        #expect(try second.lastSeq() == 20)
        #expect(try second.changes(after: 0, limit: 100) == commits)
        #expect(try second.get(path("c/d19"))?.data == Array(repeating: 19, count: 300))
        // The second store can write, and the first sees it.
        try second.apply([h.put("c/new", bytes("n"))])
        #expect(try f.store.get(path("c/new"))?.data == bytes("n"))
    }

    @Test func recoversFromTheFilesACrashLeaves() throws {
        // Copying hearth.db, hearth.db-wal (not the -shm index) and the commit log while the store is open
        // yields the files a killed process leaves behind; opening the copy must replay the WAL and the log.
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        let commits = (0..<50).map { h.put("c/d\($0 % 7)", Array(repeating: UInt8($0), count: 300)) }
        try f.store.apply(Array(commits[..<25]))
        try f.store.apply(Array(commits[25...]))
        let fm = FileManager.default
        #expect(fm.fileExists(atPath: f.directory + "/hearth.db-wal"))
        let crashed = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(crashed) }
        try fm.createDirectory(atPath: crashed, withIntermediateDirectories: true)
        for name in ["hearth.db", "hearth.db-wal", CommitLog.fileName] {
            try fm.copyItem(atPath: f.directory + "/" + name, toPath: crashed + "/" + name)
        }
        let recovered = try SQLiteStore(directory: crashed)
        defer { recovered.close() }
        #expect(try recovered.lastSeq() == 50)
        #expect(try recovered.changes(after: 0, limit: 100) == commits)
        #expect(try recovered.get(path("c/d0"))?.data == Array(repeating: 49, count: 300))
    }

    @Test func refusesANewerSchemaVersion() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        f.store.close()
        let db = try SQLiteConnection(path: f.directory + "/hearth.db", role: "test", create: false)
        try db.exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'", "bumping the version")
        db.close()
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: f.directory) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("schema version 99") == true)
        #expect(error?.message.contains("newer") == true)
    }

    @Test func refusesAnotherApplicationsDatabase() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: true)
        try db.exec("CREATE TABLE t (x)", "creating a foreign table")
        db.close()
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("not a Hearth store") == true)
    }

    @Test func anUnusableDirectoryIsUnavailable() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-file-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: file + "/data") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains(file) == true)
    }

    @Test func callsAfterCloseAreUnavailable() throws {
        for backend in Backend.allCases {
            let f = try StoreFixture(backend)
            defer { f.finish() }
            f.store.close()
            f.store.close()
            #expect(thrownError { () throws(HearthError) in _ = try f.store.lastSeq() }?.code == .unavailable)
            #expect(thrownError { () throws(HearthError) in try f.store.apply([]) }?.code == .unavailable)
        }
    }
}

/// docs/storage.md shows the schema and the index scan; this keeps them what the code runs.
@Suite struct StorageDocumentationTests {
    @Test func theDocumentedSchemaIsTheCreatedSchema() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/storage.md"), encoding: .utf8)
        func normalized(_ s: String) -> String { s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let text = normalized(doc)
        let showsSchema = text.contains(normalized(SQLiteSchema.create))
        #expect(showsSchema, "docs/storage.md does not show SQLiteSchema.create")
        let showsScan = text.contains(normalized(SQLiteIndexReader.scanSQL(reverse: true, bounded: true)))
        #expect(showsScan, "docs/storage.md does not show the index scan statement")
        let showsPostgres = text.contains(normalized(PostgresSchema.create))
        #expect(showsPostgres, "docs/storage.md does not show PostgresSchema.create")
    }
}
