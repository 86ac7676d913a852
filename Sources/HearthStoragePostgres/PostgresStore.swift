import HearthModel
import HearthStorage

/// The store kept in PostgreSQL (docs/storage.md, "PostgreSQL"): the same tables as the embedded store, in a
/// schema of their own, reached through libpq.
///
/// Connections: one for reads (the loop thread's point reads and listings, each statement one consistent
/// state), one for the writer (`apply`, one transaction per group, fenced on the meta row), and a pool for
/// snapshots (each a REPEATABLE READ READ ONLY transaction whose first statement reads `last_seq`, so every
/// read in it is exact at that seq). A connection that PostgreSQL drops is reopened on its next use; what
/// ran on it meanwhile fails with UNAVAILABLE.
///
/// Durability: `apply` returns after PostgreSQL's COMMIT, with `synchronous_commit` on for the writer's
/// session (flushed to PostgreSQL's WAL, and to synchronous standbys where the cluster has them). A COMMIT
/// whose answer is lost is resolved by reading `last_seq` back; when that cannot be done the store refuses
/// further writes until it is reopened (it cannot know which history the engine must continue).
public final class PostgresStore: ClusterStore, StoreAdministration, @unchecked Sendable {
    /// The schema used when none is named.
    public static let defaultSchema = "hearth"

    public let schema: String
    private let dsn: String
    private let setup: String
    private let reader: Locked<PGConnection?>
    private let writer: Locked<PostgresWriter?>
    /// Idle snapshot connections, reused by the next snapshot.
    private let idle = Locked<(closed: Bool, pool: [PGConnection])>((false, []))
    private let state = Locked<Bool>(false)   // closed
    /// Snapshot connections kept open while idle.
    static let idleSnapshots = 8

    /// Connects to the database named by the libpq connection string `dsn` (also a `postgresql://` URI) and
    /// creates the tables in `schema` when missing, or checks them. Takes the schema's writer lock (one hearthd
    /// writes to a schema at a time; UNAVAILABLE naming the schema when another holds it), or, without
    /// `lockingSchema` (a second store opened to read what the first wrote), only when it first writes.
    ///
    /// With `clustered` the store is one node's of several (`ClusterStore`): it writes only while it is the
    /// elected committer (`campaign`), and never takes the lock on its own.
    ///
    /// With `records` (the node's data directory, `PostgresStoreRecords`), a schema where this node served a
    /// store before must still hold that store: missing, emptied or made again, it is refused with DATA_LOSS
    /// and nothing is created. A store opened for the first time is recorded there.
    public convenience init(dsn: String, schema: String = PostgresStore.defaultSchema, retention: RetentionPolicy = .default,
                            lockingSchema: Bool = true, clustered: Bool = false, records: PostgresStoreRecords? = nil) throws(HearthError) {
        try self.init(dsn: dsn, schema: schema, retention: retention, lockingSchema: lockingSchema && !clustered,
                      retentionPageSize: PostgresWriter.defaultPageSize, clustered: clustered, records: records)
    }

    /// Tests: `retentionPageSize` is how many of the oldest commits the writer reads at a time to prune from
    /// (`PostgresWriter`); a small one makes pruning cross pages.
    package init(dsn: String, schema: String, retention: RetentionPolicy, lockingSchema: Bool,
                 retentionPageSize: Int, clustered: Bool = false, records: PostgresStoreRecords? = nil) throws(HearthError) {
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw HearthError(.invalidArgument, "storage: \"\(schema)\" is not a PostgreSQL schema name (1 to 63 bytes)")
        }
        self.dsn = dsn
        self.schema = schema
        // JIT off: every statement is a short indexed one, and a generic plan's estimates can make PostgreSQL
        // compile one for a few milliseconds on every execution.
        setup = "SET search_path TO \(PGConnection.quoteIdentifier(schema)); SET application_name TO 'hearthd'; SET client_min_messages TO warning; SET jit TO off"
        // A commit must be flushed before it is acknowledged: `synchronous_commit` is raised to `on` when the
        // role or database lowered it (`off`, `local`), and a stronger setting (`remote_apply`…) is kept.
        let w = try PGConnection(dsn: dsn, role: "writer", setup: setup + "; SELECT set_config('synchronous_commit', 'on', false) WHERE current_setting('synchronous_commit') IN ('off', 'local')")
        if var records {
            let database = try w.query("SELECT current_database()", [], "reading the database's name").text(0, 0)
            let expected = records.history(database: database, schema: schema).map {
                PostgresSchema.Expected(history: $0, database: database, recordedIn: records.path)
            }
            let history = try PostgresSchema.prepare(w, schema: schema, expected: expected)
            try records.record(history: history, database: database, schema: schema)
        } else {
            try PostgresSchema.prepare(w, schema: schema)
        }
        writer = Locked(try PostgresWriter(connection: w, schema: schema, retention: retention, lockingNow: lockingSchema,
                                           clustered: clustered, pageSize: retentionPageSize))
        reader = Locked(try PGConnection(dsn: dsn, role: "reader", setup: setup + "; SET default_transaction_read_only TO on"))
    }

    deinit { close() }

    /// The server the store uses, without credentials (`host:port/dbname`), for logs.
    public var serverDescription: String { writer.withLock { $0?.serverDescription ?? "(closed)" } }

    /// The error a write meets once a COMMIT's outcome could not be learned.
    static func uncertain(_ seq: UInt64, _ cause: HearthError) -> HearthError {
        HearthError(.unavailable, "storage: PostgreSQL did not answer the COMMIT of seq \(seq), and whether it was applied cannot be learned (\(cause.message)); writes are refused until hearthd restarts")
    }

    // MARK: Reads

    private func read<R>(_ body: (PostgresReads) throws(HearthError) -> R) throws(HearthError) -> R {
        try reader.withLock { (c) throws(HearthError) -> R in
            guard let c else { throw CommitValidation.closed }
            return try body(PostgresReads(connection: c))
        }
    }

    public func lastSeq() throws(HearthError) -> UInt64 { try read { (r) throws(HearthError) in try r.lastSeq() } }

    public func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? { try read { (r) throws(HearthError) in try r.get(path) } }

    public func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        try read { (r) throws(HearthError) in try r.list(collection: collection, afterID: afterID, limit: limit) }
    }

    public func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try read { (r) throws(HearthError) in try r.scanIndex(from: lower, to: upper, reverse: reverse, limit: limit) }
    }

    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        // The entries are read in one statement before any is visited, so `visit` may call `get` (which takes
        // the reader again): read them first, then visit outside the lock.
        let entries = try read { (r) throws(HearthError) in
            var out: [IndexEntry] = []
            try r.visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit) { (e) throws(HearthError) in
                out.append(try e.entry())
                return true
            }
            return out
        }
        for e in entries { guard try e.withView(visit) else { return } }
    }

    public func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try read { (r) throws(HearthError) in try r.countIndex(from: lower, to: upper) }
    }

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try read { (r) throws(HearthError) in try r.changes(after: after, limit: limit) }
    }

    public var readsAreRemote: Bool { true }

    /// Statement by statement on a pooled connection, outside any transaction: one round trip per read.
    public func readLatest(_ paths: [DocumentPath], requestID: String?) throws(HearthError) -> LatestReads {
        if state.withLock({ $0 }) { throw CommitValidation.closed }
        let c = try pooledConnection()
        defer { release(c) }
        let r = PostgresReads(connection: c)
        var docs: [StoredDocument?] = []
        docs.reserveCapacity(paths.count)
        for p in paths { docs.append(try r.get(p)) }
        return LatestReads(documents: docs, request: try requestID.map { id throws(HearthError) in try r.committedRequest(id) } ?? nil)
    }

    public func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        try read { (r) throws(HearthError) in try r.committedRequest(id) }
    }

    public func oldestResumableSeq() throws(HearthError) -> UInt64 { try read { (r) throws(HearthError) in try r.oldestResumableSeq() } }
    public func historyID() throws(HearthError) -> UInt64 { try read { (r) throws(HearthError) in try r.historyID() } }
    public func indexCatalog() throws(HearthError) -> [UInt8]? { try read { (r) throws(HearthError) in try r.indexCatalog() } }

    // MARK: Writes

    public func apply(_ commits: [CommitRecord]) throws(HearthError) {
        guard !commits.isEmpty else {
            if state.withLock({ $0 }) { throw CommitValidation.closed }
            return
        }
        try writer.withLock { (w) throws(HearthError) in
            guard let w else { throw CommitValidation.closed }
            if let doubt = w.doubt { throw doubt }
            try w.apply(commits)
        }
    }

    // MARK: The committer's election (ClusterStore)

    private func withWriter<R>(_ body: (PostgresWriter) throws(HearthError) -> R) throws(HearthError) -> R {
        try writer.withLock { (w) throws(HearthError) -> R in
            guard let w else { throw CommitValidation.closed }
            return try body(w)
        }
    }

    public func campaign(_ node: ClusterNode, leaseMs: Int) throws(HearthError) -> CommitterLease {
        try withWriter { (w) throws(HearthError) in try w.campaign(node, leaseMs: leaseMs) }
    }

    public func renewLease(term: UInt64, leaseMs: Int) throws(HearthError) -> Bool {
        try withWriter { (w) throws(HearthError) in try w.renewLease(term: term, leaseMs: leaseMs) }
    }

    public func resign(term: UInt64) {
        _ = try? withWriter { (w) throws(HearthError) in w.resign(term: term) }
    }

    // MARK: Snapshots

    public func snapshot() throws(HearthError) -> any StoreSnapshot {
        if state.withLock({ $0 }) { throw CommitValidation.closed }
        let c = try pooledConnection()
        do throws(HearthError) {
            try c.exec("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", "starting a snapshot")
            c.pin()   // every read of the snapshot on this session, or none
            let seq = try PostgresReads(connection: c).lastSeq()
            return PostgresSnapshot(connection: c, seq: seq, store: self)
        } catch {
            c.unpin()
            c.rollBack()
            c.close()
            throw error
        }
    }

    /// An idle connection from the pool, or a new one.
    private func pooledConnection() throws(HearthError) -> PGConnection {
        if let pooled = idle.withLock({ $0.pool.popLast() }) { return pooled }
        return try PGConnection(dsn: dsn, role: "snapshot", setup: setup)
    }

    /// Runs `body` in a read-only transaction on a pooled connection: for reads that may take many statements
    /// (administration), kept off the reader connection the loop thread uses.
    private func readOffLoop<R>(_ body: (PostgresReads) throws(HearthError) -> R) throws(HearthError) -> R {
        let s = try snapshot()
        defer { s.close() }
        guard let snapshot = s as? PostgresSnapshot else { throw HearthError(.internal, "storage: not a PostgreSQL snapshot") }
        return try snapshot.withReads(body)
    }

    /// A commit feed on a connection of its own (see `CommitFeed`): every commit after a seq, whichever daemon
    /// wrote it, woken by the writer's NOTIFY and looking again every `recheck` seconds.
    public func feed(recheck: Double = 0.25) throws(HearthError) -> any CommitFeed {
        if state.withLock({ $0 }) { throw CommitValidation.closed }
        let c = try PGConnection(dsn: dsn, role: "feed", setup: setup)
        return PostgresCommitFeed(connection: c, channel: PostgresCommitFeed.channel(for: schema), recheck: recheck)
    }

    /// Takes back a snapshot's connection after its transaction ended.
    func release(_ c: PGConnection) {
        let keep = c.isIdle && idle.withLock { (idle) -> Bool in
            guard !idle.closed, idle.pool.count < Self.idleSnapshots else { return false }
            idle.pool.append(c)
            return true
        }
        if !keep { c.close() }
    }

    // MARK: Administration

    public func collectionIDs(under parent: DocumentPath?) throws(HearthError) -> [String] {
        let prefix = parent.map { $0.description + "/" } ?? ""
        return try readOffLoop { (r) throws(HearthError) in
            try CollectionIDWalk.ids(prefix: prefix) { (cursor, strictly) throws(HearthError) -> String? in
                let rows = try r.connection.query("""
                    SELECT parent FROM hearth_documents WHERE parent \(strictly ? ">" : ">=") $1 ORDER BY parent LIMIT 1
                    """, [.utf8(cursor)], "listing collection IDs")
                guard rows.count == 1 else { return nil }
                let found = rows.text(0, 0)
                return found.utf8.starts(with: prefix.utf8) ? found : nil
            }
        }
    }

    public func documentPaths(under root: ResourcePath, limit: Int) throws(HearthError) -> [DocumentPath] {
        guard limit > 0 else { return [] }
        let top = root.description
        return try readOffLoop { (r) throws(HearthError) in
            // Two ordered range scans of the primary key, each at most `limit` rows, merged: the root's own
            // documents (a collection's, or the document itself), then every collection below it ("0" follows
            // "/"). An OR of the two would read and sort the whole subtree for every page.
            var params: [PGValue] = [PostgresReads.limit(limit), .utf8(top + "/"), .utf8(top + "0")]
            let own: String
            if root.count % 2 == 1 {
                own = "parent = $4"
                params.append(.utf8(top))
            } else {
                let doc = try DocumentPath(root)
                own = "parent = $4 AND id = $5"
                params.append(.utf8(doc.collectionDescription)); params.append(.utf8(doc.id))
            }
            let rows = try r.connection.query("""
                SELECT parent, id FROM (
                    (SELECT parent, id FROM hearth_documents WHERE \(own) ORDER BY parent, id LIMIT $1)
                    UNION ALL
                    (SELECT parent, id FROM hearth_documents WHERE parent >= $2 AND parent < $3 ORDER BY parent, id LIMIT $1)
                ) AS subtree ORDER BY parent, id LIMIT $1
                """, params, "listing the documents under \(top)")
            return try (0..<rows.count).map { (i) throws(HearthError) in try PostgresReads.storedPath(rows.text(i, 0), rows.text(i, 1)) }
        }
    }

    public func bytesOnDisk() -> Int64 {
        (try? readOffLoop { (r) throws(HearthError) in
            let rows = try r.connection.query("""
                SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8 FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'
                """, [.string(schema)], "measuring the tables")
            return rows.int64(0, 0)
        }) ?? 0
    }

    public func compact() throws(HearthError) -> CompactionResult {
        throw HearthError(.unimplemented, "storage: compaction of a PostgreSQL store is PostgreSQL's autovacuum (or VACUUM FULL run by its operator)")
    }

    public func backup(to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult {
        throw HearthError(.unimplemented, "storage: a PostgreSQL store is backed up with PostgreSQL's own tools (pg_dump --schema, or base backups and WAL archiving)")
    }

    // MARK: Lifetime

    public func close() {
        let first = state.withLock { (closed) -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        writer.withLock { w in   // waits for a running apply
            w?.close()
            w = nil
        }
        reader.withLock { c in
            c?.close()
            c = nil
        }
        for c in idle.withLock({ (idle) -> [PGConnection] in
            idle.closed = true
            defer { idle.pool = [] }
            return idle.pool
        }) { c.close() }
    }

    /// Drops `schema` and everything in it (tests and operators removing a store). The store must be closed.
    public static func dropSchema(dsn: String, schema: String) throws(HearthError) {
        let c = try PGConnection(dsn: dsn, role: "admin", setup: "")
        defer { c.close() }
        try c.exec("DROP SCHEMA IF EXISTS \(PGConnection.quoteIdentifier(schema)) CASCADE", "dropping schema \(schema)")
    }
}
