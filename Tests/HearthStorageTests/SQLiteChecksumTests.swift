import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// Schema version 4's checksums: every document row, change-log row and the index catalog carry one; a row
/// that fails it is never returned (DATA_LOSS naming it), and the rows around it still are.
@Suite struct SQLiteChecksumTests {
    /// A store holding c/a, c/b (damage target), d/x, with index entries for all three, a logged commit
    /// each, and a catalog; closed, so the test can damage the file.
    static func populated() throws -> StoreFixture {
        let f = try StoreFixture(.sqlite)
        var h = History()
        var first = h.commit([("c/a", bytes(#"{"v":"marker-aaaa"}"#))], index: IndexChanges(added: [entry([1, 1], "c/a")]))
        first.indexCatalog = bytes(#"{"nextId":1}"#)
        try f.store.apply([
            first,
            h.commit([("c/b", bytes(#"{"v":"marker-bbbb"}"#))], index: IndexChanges(added: [entry([1, 2], "c/b")])),
            h.commit([("d/x", bytes(#"{"v":"marker-xxxx"}"#))], index: IndexChanges(added: [entry([1, 3], "d/x")])),
        ])
        f.store.close()
        return f
    }

    /// SQL for `column` with its 13th byte (the `-` of `{"v":"marker-…"}`) replaced by 0x8F.
    static func flipped(_ column: String) -> String {
        "CAST(substr(\(column), 1, 12) || x'8F' || substr(\(column), 14) AS BLOB)"
    }

    /// Runs `sql` on the closed store's file, so the rows it changes keep their old checksums.
    static func flip(_ f: StoreFixture, _ sql: String) throws {
        let db = try SQLiteIndexTests.connect(f)
        defer { db.close() }
        try db.exec(sql, "damaging a row")
    }

    @Test func aDamagedDocumentRowIsNeverReturnedAndTheOthersAre() throws {
        let f = try Self.populated()
        defer { f.finish() }
        try Self.flip(f, "UPDATE documents SET data = \(Self.flipped("data")) WHERE id = 'b'")
        try f.reopen()
        let s = f.store
        let get = thrownError { () throws(HearthError) in _ = try s.get(path("c/b")) }
        #expect(get?.code == .dataLoss)
        #expect(get?.message.contains("document c/b is damaged in storage") == true)
        let list = thrownError { () throws(HearthError) in _ = try s.list(collection: collection("c"), afterID: nil, limit: 10) }
        #expect(list?.code == .dataLoss)
        #expect(list?.message.contains("c/b") == true)
        let scan = thrownError { () throws(HearthError) in _ = try s.scanIndex(from: [1], to: [2], reverse: false, limit: 10) }
        #expect(scan?.code == .dataLoss)
        #expect(scan?.message.contains("c/b") == true)
        // Everything that does not meet c/b is served.
        #expect(try s.get(path("c/a"))?.data == bytes(#"{"v":"marker-aaaa"}"#))
        #expect(try s.get(path("d/x"))?.data == bytes(#"{"v":"marker-xxxx"}"#))
        #expect(try s.list(collection: collection("c"), afterID: nil, limit: 1).map(\.path) == [path("c/a")])
        #expect(try s.list(collection: collection("d"), afterID: nil, limit: 10).count == 1)
        #expect(try s.scanIndex(from: [1, 3], to: [2], reverse: false, limit: 10).map(\.document.path) == [path("d/x")])
        #expect(try s.scanIndex(from: [1], to: [1, 2], reverse: false, limit: 10).map(\.document.path) == [path("c/a")])
        #expect(try s.changes(after: 0, limit: 10)?.count == 3)   // the log's own copy is intact
    }

    @Test func aDamagedTimeOrSeqOrKeyColumnIsCaughtToo() throws {
        for damage in ["UPDATE documents SET update_us = update_us + 1 WHERE id = 'b'",
                       "UPDATE documents SET seq = 7 WHERE id = 'b'",
                       "UPDATE documents SET id = 'c' WHERE id = 'b'"] {
            let f = try Self.populated()
            defer { f.finish() }
            try Self.flip(f, damage)
            try f.reopen()
            let error = thrownError { () throws(HearthError) in _ = try f.store.list(collection: collection("c"), afterID: nil, limit: 10) }
            #expect(error?.code == .dataLoss, "\(damage)")
            #expect(try f.store.get(path("c/a")) != nil)
        }
    }

    @Test func aDamagedChangeLogRowFailsTheReadsThatMeetIt() throws {
        let f = try Self.populated()
        defer { f.finish() }
        try Self.flip(f, "UPDATE changes SET after_data = \(Self.flipped("after_data")) WHERE seq = 2")
        try f.reopen()
        let error = thrownError { () throws(HearthError) in _ = try f.store.changes(after: 0, limit: 10) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("document c/b at seq 2") == true)
        #expect(try f.store.changes(after: 2, limit: 10)?.map(\.seq) == [3])
        #expect(try f.store.get(path("c/b"))?.data == bytes(#"{"v":"marker-bbbb"}"#))   // the document row is intact
    }

    @Test func aDamagedCatalogIsDataLoss() throws {
        let f = try Self.populated()
        defer { f.finish() }
        try Self.flip(f, "UPDATE index_catalog SET data = CAST('{\"nextId\":9}' AS BLOB)")
        try f.reopen()
        #expect(thrownError { () throws(HearthError) in _ = try f.store.indexCatalog() }?.code == .dataLoss)
    }

    /// The damage of the issue: raw bytes of the closed database file flipped, where a document's data lies.
    @Test func rawBytesFlippedInTheFileAreCaught() throws {
        let f = try Self.populated()
        defer { f.finish() }
        let file = f.directory + "/hearth.db"
        var data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let marker = bytes("marker-bbbb")
        var flipped = 0
        var i = 0
        while i + marker.count <= data.count {
            if Array(data[i..<(i + marker.count)]) == marker { data[i + 7] = 0x8F; flipped += 1 }
            i += 1
        }
        #expect(flipped == 2)   // the documents row and the change-log row
        try Data(data).write(to: URL(fileURLWithPath: file))
        try f.reopen()
        #expect(thrownError { () throws(HearthError) in _ = try f.store.get(path("c/b")) }?.code == .dataLoss)
        #expect(thrownError { () throws(HearthError) in _ = try f.store.changes(after: 1, limit: 1) }?.code == .dataLoss)
        #expect(try f.store.get(path("c/a")) != nil)
        #expect(try f.store.get(path("d/x")) != nil)
    }

    /// The SQL function the migration uses computes what the writer stores.
    @Test func theSQLFunctionAgreesWithTheWriter() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([("c/a", bytes("a")), ("c/e", []), ("c/a\u{0}b", (0...255).map(UInt8.init))]),
                           h.commit([("c/a", nil), ("c/e", bytes("e"))])])
        try f.settle()
        let db = try SQLiteIndexTests.connect(f)
        defer { db.close() }
        #expect(try db.queryInt("SELECT count(*) FROM documents") == 2)
        #expect(try db.queryInt("""
            SELECT count(*) FROM documents WHERE checksum != hearth_checksum(collection, id, data, create_us, update_us, seq)
            """) == 0)
        #expect(try db.queryInt("SELECT count(*) FROM changes") == 5)
        #expect(try db.queryInt("""
            SELECT count(*) FROM changes WHERE checksum != hearth_checksum(seq, path, before_data, before_create_us,
                before_update_us, before_seq, after_data, after_create_us, after_update_us, after_seq)
            """) == 0)
    }

    /// A version-3 store (no checksums) gains them at open, computed from its rows.
    @Test func aVersion3StoreGetsItsChecksums() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try SchemaV1Fixture.build(in: dir)
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        for v: Int64 in [1, 2] { try db.exec(SQLiteSchema.migrations[v]!, "migrating the fixture to version \(v + 1)") }
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == 3)
        // A version-3 row of another collection, as a version-3 store wrote it.
        try db.exec("""
            INSERT INTO documents (collection, id, data, create_us, update_us, seq) VALUES ('d', 'x', x'7878', 2000, 2000, 2);
            INSERT INTO commits (seq, commit_us, bytes) VALUES (2, 2000, 2);
            INSERT INTO changes (seq, path, after_data, after_create_us, after_update_us, after_seq)
                VALUES (2, 'd/x', x'7878', 2000, 2000, 2);
            UPDATE meta SET value = 2 WHERE key = 'last_seq';
            """, "adding a version-3 row")
        let store = try SQLiteStore(directory: dir)
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == SQLiteSchema.version)
        #expect(try store.get(SchemaV1Fixture.document.path) == SchemaV1Fixture.document)
        #expect(try store.get(path("d/x"))?.data == bytes("xx"))
        #expect(try store.changes(after: 0, limit: 10)?.map(\.seq) == [1, 2])
        #expect(try store.indexCatalog() == nil)
        store.close()
        // The migrated checksums catch damage like any others.
        try db.exec("UPDATE documents SET data = x'7879' WHERE id = 'x'", "damaging the migrated row")
        let reopened = try SQLiteStore(directory: dir)
        defer { reopened.close() }
        #expect(thrownError { () throws(HearthError) in _ = try reopened.get(path("d/x")) }?.code == .dataLoss)
        #expect(try reopened.get(SchemaV1Fixture.document.path) == SchemaV1Fixture.document)
    }

    @Test func aFailedChecksumMigrationChangesNothing() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try SchemaV1Fixture.build(in: dir)
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        defer { db.close() }
        for v: Int64 in [1, 2] { try db.exec(SQLiteSchema.migrations[v]!, "migrating the fixture to version \(v + 1)") }
        try db.exec("CREATE TABLE index_catalog (x)", "blocking the migration")
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.message.contains("migrating the schema from version 3 to 4") == true)
        #expect(try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'") == 3)
        #expect(try db.queryColumn("SELECT name FROM sqlite_schema WHERE name LIKE '%_v3'") == [])
        try db.exec("DROP TABLE index_catalog", "unblocking the migration")
        let store = try SQLiteStore(directory: dir)
        defer { store.close() }
        #expect(try store.get(SchemaV1Fixture.document.path) == SchemaV1Fixture.document)
    }
}
