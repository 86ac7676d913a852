import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite

/// A store as the version-1 schema (before secondary indexes) left it, to test the migration to the current
/// version. `create` is a frozen copy of version 1's `SQLiteSchema.create`: never edit it.
enum SchemaV1Fixture {
    static let create = """
        CREATE TABLE documents (
            collection TEXT NOT NULL COLLATE BINARY,  -- parent collection path, e.g. users/u1/user-feed
            id         TEXT NOT NULL COLLATE BINARY,  -- document ID; BINARY = UTF-8 byte order
            data       BLOB NOT NULL,                 -- fields, as encoded by the engine's DocumentCodec
            create_us  INTEGER NOT NULL,
            update_us  INTEGER NOT NULL,
            seq        INTEGER NOT NULL               -- the commit that last changed the document
        );
        CREATE UNIQUE INDEX documents_by_key ON documents (collection, id);

        CREATE TABLE commits (
            seq        INTEGER PRIMARY KEY,           -- strictly increasing across the database
            commit_us  INTEGER NOT NULL,
            bytes      INTEGER NOT NULL               -- image bytes this commit holds in the log
        );

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
            after_seq        INTEGER
        );
        CREATE INDEX changes_by_seq ON changes (seq);

        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES
            ('schema_version', 1),
            ('last_seq', 0),          -- highest seq applied; never decreases
            ('pruned_through', 0),    -- highest seq pruned from the log (0: none)
            ('log_bytes', 0);         -- sum of commits.bytes
        PRAGMA application_id = 1215460456;
        """

    /// The document the fixture holds: `c/a`, written by commit 1.
    static let document = StoredDocument(path: path("c/a"), data: bytes("aa"), createTime: Timestamp(micros: 1000),
                                         updateTime: Timestamp(micros: 1000), seq: 1)

    /// Writes `<directory>/hearth.db` with the version-1 schema, in WAL mode, holding `document` and its commit
    /// (rows exactly as a version-1 `SQLiteStore` wrote them).
    static func build(in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let db = try SQLiteConnection(path: directory + "/hearth.db", role: "v1 fixture", create: true)
        defer { db.close() }
        _ = try db.queryColumn("PRAGMA journal_mode = WAL")
        try db.exec(create, "creating the version-1 schema")
        try db.exec("""
            INSERT INTO documents (collection, id, data, create_us, update_us, seq) VALUES ('c', 'a', x'6161', 1000, 1000, 1);
            INSERT INTO commits (seq, commit_us, bytes) VALUES (1, 1000, 2);
            INSERT INTO changes (seq, path, after_data, after_create_us, after_update_us, after_seq)
                VALUES (1, 'c/a', x'6161', 1000, 1000, 1);
            UPDATE meta SET value = 1 WHERE key = 'last_seq';
            UPDATE meta SET value = 2 WHERE key = 'log_bytes';
            """, "filling the version-1 store")
    }

    /// The commit `build` stored, as `changes(after: 0)` returns it.
    static var commit: CommitRecord {
        CommitRecord(seq: 1, commitTime: Timestamp(micros: 1000), mutations: [Mutation(path: document.path, before: nil, after: document)])
    }
}
