import Foundation
import HearthCheck
import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage
import HearthStorageSQLite
import Testing

/// The stored JSON form, as the server's codecs write it.
struct JSONCodec: DocumentCodec {
    func encode(_ fields: MapValue) -> [UInt8] { FieldsJSON().encodeFields(fields) }
    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue { try FieldsJSON().decodeFields(data) }
}

struct JSONCatalogCodec: IndexCatalogCodec {
    func encode(_ catalog: IndexCatalog) -> [UInt8] { IndexCatalogJSON.encode(catalog) }
    func decode(_ data: [UInt8]) throws(HearthError) -> IndexCatalog { try IndexCatalogJSON.decode(data) }
}

/// A real SQLite store filled through the engine (so its entries are exactly what commits write), in a
/// temporary data directory.
final class CheckFixture {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-check-\(UUID().uuidString)").path
    private(set) var store: SQLiteStore!
    private(set) var engine: Engine!

    init() throws {
        try open()
    }

    deinit {
        store?.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    func open() throws {
        store = try SQLiteStore(directory: dir)
        engine = try Engine(store: store, codec: JSONCodec(), indexCatalogCodec: JSONCatalogCodec())
    }

    /// Makes every queued commit durable, and waits until SQLite itself holds them (the tests read and damage
    /// its tables directly).
    func flush() {
        while let batch = engine.takeBatch() { engine.finish(batch, error: Engine.makeDurable(batch, in: store)) }
        try! store.drainApplier()
    }

    func write(_ writes: [Write]) throws {
        try engine.commit(writes) { _ in }
        flush()
    }

    func buildIndexes() throws {
        while engine.hasIndexWork { try engine.indexWorkStep(); flush() }
        flush()
    }

    /// Runs SQL on the store's file, with the store closed (so changed rows keep their old checksums).
    func damage(_ sql: String) throws {
        store.close()
        let db = try SQLiteConnection(path: dir + "/hearth.db", role: "test", create: false)
        try db.exec(sql, "damaging the store")
        db.close()
        try open()
    }

    func check() throws -> CheckReport {
        try StoreCheck(store: store, dataDir: dir).run()
    }

    /// A store with nested maps, arrays, a subcollection, a ready composite index, a dropped one, and
    /// updates and deletes in its change log.
    static func populated() throws -> CheckFixture {
        let f = try CheckFixture()
        func doc(_ p: String, _ fields: [(String, Value)]) -> Write {
            var map = MapValue()
            for (k, v) in fields { map[k] = v }
            return Write(kind: .set, path: try! DocumentPath(parsing: p), operation: .update(fields: map, mask: nil))
        }
        try f.write([doc("calls/c1", [("customer", "ada"), ("t", 1), ("tags", .array(["a", "b", "a"])), ("m", ["x": 1])]),
                     doc("calls/c2", [("customer", "bob"), ("t", 2), ("v", "marker-c2")]),
                     doc("calls/c3", [("customer", "ada"), ("t", 3)]),
                     doc("users/u1", [("name", "Ada")]),
                     doc("users/u1/feed/p1", [("t", 4)])])
        _ = try f.engine.createIndex(collectionID: "calls", scope: .collection,
                                     fields: [.init(try FieldPath.parse("customer"), .ascending), .init(try FieldPath.parse("t"), .descending)])
        let (dropped, _) = try f.engine.createIndex(collectionID: "calls", scope: .collectionGroup,
                                                    fields: [.init(try FieldPath.parse("tags"), .arrayContains)])
        f.flush()
        try f.buildIndexes()
        try f.engine.dropIndex(id: dropped.id)
        f.flush()
        try f.buildIndexes()
        try f.write([doc("calls/c3", [("customer", "cy"), ("t", 5)])])
        try f.write([Write(kind: .delete, path: try DocumentPath(parsing: "users/u1/feed/p1"), operation: .delete)])
        return f
    }
}

@Suite struct StoreCheckTests {
    @Test func aCleanStorePasses() throws {
        let f = try CheckFixture.populated()
        let report = try f.check()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.documents == 4)
        #expect(report.changes == 7)
        #expect(report.declaredIndexes == 1)
        #expect(report.catalogSource == "store")
        #expect(report.indexEntries > 20)
        #expect(report.summary.hasSuffix("no damage found"))
    }

    @Test func aDamagedDocumentRowIsReportedByPath() throws {
        let f = try CheckFixture.populated()
        try f.damage("UPDATE documents SET data = CAST(replace(CAST(data AS TEXT), 'marker', 'mArker') AS BLOB) WHERE id = 'c2'")
        let report = try f.check()
        #expect(!report.isClean)
        #expect(report.problems.contains { $0.area == .document && $0.path == "calls/c2" && $0.message.contains("checksum mismatch") })
        // Its entries are not reported again; nothing else is.
        #expect(report.damagedPaths == ["calls/c2"], "\(report.problems)")
    }

    @Test func aDamagedChangeLogRowIsReported() throws {
        let f = try CheckFixture.populated()
        try f.damage("UPDATE changes SET after_update_us = after_update_us + 1 WHERE path = 'calls/c1'")
        let report = try f.check()
        #expect(report.problems.map(\.area) == [.changeLog])
        #expect(report.problems.first?.path == "calls/c1")
        #expect(report.problems.first?.message.contains("seq 1") == true)
    }

    /// Bytes that pass their checksum but must not be served (damage from before the store had checksums).
    @Test func bytesThatDoNotDecodeAreReportedEvenWithAGoodChecksum() throws {
        let f = try CheckFixture.populated()
        try f.damage("""
            UPDATE documents SET data = CAST(replace(CAST(data AS TEXT), 'marker', 'm' || char(10) || 'ker') AS BLOB) WHERE id = 'c2';
            UPDATE documents SET checksum = hearth_checksum(collection, id, data, create_us, update_us, seq) WHERE id = 'c2';
            UPDATE changes SET after_data = x'7B22763A8F7D' WHERE path = 'users/u1';
            UPDATE changes SET checksum = hearth_checksum(seq, path, before_data, before_create_us, before_update_us, before_seq,
                after_data, after_create_us, after_update_us, after_seq) WHERE path = 'users/u1';
            """)
        let report = try f.check()
        #expect(report.problems.contains { $0.area == .document && $0.path == "calls/c2" && $0.message.contains("does not decode") })
        #expect(report.problems.contains { $0.area == .changeLog && $0.path == "users/u1" && $0.message.contains("does not decode") }, "\(report.problems)")
        #expect(report.damagedPaths == ["calls/c2", "users/u1"], "\(report.problems)")
    }

    @Test func indexEntriesAndDocumentsMustAgree() throws {
        let f = try CheckFixture.populated()
        let db = try SQLiteConnection(path: f.dir + "/hearth.db", role: "test", create: false)
        // One entry of calls/c1 (its collection-membership entry) removed, one pointed at another document, and
        // one made up for a document that does not exist.
        let c1Entries = try db.queryColumn("SELECT hex(key) FROM index_entries WHERE id = 'c1' ORDER BY key")
        let c3Entries = try db.queryColumn("SELECT hex(key) FROM index_entries WHERE id = 'c3' ORDER BY key")
        db.close()
        try f.damage("""
            DELETE FROM index_entries WHERE key = x'\(c1Entries[0])';
            UPDATE index_entries SET id = 'c2' WHERE key = x'\(c3Entries[0])';
            INSERT INTO index_entries (key, collection, id) VALUES (x'0100FF', 'calls', 'ghost');
            """)
        let report = try f.check()
        let byPath = Dictionary(grouping: report.problems.filter { $0.area == .index }, by: { $0.path ?? "" })
        #expect(byPath["calls/c1"]?.first?.message.contains("lacks 1 of its index entries") == true, "\(report.problems)")
        #expect(byPath["calls/c3"]?.first?.message.contains("pointing at another document") == true, "\(report.problems)")
        #expect(byPath["calls/c2"]?.first?.message.contains("whose data does not produce it") == true, "\(report.problems)")
        #expect(byPath["calls/ghost"]?.first?.message.contains("which does not exist") == true, "\(report.problems)")
        #expect(report.damagedPaths == ["calls/c1", "calls/c2", "calls/c3", "calls/ghost"])
    }

    @Test func aStoreNotYetMigratedIsCheckedAgainstItsIndexesJSON() throws {
        let f = try CheckFixture.populated()
        let catalog = try #require(try f.store.indexCatalog())
        try f.damage("DELETE FROM index_catalog")
        // Without any catalog, the composite entries belong to no declared index.
        let bare = try f.check()
        #expect(bare.problems.contains { $0.message.contains("belongs to no declared index") })
        try Data(catalog).write(to: URL(fileURLWithPath: f.dir + "/indexes.json"))
        let report = try f.check()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.catalogSource == "indexes.json (not imported yet)")
    }

    @Test func entriesOfADropNotYetPurgedAreNotDamage() throws {
        let f = try CheckFixture.populated()
        let (def, _) = try f.engine.createIndex(collectionID: "calls", scope: .collection,
                                                fields: [.init(try FieldPath.parse("t"), .ascending), .init(try FieldPath.parse("customer"), .ascending)])
        f.flush()
        try f.buildIndexes()
        try f.engine.dropIndex(id: def.id)
        f.flush()   // the drop is durable; its entries are still there (the daemon stopped before purging)
        let report = try f.check()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.awaitingPurge == 3)
        #expect(report.summary.contains("3 entries of dropped indexes awaiting removal"))
    }

    @Test func damageSQLiteFindsIsReported() throws {
        let f = try CheckFixture.populated()
        // An index whose b-tree disagrees with its table: SQLite's integrity check finds it.
        try f.damage("PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE UNIQUE INDEX documents_by_key ON documents (id, collection)' WHERE name = 'documents_by_key'; PRAGMA writable_schema = OFF;")
        let report = try f.check()
        #expect(report.problems.contains { $0.area == .sqlite }, "\(report.problems)")
    }
}
