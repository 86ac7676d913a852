import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// Version 6 keys each change-log row by its seq and its place in the commit (`SQLiteSchema.changeID`), so a
/// range of seqs is a range of rowids and no index on `seq` is kept. A version-5 store (rows numbered in
/// insertion order, found through `changes_by_seq`) is migrated in place with every row where it was.
@Suite struct ChangeLogKeyTests {
    /// The change log of a store, as `changes(after:)` returns it: commits without their index changes.
    static func logged(_ records: [CommitRecord]) -> [CommitRecord] {
        records.map { CommitRecord(seq: $0.seq, commitTime: $0.commitTime, mutations: $0.mutations, indexChanges: IndexChanges()) }
    }

    /// Commits of one to three mutations each, in an order that is not the paths' order, some documents
    /// written again (so images are before images too) and one deleted.
    static func history() -> [CommitRecord] {
        var h = History()
        var out: [CommitRecord] = []
        for round in 0..<6 {
            let writes: [(String, [UInt8]?)] = (0..<(1 + round % 3)).map { k in
                ("c/\(["z", "a", "m"][k])\(round % 2)", Array("r\(round)k\(k)".utf8))
            }
            out.append(h.commit(writes))
        }
        out.append(h.delete("c/z0"))
        return out
    }

    static func open(_ dir: String) throws -> SQLiteStore { try SQLiteStore(directory: dir) }

    /// A store at `dir` holding `records` in SQLite's own rows (applied, then closed).
    static func stored(_ records: [CommitRecord], in dir: String) throws {
        let store = try open(dir)
        try store.apply(records)
        store.close()
    }

    /// Every `changes(after:)` of `store` from 0 through the last of `records` returns the records after it.
    static func expectEveryRange(of store: SQLiteStore, _ records: [CommitRecord]) throws {
        for after in 0...records.count {
            #expect(try store.changes(after: UInt64(after), limit: 100) == logged(Array(records.dropFirst(after))), "after \(after)")
        }
    }

    /// Rewrites a store's change log as version 5 kept it.
    static func writeAsVersion5(_ dir: String) throws {
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        try db.exec("""
            ALTER TABLE changes RENAME TO changes_v6;
            CREATE TABLE changes (
                id               INTEGER PRIMARY KEY,     -- insertion order: (seq, order within the commit)
                seq              INTEGER NOT NULL,        -- commits.seq
                path             TEXT NOT NULL,           -- the document's full path
                before_data      BLOB,                    -- before_*: all NULL when the document did not exist
                before_create_us INTEGER,
                before_update_us INTEGER,
                before_seq       INTEGER,
                after_data       BLOB,                    -- after_*: all NULL when the commit deleted it
                after_create_us  INTEGER,
                after_update_us  INTEGER,
                after_seq        INTEGER,
                checksum         INTEGER NOT NULL         -- XXH3-64 of the columns above but id
            );
            INSERT INTO changes (seq, path, before_data, before_create_us, before_update_us, before_seq,
                                 after_data, after_create_us, after_update_us, after_seq, checksum)
                SELECT seq, path, before_data, before_create_us, before_update_us, before_seq,
                       after_data, after_create_us, after_update_us, after_seq, checksum
                FROM changes_v6 ORDER BY id;
            DROP TABLE changes_v6;
            CREATE INDEX changes_by_seq ON changes (seq);
            UPDATE meta SET value = 5 WHERE key = 'schema_version';
            """, "writing the change log as version 5 did")
    }

    @Test func rowsAreKeyedBySeqAndPlaceAndEveryRangeReadsExactly() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let records = Self.history()
        let store = try Self.open(dir)
        try store.apply(records)
        try store.drainApplier()                // SQLite's rows, not the applier's backlog, answer the reads
        try Self.expectEveryRange(of: store, records)
        #expect(try store.changes(after: 2, limit: 2) == Self.logged(Array(records[2..<4])))
        store.close()
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        #expect(try db.queryColumn("SELECT name FROM sqlite_schema WHERE name = 'changes_by_seq'") == [])
        let ids = try db.queryColumn("SELECT id || ' ' || seq FROM changes ORDER BY id")
        var expected: [String] = []
        for r in records { for k in r.mutations.indices { expected.append("\(SQLiteSchema.changeID(seq: r.seq, order: k)) \(r.seq)") } }
        #expect(ids == expected)
    }

    @Test func aVersion5StoreKeepsEveryRowInPlace() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        var records = Self.history()
        try Self.stored(records, in: dir)
        try Self.writeAsVersion5(dir)
        let migrated = try Self.open(dir)
        try Self.expectEveryRange(of: migrated, records)
        // The migrated log takes new commits after the old ones.
        var h = History(startingAfter: UInt64(records.count))
        h.clock = records.last!.commitTime.micros + 1000
        let more = h.commit([("d/b", Array("b".utf8)), ("d/a", Array("a".utf8))])
        try migrated.apply([more])
        records.append(more)
        #expect(try migrated.changes(after: 0, limit: 100) == Self.logged(records))
        migrated.close()
        // Its layout is exactly a new store's.
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == SQLiteSchema.version)
        let fresh = try StoreFixture(.sqlite)
        defer { fresh.finish() }
        let freshDB = try SQLiteIndexTests.connect(fresh)
        defer { freshDB.close() }
        #expect(try SQLiteIndexTests.schema(db) == SQLiteIndexTests.schema(freshDB))
    }

    /// The largest keyable seq is stored and read back; a commit past it is refused before it is acknowledged,
    /// and the store goes on.
    @Test func aSeqPastTheLargestKeyableOneIsRefusedBeforeItIsAcknowledged() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let store = try Self.open(dir)
        defer { store.close() }
        var h = History(startingAfter: SQLiteSchema.maxSeq - 1)
        let last = h.commit([("c/b", Array("b".utf8)), ("c/a", Array("a".utf8))])
        try store.apply([last])
        try store.drainApplier()
        #expect(try store.changes(after: SQLiteSchema.maxSeq - 1, limit: 10) == Self.logged([last]))
        let past = h.put("c/c", Array("c".utf8))
        #expect(past.seq == SQLiteSchema.maxSeq + 1)
        let error = thrownError { () throws(HearthError) in try store.apply([past]) }
        #expect(error?.code == .resourceExhausted)
        #expect(try store.lastSeq() == SQLiteSchema.maxSeq)
        #expect(try store.get(path("c/c")) == nil)
        #expect(try store.get(path("c/a"))?.data == Array("a".utf8))
    }

    /// The rowid is not under the row's checksum: a row whose rowid names another seq fails the reads that
    /// meet it, and `hearth check`'s walk, with DATA_LOSS.
    @Test func aRowWhoseIdIsNotOfItsSeqIsDataLoss() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let records = Self.history()
        try Self.stored(records, in: dir)
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        // The first row of seq 2 moves to seq 3's range (a place seq 3 does not use).
        try db.exec("UPDATE changes SET id = \(SQLiteSchema.changeID(seq: 3, order: 9)) WHERE id = \(SQLiteSchema.changeID(seq: 2, order: 0))",
                    "damaging a row id")
        let reopened = try Self.open(dir)
        defer { reopened.close() }
        let error = thrownError { () throws(HearthError) in _ = try reopened.changes(after: 2, limit: 100) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("row id") == true)
        #expect(try reopened.changes(after: 3, limit: 100) == Self.logged(Array(records.dropFirst(3))))
        let inspection = try SQLiteInspection(reopened)
        defer { inspection.close() }
        var damaged: [String] = []
        try inspection.forEachChange { seq, path, row in
            if case .failure(let e) = row { damaged.append("\(seq) \(path): \(e.code)") }
            return true
        }
        #expect(damaged == ["2 c/z1: dataLoss"])
    }
}
