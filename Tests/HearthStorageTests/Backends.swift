import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthStorageSQLite
import HearthTesting
import Testing

/// Every `DocumentStore` backend the conformance suite runs against. A new backend (PostgreSQL) joins by
/// adding a case and teaching `StoreFixture` to make a fresh, empty instance of it.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case memory
    case sqlite
    /// SQLite with its applier holding back the newest acknowledged groups (`SQLiteStore.holdApplier`), so
    /// every read merges commits the log holds and SQLite does not yet (`PendingCommits`).
    case sqliteLagging = "sqlite, applier lagging"
    /// PostgreSQL (`PostgresTestCluster`), each fixture in a schema of its own.
    case postgres

    var testDescription: String { rawValue }
}

/// A fresh, empty store of one backend, plus the temporary directory it lives in. `finish()` closes the store
/// and removes the directory; `reopen()` closes and opens the same data again (durable backends only).
final class StoreFixture {
    let backend: Backend
    let retention: RetentionPolicy
    /// The data directory (durable backends), removed by `finish()`.
    let directory: String
    /// The PostgreSQL schema (postgres backend), dropped by `finish()`.
    let schema = PostgresTestCluster.freshSchema()
    private(set) var store: any DocumentStore

    init(_ backend: Backend, retention: RetentionPolicy = .default) throws {
        self.backend = backend
        self.retention = retention
        directory = StoreFixture.makeTemporaryDirectory()
        store = try StoreFixture.open(backend, directory: directory, schema: schema, retention: retention)
    }

    /// Closes the store and opens the same data again.
    func reopen() throws {
        precondition(backend != .memory, "the in-memory store has nothing to reopen")
        store.close()
        store = try StoreFixture.open(backend, directory: directory, schema: schema, retention: retention)
    }

    /// Closes the store, makes SQLite itself refuse to insert a document with ID `boom` (a trigger raising
    /// "boom refused", so a storage error can be made to happen in the middle of a group), and reopens.
    func refuseDocumentsNamedBoom() throws {
        precondition(backend != .memory, "only SQL backends have triggers")
        store.close()
        if backend == .postgres {
            try PostgresTestCluster.exec(schema: schema, """
                CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN IF NEW.id = 'boom'::bytea THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$;
                CREATE TRIGGER boom AFTER INSERT ON hearth_documents FOR EACH ROW EXECUTE FUNCTION boom();
                """)
            try reopen()
            return
        }
        let db = try SQLiteConnection(path: directory + "/hearth.db", role: "test", create: false)
        try db.exec("CREATE TRIGGER boom AFTER INSERT ON documents WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END",
                    "creating a failing trigger")
        db.close()
        try reopen()
    }

    /// Waits until a backend that applies groups in the background (SQLite, after its commit log) has applied
    /// every acknowledged one: retention prunes the change log as groups are applied, and other connections on
    /// the same files see only what was.
    func settle() throws {
        try (store as? SQLiteStore)?.drainApplier()
    }

    /// A second, independent store on the same data, for what another connection set on the same files sees.
    /// Opened without the data directory's lock (which the first store holds: a second daemon is refused).
    /// Waits for the applier first (`settle`): SQLite's files then hold every group acknowledged so far.
    func openSecond() throws -> any DocumentStore {
        try settle()
        return try StoreFixture.open(backend, directory: directory, schema: schema, retention: retention, lockingDirectory: false)
    }

    func finish() {
        store.close()
        StoreFixture.removeTemporaryDirectory(directory)
        if backend == .postgres, let dsn = try? PostgresTestCluster.dsn() {
            try? PostgresStore.dropSchema(dsn: dsn, schema: schema)
        }
    }

    static func open(_ backend: Backend, directory: String, schema: String, retention: RetentionPolicy,
                     lockingDirectory: Bool = true) throws -> any DocumentStore {
        switch backend {
        case .memory: return MemoryStore(retention: retention)
        case .postgres: return try PostgresStore(dsn: PostgresTestCluster.dsn(), schema: schema, retention: retention, lockingSchema: lockingDirectory)
        case .sqlite: return try SQLiteStore(directory: directory, retention: retention, lockingDirectory: lockingDirectory)
        case .sqliteLagging:
            let store = try SQLiteStore(directory: directory, retention: retention, lockingDirectory: lockingDirectory)
            store.holdApplier(lagGroups)
            return store
        }
    }

    /// The groups the lagging backend keeps out of SQLite.
    static let lagGroups = 3

    /// `SQLiteStore(directory:)` with the directory's lock.
    static func openSQLite(_ directory: String, logResetBytes: Int = SQLiteStore.defaultLogResetBytes) throws -> SQLiteStore {
        try SQLiteStore(directory: directory, lockingDirectory: true, logResetBytes: logResetBytes)
    }

    /// A path under the temp dir that does not exist yet (the store must create it): `hearth-storage-<UUID>/data`.
    static func makeTemporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hearth-storage-\(UUID().uuidString)/data").path
    }

    /// Removes a directory made by `makeTemporaryDirectory`, with its `hearth-storage-<UUID>` parent.
    static func removeTemporaryDirectory(_ directory: String) {
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: directory).deletingLastPathComponent().path)
    }
}

/// Builds realistic commits: tracks the current documents so that every mutation carries the right `before`
/// image, creation times survive updates, and seqs and commit times ascend.
struct History {
    private(set) var documents: [DocumentPath: StoredDocument] = [:]
    private(set) var seq: UInt64 = 0
    /// The commit time of the next commit; advanced by 1 ms per commit unless a time is given.
    var clock: Int64 = 1_767_225_600_000_000  // 2026-01-01T00:00:00Z

    init(startingAfter seq: UInt64 = 0) { self.seq = seq }

    /// A commit writing `data` at each path (nil deletes) and making `index` changes, at `time` (or the
    /// running clock).
    mutating func commit(_ writes: [(String, [UInt8]?)], index: IndexChanges = IndexChanges(), at time: Int64? = nil) -> CommitRecord {
        seq += 1
        let now = time ?? clock
        clock = max(clock, now) + 1000
        var mutations: [Mutation] = []
        for (text, data) in writes {
            let path = try! DocumentPath(parsing: text)
            let before = documents[path]
            let after = data.map {
                StoredDocument(path: path, data: $0, createTime: before?.createTime ?? Timestamp(micros: now),
                               updateTime: Timestamp(micros: now), seq: seq)
            }
            documents[path] = after
            mutations.append(Mutation(path: path, before: before, after: after))
        }
        return CommitRecord(seq: seq, commitTime: Timestamp(micros: now), mutations: mutations, indexChanges: index)
    }

    /// A commit making index changes only (how the engine backfills a new index).
    mutating func index(removing removed: [IndexEntry] = [], adding added: [IndexEntry] = []) -> CommitRecord {
        commit([], index: IndexChanges(removed: removed, added: added))
    }

    /// A commit writing one document.
    mutating func put(_ path: String, _ data: [UInt8], at time: Int64? = nil) -> CommitRecord {
        commit([(path, data)], at: time)
    }

    /// A commit deleting one document.
    mutating func delete(_ path: String) -> CommitRecord {
        commit([(path, nil)])
    }
}

func path(_ text: String) -> DocumentPath { try! DocumentPath(parsing: text) }
func entry(_ key: [UInt8], _ text: String) -> IndexEntry { IndexEntry(key: key, path: path(text)) }
func collection(_ text: String) -> CollectionPath { try! CollectionPath(parsing: text) }
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The IDs of `docs` as byte arrays (Swift's `String ==` would equate "é" and "e\u{301}").
func idBytes(_ docs: [StoredDocument]) -> [[UInt8]] { docs.map { Array($0.path.id.utf8) } }

extension CommitRecord {
    /// The record as the change log returns it: index changes are not logged.
    var logged: CommitRecord {
        var c = self
        c.indexChanges = IndexChanges()
        c.request = nil
        return c
    }
}

/// Runs `body` and returns the HearthError it threw, or nil.
func thrownError(_ body: () throws(HearthError) -> Void) -> HearthError? {
    do { try body() } catch { return error }
    return nil
}

/// A well-formed commit putting `text` at `seq` (for checks that a seq is refused).
func commitAt(seq: UInt64, putting text: String) -> CommitRecord {
    let doc = StoredDocument(path: path(text), data: bytes("stale"), createTime: Timestamp(micros: 1),
                             updateTime: Timestamp(micros: 1), seq: seq)
    return CommitRecord(seq: seq, commitTime: Timestamp(micros: 1), mutations: [Mutation(path: doc.path, before: nil, after: doc)])
}
