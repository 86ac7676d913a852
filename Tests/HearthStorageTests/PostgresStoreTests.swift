import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthTesting
import Testing

/// What the PostgreSQL backend does beyond the conformance suite: one writer per schema, the schema's version,
/// connection failures, and a PostgreSQL restart under an open store.
@Suite struct PostgresStoreTests {
    @Test func oneStoreWritesToASchemaAtATime() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        let dsn = try PostgresTestCluster.dsn()
        let refused = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: dsn, schema: f.schema) }
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.contains("schema \(f.schema) is in use by another hearthd") == true, "\(String(describing: refused))")
        // Another schema is another store.
        let other = PostgresTestCluster.freshSchema()
        let second = try PostgresStore(dsn: dsn, schema: other)
        second.close()
        try PostgresStore.dropSchema(dsn: dsn, schema: other)
        // Once the first is closed, the schema can be opened again, with its data.
        var h = History()
        try f.store.apply([h.put("c/a", bytes("1"))])
        f.store.close()
        let again = try PostgresStore(dsn: dsn, schema: f.schema)
        defer { again.close() }
        #expect(try again.get(path("c/a"))?.data == bytes("1"))
        #expect(try again.lastSeq() == 1)
    }

    /// Collection IDs and a subtree's documents (listCollections, recursive deletes) are what the embedded
    /// store answers for the same documents, page by page.
    @Test func administrationListingsMatchTheEmbeddedStore() throws {
        let p = try StoreFixture(.postgres)
        defer { p.finish() }
        let q = try StoreFixture(.sqlite)
        defer { q.finish() }
        var h = History()
        let paths = ["a/1", "a/2", "a/1/b/x", "a/1/b/y", "a/1/b-c/z", "a/1/b/x/deep/q", "a-b/1", "ab/1", "a/10/b/w", "é/1", "B/1"]
        let group = h.commit(paths.map { ($0, bytes("v")) })
        try p.store.apply([group])
        try q.store.apply([group])
        let pg = try #require(p.store as? StoreAdministration)
        let lite = try #require(q.store as? StoreAdministration)
        for parent in [nil, path("a/1"), path("a/1/b/x"), path("a/2")] {
            #expect(try pg.collectionIDs(under: parent) == lite.collectionIDs(under: parent), "\(String(describing: parent))")
        }
        for root in ["a", "a/1", "a/1/b", "a/1/b/x", "a-b", "zz", "a/10", "a/10/b"] {
            for limit in [1, 2, 3, 100] {
                let r = try ResourcePath.parse(root)
                #expect(try pg.documentPaths(under: r, limit: limit) == lite.documentPaths(under: r, limit: limit), "\(root) limit \(limit)")
            }
        }
    }

    /// With a node's records, a schema whose store the node served must still hold it: renamed away, emptied of
    /// its tables, or dropped and made again by a node that never served it, it is refused with DATA_LOSS and
    /// nothing is created; renamed back, it is served again.
    @Test func aLostSchemaIsRefusedWithTheNodesRecords() throws {
        let dsn = try PostgresTestCluster.dsn()
        let schema = PostgresTestCluster.freshSchema(), renamed = PostgresTestCluster.freshSchema()
        let dir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer {
            try? PostgresTestCluster.dropSchema(schema)
            try? PostgresTestCluster.dropSchema(renamed)
            try? FileManager.default.removeItem(atPath: dir)
        }
        func open() throws(HearthError) -> PostgresStore {
            try PostgresStore(dsn: dsn, schema: schema, records: try PostgresStoreRecords(directory: dir))
        }
        func refusal(_ expected: String) throws {
            let refused = thrownError { () throws(HearthError) in _ = try open() }
            #expect(refused?.code == .dataLoss, "\(String(describing: refused))")
            #expect(refused?.message.contains("schema \(schema) of database postgres \(expected)") == true, "\(String(describing: refused))")
            #expect(refused?.message.contains("recorded in \(dir)/postgres-stores") == true, "\(String(describing: refused))")
        }
        func absent(_ name: String) throws {
            try PostgresTestCluster.exec(schema: "public", "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '\(name)') THEN RAISE EXCEPTION 'schema \(name) exists'; END IF; END $$")
        }
        var h = History()
        let first = try open()
        try first.apply([h.put("c/a", bytes("1"))])
        let history = try first.historyID()
        first.close()
        #expect(try PostgresStoreRecords(directory: dir).history(database: "postgres", schema: schema) == history)

        try PostgresTestCluster.exec(schema: "public", "ALTER SCHEMA \"\(schema)\" RENAME TO \"\(renamed)\"")
        try refusal("is missing: it was dropped or renamed")
        try absent(schema)
        try PostgresTestCluster.exec(schema: "public", "ALTER SCHEMA \"\(renamed)\" RENAME TO \"\(schema)\"")
        let back = try open()
        #expect(try back.get(path("c/a"))?.data == bytes("1"))
        back.close()

        // Dropped and made again by a store that never served it (another node, or a node with new records).
        try PostgresTestCluster.dropSchema(schema)
        let other = try PostgresStore(dsn: dsn, schema: schema)
        let otherHistory = try other.historyID()
        other.close()
        try refusal("holds another store (history \(otherHistory)): it was dropped and made again")

        try PostgresTestCluster.exec(schema: schema, "DROP TABLE hearth_meta CASCADE")
        try refusal("has no Hearth tables: they were dropped")
    }

    /// The records' file keeps any database and schema name, and says which line it cannot read.
    @Test func storeRecordsKeepAnyNameAndRefuseAMalformedFile() throws {
        let dir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Names are kept byte for byte, as PostgreSQL compares them: a precomposed é and e + accent are two.
        let names = ["hearth", "a b", "x%41", "é\ny", "%", "-_.", "\t", "caf\u{e9}", "cafe\u{301}"]
        var records = try PostgresStoreRecords(directory: dir)
        for (i, name) in names.enumerated() {
            try records.record(history: UInt64(i + 1), database: "db " + name, schema: name)
        }
        try records.record(history: 99, database: "db hearth", schema: "hearth")   // replaces the first
        let read = try PostgresStoreRecords(directory: dir)
        for (i, name) in names.enumerated() {
            #expect(read.history(database: "db " + name, schema: name) == (i == 0 ? 99 : UInt64(i + 1)), "\(name.debugDescription)")
        }
        #expect(read.history(database: "db hearth", schema: "a b") == nil)
        let text = try String(contentsOfFile: dir + "/postgres-stores", encoding: .utf8)
        #expect(text.contains("\n99 db%20hearth hearth\n"), "\(text)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/postgres-stores.partial"))
        // Written by hand: lower-case escapes and CRLF line ends read as well.
        try "# by hand\r\n5 db%c3%a9 s%20t\r\n".write(toFile: dir + "/postgres-stores", atomically: false, encoding: .utf8)
        #expect(try PostgresStoreRecords(directory: dir).history(database: "dbé", schema: "s t") == 5)
        try (text).write(toFile: dir + "/postgres-stores", atomically: false, encoding: .utf8)

        for bad in ["7 only-two", "x db schema", "7 db sch%4", "7 db sch%zz", "7 db a b", "-1 db s"] {
            try (text + bad + "\n").write(toFile: dir + "/postgres-stores", atomically: false, encoding: .utf8)
            let refused = thrownError { () throws(HearthError) in _ = try PostgresStoreRecords(directory: dir) }
            #expect(refused?.message.contains("postgres-stores line \(text.split(separator: "\n", omittingEmptySubsequences: false).count) is not") == true, "\(bad): \(String(describing: refused))")
        }
    }

    @Test func aSchemaWrittenByANewerVersionIsRefused() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        f.store.close()
        try PostgresTestCluster.exec(schema: f.schema, "UPDATE hearth_meta SET schema_version = 99")
        let dsn = try PostgresTestCluster.dsn()
        let error = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: dsn, schema: f.schema) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("schema version 99, written by a newer Hearth") == true, "\(String(describing: error))")
    }

    @Test func badConnectionsAndNamesAreClearErrors() throws {
        let unreachable = thrownError { () throws(HearthError) in
            _ = try PostgresStore(dsn: "host=127.0.0.1 port=1 user=hearth dbname=postgres connect_timeout=5")
        }
        #expect(unreachable?.code == .unavailable)
        #expect(unreachable?.message.contains("cannot connect to PostgreSQL") == true, "\(String(describing: unreachable))")
        #expect(unreachable?.message.contains("\n") == false)
        let garbled = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: "this is not a connection string") }
        #expect(garbled?.code == .unavailable)
        let dsn = try PostgresTestCluster.dsn()
        let unnamed = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: dsn, schema: "") }
        #expect(unnamed?.code == .invalidArgument)
        // A name that needs quoting is quoted, not spliced.
        let odd = "odd \"name\"; DROP TABLE x"
        let store = try PostgresStore(dsn: dsn, schema: odd)
        var h = History()
        try store.apply([h.put("c/a", bytes("1"))])
        #expect(try store.get(path("c/a"))?.data == bytes("1"))
        store.close()
        try PostgresStore.dropSchema(dsn: dsn, schema: odd)
    }

    /// PostgreSQL stops under an open store: writes and reads fail with UNAVAILABLE, nothing is half-applied,
    /// and once it is back the same store reads and writes again (its connections are reopened), keeping its
    /// schema's writer lock.
    @Test func theStoreCarriesOnAcrossAPostgreSQLRestart() throws {
        let cluster = try PrivateCluster()
        defer { cluster.remove() }
        let store = try PostgresStore(dsn: cluster.dsn, schema: "restart")
        defer { store.close() }
        var h = History()
        try store.apply([h.put("c/a", bytes("1"))])
        let snapshot = try store.snapshot()
        snapshot.close()

        try cluster.stop()
        let failedWrite = thrownError { () throws(HearthError) in try store.apply([h.put("c/b", bytes("2"))]) }
        #expect(failedWrite?.code == .unavailable, "\(String(describing: failedWrite))")
        #expect(thrownError { () throws(HearthError) in _ = try store.get(path("c/a")) }?.code == .unavailable)
        #expect(thrownError { () throws(HearthError) in _ = try store.snapshot() }?.code == .unavailable)

        try cluster.start()
        #expect(try store.get(path("c/a"))?.data == bytes("1"))
        #expect(try store.get(path("c/b")) == nil, "the failed group left nothing")
        #expect(try store.lastSeq() == 1)
        // The engine retries a failed group's commits under new seqs; the store takes the next one.
        var retry = History(startingAfter: 1)
        try store.apply([retry.put("c/b", bytes("2"))])
        #expect(try store.get(path("c/b"))?.data == bytes("2"))
        let s = try store.snapshot()
        #expect(s.seq == 2)
        s.close()
        // The writer lock came back with the writer's new session.
        let second = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: cluster.dsn, schema: "restart") }
        #expect(second?.message.contains("in use by another hearthd") == true, "\(String(describing: second))")
    }
}

