import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthTesting
import Testing

/// The PostgreSQL writer's guards: the fence (both directions) and a session cut under it.
@Suite struct PostgresWriterTests {
    /// Ends the session of the store's writer (the one holding the schema's advisory lock) from outside, as a
    /// PostgreSQL restart, a proxy or an idle timeout would.
    static func cutWriterSession(_ f: StoreFixture) throws {
        try PostgresTestCluster.exec(schema: f.schema, """
            SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
              AND objid = (hashtextextended('\(f.schema)', 7412) & 4294967295)::oid
            """)
    }

    /// The writer sends a group in one round trip, trusting the meta row it last committed; the fence refuses
    /// the group when the stored `last_seq` moved behind its back, nothing of it is applied, and every later
    /// group is refused with the same cause (the engine's history is no longer the store's).
    @Test func theFenceRefusesAGroupBuiltOnAnotherHistory() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("1"))])
        try f.store.apply([h.put("c/b", bytes("2"))])   // sent at once: the writer knows the meta row now
        try PostgresTestCluster.exec(schema: f.schema, "UPDATE hearth_meta SET last_seq = last_seq + 5")
        let refused = thrownError { () throws(HearthError) in try f.store.apply([h.put("c/c", bytes("3"))]) }
        #expect(refused?.code == .unavailable, "\(String(describing: refused))")
        #expect(refused?.message.contains("the stored last seq is not 2") == true, "\(String(describing: refused))")
        #expect(refused?.message.contains("the store's history changed under this daemon") == true)
        #expect(try f.store.get(path("c/c")) == nil)
        #expect(try f.store.changes(after: 2, limit: 10)?.isEmpty == true)
        let later = thrownError { () throws(HearthError) in try f.store.apply([h.put("c/d", bytes("4"))]) }
        #expect(later?.message == refused?.message)
        #expect(try f.store.get(path("c/b"))?.data == bytes("2"), "reads carry on")
    }

    /// The stored history moved backwards (PostgreSQL failed over to a standby that lacked the last commits):
    /// the next group is refused although its seqs are above the stored last seq.
    @Test func aStoreThatLostAcknowledgedCommitsRefusesWrites() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("1"))])
        try f.store.apply([h.put("c/b", bytes("2"))])
        try PostgresTestCluster.exec(schema: f.schema, """
            DELETE FROM hearth_documents WHERE id = 'b'::bytea; DELETE FROM hearth_changes WHERE seq = 2;
            DELETE FROM hearth_commits WHERE seq = 2; UPDATE hearth_meta SET last_seq = 1
            """)
        for _ in 0..<2 {
            let refused = thrownError { () throws(HearthError) in try f.store.apply([h.put("c/c", bytes("3"))]) }
            #expect(refused?.code == .unavailable, "\(String(describing: refused))")
            #expect(refused?.message.contains("the store's history changed under this daemon") == true, "\(String(describing: refused))")
        }
        #expect(try f.store.get(path("c/c")) == nil)
    }

    /// The writer's session is cut between two groups (as a PostgreSQL restart, a proxy or an idle timeout
    /// would): the next group finds out only when it sends, asks PostgreSQL whether it was applied (it was
    /// not, and the old session is gone: the writer holds the schema's lock again on a new one), and is sent
    /// once more on the new session. Nothing fails, nothing is applied twice.
    @Test func aWriterSessionCutBetweenGroupsIsRetriedOnANewSession() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("1"))])
        try f.store.apply([h.put("c/b", bytes("2"))])
        try Self.cutWriterSession(f)
        try f.store.apply([h.put("c/c", bytes("3"))])
        #expect(try f.store.get(path("c/c"))?.data == bytes("3"))
        #expect(try f.store.lastSeq() == 3)
        let logged: [UInt64] = (try f.store.changes(after: 0, limit: 10) ?? []).map { $0.seq }
        #expect(logged == [1, 2, 3])
        try f.store.apply([h.put("c/d", bytes("4"))])
        let dsn = try PostgresTestCluster.dsn()
        let second = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: dsn, schema: f.schema) }
        #expect(second?.message.contains("in use by another hearthd") == true, "the lock came back: \(String(describing: second))")
    }

    /// The same cut where the next group goes step by step (the store's first group) or is the first sent at
    /// once (its statements not yet prepared on the session): each is sent on a new session that holds the
    /// schema's lock, never on one without it.
    @Test func aCutBeforeTheFirstGroupOfEitherKindIsRetriedUnderTheLock() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        let dsn = try PostgresTestCluster.dsn()
        var h = History()
        try Self.cutWriterSession(f)      // before the first group (step by step)
        try f.store.apply([h.put("c/a", bytes("1"))])
        try Self.cutWriterSession(f)      // before the first group sent at once
        try f.store.apply([h.put("c/b", bytes("2"))])
        try f.store.apply([h.put("c/c", bytes("3"))])
        #expect(try f.store.lastSeq() == 3)
        #expect(try f.store.get(path("c/b"))?.data == bytes("2"))
        let second = thrownError { () throws(HearthError) in _ = try PostgresStore(dsn: dsn, schema: f.schema) }
        #expect(second?.message.contains("in use by another hearthd") == true, "the lock is held: \(String(describing: second))")
    }

    /// Retention prunes in the round trip that commits (the writer follows the oldest commits in memory and
    /// reads them again when its page runs out): after every group the log is the in-memory store's, by age
    /// and by bytes, across pages, failures and groups that prune their own commits.
    @Test(arguments: [3, 4096])
    func retentionFromThePageMatchesTheReferenceStore(pageSize: Int) throws {
        for retention in [RetentionPolicy(maxAgeMicros: 40_000, maxBytes: 1 << 30), RetentionPolicy(maxAgeMicros: 1 << 40, maxBytes: 2_500),
                          RetentionPolicy(maxAgeMicros: 30_000, maxBytes: 1_800), RetentionPolicy(maxAgeMicros: 0, maxBytes: 0)] {
            let schema = PostgresTestCluster.freshSchema()
            let dsn = try PostgresTestCluster.dsn()
            let store = try PostgresStore(dsn: dsn, schema: schema, retention: retention, lockingSchema: true, retentionPageSize: pageSize)
            defer {
                store.close()
                try? PostgresStore.dropSchema(dsn: dsn, schema: schema)
            }
            let model = MemoryStore(retention: retention)
            var h = History()
            var random = SystemRandomNumberGenerator()
            for round in 0..<120 {
                let size = Int.random(in: 1...4, using: &random)
                let group = (0..<size).map { _ in h.put("c/d\(Int.random(in: 0..<20, using: &random))", [UInt8](repeating: 0x61, count: Int.random(in: 10...200, using: &random))) }
                try store.apply(group)
                try model.apply(group)
                if round == 60 {
                    try PostgresTestCluster.exec(schema: schema, """
                        SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
                          AND objid = (hashtextextended('\(schema)', 7412) & 4294967295)::oid
                        """)
                }
                let oldest = try model.oldestResumableSeq()
                #expect(try store.oldestResumableSeq() == oldest, "round \(round), \(retention), page \(pageSize)")
                let stored: [UInt64] = (try store.changes(after: oldest, limit: 1000) ?? []).map { $0.seq }
                let expected: [UInt64] = (try model.changes(after: oldest, limit: 1000) ?? []).map { $0.seq }
                #expect(stored == expected, "round \(round), \(retention), page \(pageSize)")
            }
            // The meta row's byte count is the log's.
            let check = try CLIProcess.run([dsn, "-At", "-c", "SELECT (SELECT log_bytes FROM \"\(schema)\".hearth_meta) = (SELECT coalesce(sum(bytes), 0) FROM \"\(schema)\".hearth_commits)"],
                                           timeout: 60, binary: "/usr/bin/psql")
            #expect(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "t", "log_bytes drifted: \(check.stdout) \(check.stderr)")
        }
    }

    /// A group larger than one statement may carry is sent in several statements of its transaction
    /// (PostgreSQL refuses a message above 1 GiB): documents and change-log rows are split by their bytes.
    @Test func aLargeGroupIsSplitAcrossStatements() throws {
        var h = History()
        let big = [UInt8](repeating: 0x61, count: 100)
        let group = [h.commit((0..<5).map { ("c/d\($0)", big) }), h.commit((0..<5).map { ("c/d\($0)", big) })]
        let rows = GroupRows(group, statementBytes: 250)
        let documents = rows.descriptions.filter { $0.hasPrefix("storing") }
        let changes = rows.descriptions.filter { $0.hasPrefix("logging") && $0.hasSuffix("mutations") }
        // 5 final documents of ~105 bytes, 2 per statement; 10 mutations of 100-200 image bytes.
        #expect(documents == ["storing 2 documents", "storing 2 documents", "storing 1 documents"], "\(rows.descriptions)")
        #expect(changes.count >= 5, "\(rows.descriptions)")
        #expect(GroupRows(group).descriptions.filter { $0.hasPrefix("storing") } == ["storing 5 documents"])
    }

    /// A snapshot whose session is cut fails its reads from then on instead of reading, on a new session,
    /// a state other than its seq's.
    @Test func aSnapshotNeverReadsOutsideItsTransaction() throws {
        let f = try StoreFixture(.postgres)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("1"))])
        let s = try f.store.snapshot()
        defer { s.close() }
        #expect(try s.get(path("c/a"))?.data == bytes("1"))
        // Only this fixture's snapshot session: other suites run beside this one on the same cluster, and
        // their idle-in-transaction sessions hold locks on tables of their own schemas, not of this one.
        try PostgresTestCluster.exec(schema: f.schema, """
            SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a
            WHERE a.application_name = 'hearthd' AND a.state LIKE 'idle in transaction%'
              AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                          JOIN pg_namespace n ON n.oid = c.relnamespace
                          WHERE l.pid = a.pid AND n.nspname = '\(f.schema)'
                            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
            """)
        try f.store.apply([h.put("c/a", bytes("2"))])
        for _ in 0..<2 {
            let e = thrownError { () throws(HearthError) in _ = try s.get(path("c/a")) }
            #expect(e?.code == .unavailable, "\(String(describing: e))")
        }
        #expect(try f.store.get(path("c/a"))?.data == bytes("2"))
    }
}
