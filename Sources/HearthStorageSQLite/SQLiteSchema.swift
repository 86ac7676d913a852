import HearthModel
import HearthStorage

/// The database layout (docs/storage.md explains every table) and the per-connection settings.
package enum SQLiteSchema {
    /// Bumped whenever the layout changes; a store written by a newer version refuses to open, an older one is
    /// migrated in place at open (`migrations`).
    package static let version: Int64 = 6

    /// `PRAGMA application_id`: "Hrth", so tools (and `open`) can tell a Hearth store from other SQLite files.
    static let applicationID: Int64 = 0x4872_7468

    /// The documents table (version 4: with its checksum) and its key. Shared by `create` and the migration from
    /// version 3, so a migrated store has exactly a new one's layout.
    static let documentsTable = """
        CREATE TABLE documents (
            collection TEXT NOT NULL COLLATE BINARY,  -- parent collection path, e.g. users/u1/user-feed
            id         TEXT NOT NULL COLLATE BINARY,  -- document ID; BINARY = UTF-8 byte order
            data       BLOB NOT NULL,                 -- fields, as encoded by the engine's DocumentCodec
            create_us  INTEGER NOT NULL,
            update_us  INTEGER NOT NULL,
            seq        INTEGER NOT NULL,              -- the commit that last changed the document
            checksum   INTEGER NOT NULL               -- XXH3-64 of the columns above (see Checksums)
        );
        """
    static let documentsKey = "CREATE UNIQUE INDEX documents_by_key ON documents (collection, id);"

    /// The change log's mutations table (version 4: with its checksum; version 6: keyed by seq, without an
    /// index of its own).
    static let changesTable = """
        CREATE TABLE changes (
            id               INTEGER PRIMARY KEY,     -- (seq << 20) + the mutation's place in its commit
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
        """
    /// The seq index of versions 1 to 5 (version 6 finds a seq's rows by their ids, `changeID`).
    static let changesBySeq = "CREATE INDEX changes_by_seq ON changes (seq);"

    /// A change-log row's id: its commit's seq shifted left by `changeIDShift`, plus its place among the
    /// commit's mutations, so the rows of seqs (a, b] are the ids [changeID(a + 1, 0), changeID(b + 1, 0)) and
    /// need no index. A commit holds at most `Limits.maxWritesPerCommit` mutations, far below 2^20.
    static let changeIDShift: UInt64 = 20
    static func changeID(seq: UInt64, order: Int) -> Int64 {
        Int64(bitPattern: (seq << changeIDShift) | UInt64(order))
    }
    /// The first id past every row of seqs up to `seq`.
    static func changeIDs(after seq: UInt64) -> Int64 { changeID(seq: seq + 1, order: 0) }
    /// Mutations one commit may log (ids of two seqs never meet).
    static let maxChangesPerCommit = 1 << Int(changeIDShift)
    /// The largest seq whose change rows can be keyed (`changeIDs(after:)` of it still fits an Int64): 2^43 - 2,
    /// a thousand commits a second for 278 years.
    static let maxSeq = (UInt64(Int64.max) >> changeIDShift) - 1

    /// DATA_LOSS when a change row's id (not under its checksum) does not name its checksummed seq; nil when it
    /// does. Every reader of the change log takes a row only when this is nil.
    static func changeIDDamage(id: Int64, seq: UInt64, path: String) -> HearthError? {
        UInt64(bitPattern: id) >> changeIDShift == seq ? nil
            : StorageDamage.change(seq: seq, path: path, "its row id \(id) is not of seq \(seq)")
    }

    /// Refuses commits whose change rows could not be keyed (`changeID`): a seq above `maxSeq`, or more
    /// mutations than one seq's ids hold. Checked before a group is acknowledged (the commit log's frame) and
    /// before a store without a log writes it.
    static func checkKeyable(_ commits: [CommitRecord]) throws(HearthError) {
        for c in commits {
            guard c.seq <= maxSeq else {
                throw HearthError(.resourceExhausted, "storage: commit seq \(c.seq) is above the largest seq this store keys (\(maxSeq))")
            }
            guard c.mutations.count <= maxChangesPerCommit else {
                throw HearthError(.resourceExhausted, "storage: commit \(c.seq) holds \(c.mutations.count) mutations, more than the change log keys per commit (\(maxChangesPerCommit))")
            }
        }
    }

    /// The secondary-index table, new in version 2 (created by `create` and by the migration from version 1).
    /// Keys are opaque blobs ordered by memcmp; `(collection, id)` names the document, as in `documents`.
    static let indexTable = """
        CREATE TABLE index_entries (
            key        BLOB NOT NULL PRIMARY KEY,     -- built by the engine: unique, ordered by bytes (memcmp)
            collection TEXT NOT NULL COLLATE BINARY,  -- the document the entry points at,
            id         TEXT NOT NULL COLLATE BINARY   -- as documents (collection, id)
        ) WITHOUT ROWID;
        """

    /// The index catalog, new in version 4: one row, replaced by each commit that carries a catalog.
    static let catalogTable = """
        CREATE TABLE index_catalog (
            id         INTEGER PRIMARY KEY CHECK (id = 1),  -- one row, absent until a commit carries a catalog
            data       BLOB NOT NULL,                 -- the engine's declared composite indexes, opaque here
            seq        INTEGER NOT NULL,              -- the commit that stored it
            checksum   INTEGER NOT NULL               -- XXH3-64 of data and seq
        );
        """

    /// Creates every table of the current version (run once, in the transaction that creates the store).
    /// docs/storage.md shows it; a test keeps the two equal.
    package static let create = """
        \(documentsTable)
        \(documentsKey)

        \(commitsTable)
        \(requestsIndex)

        \(changesTable)

        \(indexTable)

        \(catalogTable)

        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES
            ('schema_version', \(version)),
            ('last_seq', 0),          -- highest seq applied; never decreases
            ('pruned_through', 0),    -- highest seq pruned from the log (0: none)
            ('log_bytes', 0),         -- sum of commits.bytes
            ('history_id', \(newHistoryID));  -- this store's history, created with it (never changes)
        PRAGMA application_id = \(applicationID);
        """

    /// Version 3 → 4: every document and change-log row gains its checksum, computed from the row as it is
    /// (`hearth_checksum`), and the index catalog table appears. SQLite cannot add a NOT NULL column without a
    /// default, so each table is rebuilt under its own name (rows keep their rowids) and its index recreated.
    static let checksumMigration = """
        ALTER TABLE documents RENAME TO documents_v3;
        DROP INDEX documents_by_key;
        \(documentsTable)
        INSERT INTO documents (rowid, collection, id, data, create_us, update_us, seq, checksum)
            SELECT rowid, collection, id, data, create_us, update_us, seq,
                   hearth_checksum(collection, id, data, create_us, update_us, seq)
            FROM documents_v3;
        DROP TABLE documents_v3;
        \(documentsKey)
        ALTER TABLE changes RENAME TO changes_v3;
        DROP INDEX changes_by_seq;
        \(changesTable)
        INSERT INTO changes (id, seq, path, before_data, before_create_us, before_update_us, before_seq,
                             after_data, after_create_us, after_update_us, after_seq, checksum)
            SELECT id, seq, path, before_data, before_create_us, before_update_us, before_seq,
                   after_data, after_create_us, after_update_us, after_seq,
                   hearth_checksum(seq, path, before_data, before_create_us, before_update_us, before_seq,
                                   after_data, after_create_us, after_update_us, after_seq)
            FROM changes_v3;
        DROP TABLE changes_v3;
        \(changesBySeq)
        \(catalogTable)
        UPDATE meta SET value = 4 WHERE key = 'schema_version';
        """

    /// The change log's commits table (version 5: with each commit's request ID and answer). Shared by
    /// `create` and the migration from version 4.
    static let commitsTable = """
        CREATE TABLE commits (
            seq            INTEGER PRIMARY KEY,       -- strictly increasing across the database
            commit_us      INTEGER NOT NULL,
            bytes          INTEGER NOT NULL,          -- image bytes this commit holds in the log
            request_id     TEXT,                      -- the client's requestId for the write (NULL: none)
            request_answer BLOB                       -- and its answer, as the engine encoded it
        );
        """

    /// Commits by request ID (version 5), for a retried write.
    static let requestsIndex = "CREATE INDEX commits_by_request ON commits (request_id) WHERE request_id IS NOT NULL;"

    /// The step that migrates a store of version `v` to `v + 1`, run in the open transaction (so a failed
    /// migration changes nothing). Each step ends by recording its new version in `meta`.
    package static let migrations: [Int64: String] = [
        1: indexTable + "\nUPDATE meta SET value = 2 WHERE key = 'schema_version';",
        // A history for an existing store: resume tokens given out before the upgrade carry none.
        2: "INSERT INTO meta (key, value) VALUES ('history_id', \(newHistoryID));\nUPDATE meta SET value = 3 WHERE key = 'schema_version';",
        3: checksumMigration,
        // Rebuilt rather than altered, so a migrated store's schema is exactly a new one's.
        4: """
            ALTER TABLE commits RENAME TO commits_v4;
            \(commitsTable)
            INSERT INTO commits (seq, commit_us, bytes) SELECT seq, commit_us, bytes FROM commits_v4;
            DROP TABLE commits_v4;
            \(requestsIndex)
            UPDATE meta SET value = 5 WHERE key = 'schema_version';
            """,
        // Each change row takes the id of its seq and place (`changeID`), and the seq index goes.
        // The old table keeps its seq index until it is dropped, so the copy walks it in order (no sort).
        5: """
            ALTER TABLE changes RENAME TO changes_v5;
            \(changesTable)
            INSERT INTO changes (id, seq, path, before_data, before_create_us, before_update_us, before_seq,
                                 after_data, after_create_us, after_update_us, after_seq, checksum)
                SELECT (seq << \(changeIDShift)) + row_number() OVER (PARTITION BY seq ORDER BY id) - 1,
                       seq, path, before_data, before_create_us, before_update_us, before_seq,
                       after_data, after_create_us, after_update_us, after_seq, checksum
                FROM changes_v5;
            DROP TABLE changes_v5;
            UPDATE meta SET value = 6 WHERE key = 'schema_version';
            """,
    ]

    /// SQL for a new, random, positive history ID (SQLite's `random()` draws from the OS's randomness).
    static let newHistoryID = "(random() & 9223372036854775807) | 1"

    /// Settings of the writer connection (the reasons are in docs/storage.md).
    static let writerPragmas = """
        PRAGMA synchronous = NORMAL;
        PRAGMA cache_size = -131072;
        PRAGMA temp_store = MEMORY;
        PRAGMA journal_size_limit = 67108864;
        """

    /// Settings of the reader connection.
    static let readerPragmas = """
        PRAGMA cache_size = -32768;
        PRAGMA temp_store = MEMORY;
        PRAGMA mmap_size = 8589934592;
        PRAGMA query_only = 1;
        """

    /// How long a connection waits for a lock held by another connection before reporting SQLITE_BUSY.
    static let busyTimeoutMillis: Int32 = 5000

    /// Sets the writer up and creates or checks the schema. Run once at open, on the writer connection, before
    /// the reader opens.
    ///
    /// `refusingEmpty` is the reason an empty database (no schema: a new file, or one that lost its contents)
    /// must not become a new store here; it is thrown before anything is written. Nil: one is created.
    static func prepare(writer: SQLiteConnection, path: String, refusingEmpty: HearthError? = nil) throws(HearthError) {
        if let refusingEmpty, try writer.queryInt("SELECT count(*) FROM sqlite_schema") == 0 { throw refusingEmpty }
        try writer.exec(writerPragmas, "setting pragmas")
        let mode = try writer.queryText("PRAGMA journal_mode = WAL")
        guard mode?.lowercased() == "wal" else {
            throw HearthError(.unavailable, "storage: \(path) cannot use WAL mode (journal_mode is \(mode ?? "unknown"))")
        }
        try writer.exec("BEGIN IMMEDIATE", "starting the schema check")
        do {
            try createOrCheck(writer, path: path)
            try writer.exec("COMMIT", "committing the schema")
        } catch {
            if writer.inTransaction { try? writer.exec("ROLLBACK", "rolling back the schema check") }
            throw error
        }
    }

    private static func createOrCheck(_ db: SQLiteConnection, path: String) throws(HearthError) {
        let objects = try db.queryInt("SELECT count(*) FROM sqlite_schema")
        if objects == 0 {
            try db.exec(create, "creating the schema")
            return
        }
        let app = try db.queryInt("PRAGMA application_id")
        let hasMeta = try db.queryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'") == 1
        guard app == applicationID, hasMeta else {
            throw HearthError(.internal, "storage: \(path) is an SQLite database but not a Hearth store (application_id \(app))")
        }
        var found = try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'")
        if found > version {
            throw HearthError(.internal, "storage: \(path) has schema version \(found), written by a newer Hearth; this build reads version \(version) (upgrade hearthd, or restore a backup)")
        }
        // Older stores are migrated in place, one version at a time, inside this open transaction.
        while found < version, let step = migrations[found] {
            try db.exec(step, "migrating the schema from version \(found) to \(found + 1)")
            let next = try db.queryInt("SELECT value FROM meta WHERE key = 'schema_version'")
            guard next == found + 1 else {
                throw HearthError(.internal, "storage: \(path): the migration from schema version \(found) left version \(next)")
            }
            found = next
        }
        guard found == version else {
            throw HearthError(.internal, "storage: \(path) has unknown schema version \(found) (this build reads version \(version))")
        }
    }

    /// Sets the reader up. Run once at open.
    static func prepare(reader: SQLiteConnection) throws(HearthError) {
        try reader.exec(readerPragmas, "setting pragmas")
    }
}
