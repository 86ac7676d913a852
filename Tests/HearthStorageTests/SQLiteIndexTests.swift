import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// The SQLite side of secondary indexes: query plans, durability of entries, rollback on a storage error,
/// and the migration of a version-1 store.
@Suite struct SQLiteIndexTests {
    /// A raw connection to the fixture's database (the store keeps its own two).
    static func connect(_ f: StoreFixture) throws -> SQLiteConnection {
        try SQLiteConnection(path: f.directory + "/hearth.db", role: "test", create: false)
    }

    /// The whole schema, one line per object, whitespace-normalized (to compare a migrated store with a new one).
    static func schema(_ db: SQLiteConnection) throws -> [String] {
        try db.queryColumn("SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name")
            .map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
    }

    @Test func scansWalkThePrimaryKeyInOrderAndLookDocumentsUpByKey() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let db = try Self.connect(f)
        defer { db.close() }
        for reverse in [false, true] {
            for bounded in [false, true] {
                let sql = SQLiteIndexReader.scanSQL(reverse: reverse, bounded: bounded)
                let plan = try db.queryColumn("EXPLAIN QUERY PLAN " + sql, column: 3)
                #expect(plan.count == 2, "\(plan)")
                #expect(plan.first?.contains("i USING PRIMARY KEY (key>?\(bounded ? " AND key<?" : ""))") == true, "\(plan)")
                #expect(plan.last?.contains("d USING INDEX documents_by_key (collection=? AND id=?)") == true, "\(plan)")
                #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
                // The bytecode: no sorter or temporary table, and a scan in the requested direction.
                let opcodes = try db.queryColumn("EXPLAIN " + sql, column: 1)
                #expect(!opcodes.contains("SorterOpen") && !opcodes.contains("OpenEphemeral"))
                #expect(opcodes.contains(reverse ? "Prev" : "Next"))
                #expect(!opcodes.contains(reverse ? "Next" : "Prev"))
                // The entries-only scan: the primary key alone, in order, no sort and no document lookup.
                let entries = SQLiteIndexReader.entriesSQL(reverse: reverse, bounded: bounded)
                let entryPlan = try db.queryColumn("EXPLAIN QUERY PLAN " + entries, column: 3)
                #expect(entryPlan.count == 1, "\(entryPlan)")
                #expect(entryPlan.first?.contains("USING PRIMARY KEY (key>?\(bounded ? " AND key<?" : ""))") == true, "\(entryPlan)")
                let entryOps = try db.queryColumn("EXPLAIN " + entries, column: 1)
                #expect(!entryOps.contains("SorterOpen") && !entryOps.contains("OpenEphemeral"))
                #expect(entryOps.contains(reverse ? "Prev" : "Next"))
            }
            let count = try db.queryColumn("EXPLAIN QUERY PLAN " + SQLiteIndexReader.countSQL(bounded: reverse), column: 3)
            #expect(count.count == 1 && count[0].contains("USING PRIMARY KEY"), "\(count)")
        }
    }

    @Test func entriesSurviveReopenAndAreSeenByASecondStore() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        let keys = (0..<50).map { i in [UInt8(i % 5), 0x00, 0xFF, UInt8(i)] }
        try f.store.apply([h.commit((0..<50).map { ("c/d\($0)", bytes("\($0)")) },
                                    index: IndexChanges(added: keys.indices.map { entry(keys[$0], "c/d\($0)") }))])
        let before = try f.store.scanIndex(from: [2], to: [], reverse: true, limit: 100)
        #expect(before.count == 30)
        let second = try f.openSecond()
        defer { second.close() }
        #expect(try second.scanIndex(from: [2], to: [], reverse: true, limit: 100) == before)
        try f.reopen()
        #expect(try f.store.scanIndex(from: [2], to: [], reverse: true, limit: 100) == before)
        #expect(try f.store.countIndex(from: [], to: []) == 50)
        #expect(try f.store.countIndex(from: [1], to: [2]) == 10)
    }

    @Test func aStorageErrorOnAnIndexEntryRollsBackTheGroup() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        f.store.close()
        let db = try Self.connect(f)
        try db.exec("CREATE TRIGGER boom AFTER INSERT ON index_entries WHEN NEW.key = x'EE' BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
                    "creating a failing trigger")
        db.close()
        try f.reopen()
        // On a store without a commit log, whose `apply` is SQLite's transaction itself.
        let store = try f.openSecond()
        defer { store.close() }
        var h = History()
        let group = [h.commit([("c/a", bytes("a"))], index: IndexChanges(added: [entry([1], "c/a")])),
                     h.index(adding: [entry([2], "c/a"), entry([0xEE], "c/a")])]
        let error = thrownError { () throws(HearthError) in try store.apply(group) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("put index entry") == true)
        #expect(try store.lastSeq() == 0)
        #expect(try store.countIndex(from: [], to: []) == 0)
        #expect(try store.get(path("c/a")) == nil)
        try store.apply([group[0]])
        #expect(try store.scanIndex(from: [], to: [], reverse: false, limit: 5).map(\.key) == [[1]])
    }

    @Test func aVersion1StoreIsMigratedInPlace() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try SchemaV1Fixture.build(in: dir)
        let store = try SQLiteStore(directory: dir)
        // The data of version 1 reads as before.
        #expect(try store.lastSeq() == 1)
        #expect(try store.get(SchemaV1Fixture.document.path) == SchemaV1Fixture.document)
        #expect(try store.changes(after: 0, limit: 10) == [SchemaV1Fixture.commit])
        #expect(try store.countIndex(from: [], to: []) == 0)
        // And the index works.
        var h = History(startingAfter: 1)
        try store.apply([h.index(adding: [entry([7], "c/a")])])
        #expect(try store.scanIndex(from: [], to: [], reverse: true, limit: 5).map(\.document) == [SchemaV1Fixture.document])
        store.close()

        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == SQLiteSchema.version)
        // The migrated layout is exactly a new store's.
        let fresh = try StoreFixture(.sqlite)
        defer { fresh.finish() }
        let freshDB = try Self.connect(fresh)
        defer { freshDB.close() }
        #expect(try Self.schema(db) == Self.schema(freshDB))
        // A second open has nothing to migrate.
        let again = try SQLiteStore(directory: dir)
        defer { again.close() }
        #expect(try again.scanIndex(from: [7], to: [8], reverse: false, limit: 5).count == 1)
    }

    @Test func aFailedMigrationChangesNothing() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try SchemaV1Fixture.build(in: dir)
        // A table in the way makes the migration's CREATE TABLE fail.
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        try db.exec("CREATE TABLE index_entries (x)", "blocking the migration")
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("migrating the schema from version 1 to 2") == true)
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == 1)
        // Once the obstacle is gone, the migration runs.
        try db.exec("DROP TABLE index_entries", "unblocking the migration")
        let store = try SQLiteStore(directory: dir)
        defer { store.close() }
        #expect(try store.get(SchemaV1Fixture.document.path) == SchemaV1Fixture.document)
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == SQLiteSchema.version)
        #expect(try store.historyID() > 0)
    }

    @Test func refusesAnUnknownOlderSchemaVersion() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        f.store.close()
        let db = try Self.connect(f)
        try db.exec("UPDATE meta SET value = 0 WHERE key = 'schema_version'", "clearing the version")
        db.close()
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: f.directory) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("unknown schema version 0") == true)
    }
}
