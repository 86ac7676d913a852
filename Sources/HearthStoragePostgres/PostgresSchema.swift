import HearthModel
import HearthStorage

/// The tables of a Hearth database in PostgreSQL, in one schema of its own (docs/storage.md, "PostgreSQL",
/// explains every column). Paths and IDs are `bytea`: PostgreSQL compares bytea by memcmp (shorter first on a
/// common prefix), which is the UTF-8 byte order every backend lists in, and `text` could neither hold every
/// ID nor escape the database's collation. Index keys are the engine's `IndexKey` bytes for the same reason;
/// documents are the codec's opaque bytes (jsonb would reorder keys and drop `3.0`).
package enum PostgresSchema {
    /// Bumped whenever the layout changes; a newer version refuses to open, an older one is migrated at open.
    static let version: Int64 = 3

    /// Commits by request ID (version 3), for a retried write.
    static let requestsIndex = "CREATE INDEX IF NOT EXISTS hearth_commits_by_request ON hearth_commits (request_id) WHERE request_id IS NOT NULL;"

    /// The committer's lease (added in version 2; `ClusterStore`).
    static let leaseTable = """
        CREATE TABLE IF NOT EXISTS hearth_lease (
            id          int PRIMARY KEY CHECK (id = 1),      -- one row, absent until a node is first elected
            term        bigint NOT NULL,                     -- every election adds one
            committer   text NOT NULL,                       -- the committer's --node-name
            address     text,                                -- its --advertise HOST:PORT (NULL: not reachable)
            lease_until timestamptz NOT NULL,                -- PostgreSQL's clock; renewed by the committer
            pid         int8 NOT NULL                        -- the backend of its session (holding the writer lock)
        );
        """

    /// The fence: a group's first statement locks the meta row and refuses the group unless `last_seq` is the one
    /// the writer last committed (SQLSTATE HR001).
    static let fenceFunction = """
        -- A group's first statement: locks the meta row and refuses the group unless last_seq is the one the
        -- writer last committed (a group built on another history changes nothing).
        CREATE OR REPLACE FUNCTION hearth_fence(expected bigint) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM hearth_meta WHERE id = 1 AND last_seq = expected FOR UPDATE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'the stored last seq is not %: another writer committed', expected USING ERRCODE = 'HR001';
            END IF;
        END $$;
        """

    /// Creates every table of the current version (run once, in the transaction that creates the store).
    package static let create = """
        CREATE TABLE hearth_meta (
            id             int PRIMARY KEY CHECK (id = 1),   -- one row
            schema_version bigint NOT NULL,
            history_id     bigint NOT NULL,                  -- random, positive, created with the store
            last_seq       bigint NOT NULL,                  -- highest seq committed; never decreases
            last_commit_us bigint NOT NULL,                  -- commit time of last_seq
            pruned_through bigint NOT NULL,                  -- highest seq pruned from the change log (0: none)
            log_bytes      bigint NOT NULL                   -- sum of hearth_commits.bytes
        );
        CREATE TABLE hearth_documents (
            parent    bytea NOT NULL,                        -- parent collection path, e.g. users/u1/feed
            id        bytea NOT NULL,                        -- document ID (UTF-8)
            data      bytea NOT NULL,                        -- fields, as encoded by the engine's DocumentCodec
            create_us bigint NOT NULL,
            update_us bigint NOT NULL,
            seq       bigint NOT NULL,                       -- the commit that last changed the document
            PRIMARY KEY (parent, id)
        );
        CREATE TABLE hearth_index_entries (
            key    bytea PRIMARY KEY,                        -- built by the engine: unique, ordered by bytes
            parent bytea NOT NULL,                           -- the document it points at
            id     bytea NOT NULL
        );
        CREATE TABLE hearth_commits (
            seq       bigint PRIMARY KEY,                    -- strictly increasing across the database
            commit_us bigint NOT NULL,
            bytes     bigint NOT NULL,                       -- image bytes this commit holds in the log
            request_id     text,                             -- the client's requestId for the write (version 3)
            request_answer bytea                             -- and its answer, as the engine encoded it
        );
        \(requestsIndex)
        CREATE TABLE hearth_changes (
            seq              bigint NOT NULL,                -- hearth_commits.seq
            ord              int NOT NULL,                   -- order within the commit
            path             bytea NOT NULL,                 -- the document's full path
            before_data      bytea,                          -- before_*: all NULL when the document did not exist
            before_create_us bigint,
            before_update_us bigint,
            before_seq       bigint,
            after_data       bytea,                          -- after_*: all NULL when the commit deleted it
            after_create_us  bigint,
            after_update_us  bigint,
            after_seq        bigint,
            PRIMARY KEY (seq, ord)
        );
        CREATE TABLE hearth_index_catalog (
            id   int PRIMARY KEY CHECK (id = 1),             -- one row, absent until a commit carries a catalog
            data bytea NOT NULL,                             -- the engine's declared composite indexes, opaque here
            seq  bigint NOT NULL                             -- the commit that stored it
        );
        \(leaseTable)
        \(fenceFunction)
        """

    /// What a node knows of the store it served in a schema before (`PostgresStoreRecords`): its history ID,
    /// the database's name and the file that recorded them, for the refusal's words.
    struct Expected {
        let history: UInt64
        let database: String
        let recordedIn: String
    }

    /// Creates the schema and its tables when missing, or checks (and migrates) them, under an advisory lock so
    /// that nodes starting together create it once; returns the store's history ID.
    ///
    /// With `expected` (this node served a store here before) nothing is created: a schema that is missing,
    /// holds no Hearth tables or holds another history is refused with DATA_LOSS, as the store was lost.
    @discardableResult
    static func prepare(_ c: PGConnection, schema: String, expected: Expected? = nil) throws(HearthError) -> UInt64 {
        let quoted = PGConnection.quoteIdentifier(schema)
        try c.exec("BEGIN", "starting the schema check")
        c.pin()   // every statement below in this transaction, or none
        defer { c.unpin() }
        do throws(HearthError) {
            // One lock per schema name, held to the end of this transaction.
            try c.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7411))", [.string(schema)], "locking the schema")
            // CREATE SCHEMA IF NOT EXISTS needs the database's CREATE privilege even when the schema exists:
            // an operator may have created it and granted it to a role that has no such privilege.
            let exists = try c.query("SELECT count(*) FROM pg_namespace WHERE nspname = $1", [.string(schema)], "looking for schema \(schema)")
            if exists.int64(0, 0) == 0 {
                if let expected { throw lost(schema, expected, found: "is missing: it was dropped or renamed") }
                try c.exec("CREATE SCHEMA \(quoted)", "creating schema \(schema)")
            }
            let tables = try c.query("SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'hearth_meta'",
                                     [.string(schema)], "looking for hearth_meta")
            let history: UInt64
            if tables.int64(0, 0) == 0 {
                if let expected { throw lost(schema, expected, found: "has no Hearth tables: they were dropped") }
                try c.exec(create, "creating the tables")
                let made = Int64.random(in: 1...Int64.max)
                try c.query("INSERT INTO hearth_meta VALUES (1, $1, $2, 0, 0, 0, 0)", [.int8(version), .int8(made)], "creating the meta row")
                history = UInt64(made)
            } else {
                let found = try c.query("SELECT schema_version, history_id FROM hearth_meta WHERE id = 1", [], "reading the schema version")
                guard found.count == 1 else {
                    throw HearthError(.internal, "storage: schema \(schema) has a hearth_meta table without its row; it is not a Hearth store")
                }
                history = UInt64(bitPattern: found.int64(0, 1))
                if let expected, expected.history != history {
                    throw lost(schema, expected, found: "holds another store (history \(history)): it was dropped and made again")
                }
                let v = found.int64(0, 0)
                if v > version {
                    throw HearthError(.internal, "storage: schema \(schema) has schema version \(v), written by a newer Hearth; this build reads version \(version) (upgrade hearthd)")
                }
                guard v >= 1 else {
                    throw HearthError(.internal, "storage: schema \(schema) has schema version \(v), which this build cannot migrate")
                }
                if v < 2 {
                    // Version 2 adds the committer's lease.
                    try c.exec(leaseTable, "adding hearth_lease")
                }
                if v == 2 {
                    try c.exec("ALTER TABLE hearth_lease ADD COLUMN IF NOT EXISTS pid int8 NOT NULL DEFAULT 0", "adding the lease's pid")
                }
                if v < 3 {
                    // Version 3 keeps each commit's request ID and answer.
                    try c.exec("""
                        ALTER TABLE hearth_commits ADD COLUMN IF NOT EXISTS request_id text, ADD COLUMN IF NOT EXISTS request_answer bytea;
                        \(requestsIndex)
                        """, "adding request IDs to hearth_commits")
                }
                if v < version {
                    try c.query("UPDATE hearth_meta SET schema_version = $1 WHERE id = 1", [.int8(version)], "recording schema version \(version)")
                }
                // The fence function as this build defines it (stores made before it existed gain it).
                try c.exec(fenceFunction, "defining hearth_fence")
            }
            try c.exec("COMMIT", "committing the schema")
            return history
        } catch {
            c.rollBack()
            throw error
        }
    }

    /// The refusal to open a schema whose store this node served and which is no longer there.
    static func lost(_ schema: String, _ expected: Expected, found: String) -> HearthError {
        HearthError(.dataLoss, "storage: schema \(schema) of database \(expected.database) \(found); this node served the store there before (history \(expected.history), recorded in \(expected.recordedIn)), whose documents are not there. Nothing was created. Restore the schema (pg_restore of a pg_dump --schema=\(schema)) or name where it went (--postgres-schema); to start a new, empty store in its place, remove its line from \(expected.recordedIn)")
    }
}
