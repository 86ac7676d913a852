import Foundation
import HearthModel
import HearthStorage
import HearthStoragePostgres
import HearthTesting
import Testing

/// The committer's election over one schema (`ClusterStore`): one node at a time holds the writer lock and the
/// lease; the others see who it is; a resignation or an expired lease lets another take over; a deposed node's
/// groups are refused, and the feed carries the catalog a commit stored.
@Suite struct PostgresLeaseTests {
    let schema = PostgresTestCluster.freshSchema()

    func node(_ name: String) throws -> PostgresStore {
        try PostgresStore(dsn: try PostgresTestCluster.dsn(), schema: schema, clustered: true)
    }

    @Test func oneNodeCommitsAtATimeAndTheOthersKnowWhich() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let a = try node("a"), b = try node("b")
        defer { a.close(); b.close() }
        let na = ClusterNode(name: "a", address: "127.0.0.1:1"), nb = ClusterNode(name: "b", address: nil)
        // Nobody commits before an election.
        var h = History()
        let early = thrownError { () throws(HearthError) in try a.apply([h.put("c/x", bytes("0"))]) }
        #expect(early?.message.contains("not the committer") == true, "\(String(describing: early))")
        h = History()

        let first = try a.campaign(na, leaseMs: 60_000)
        #expect(first == CommitterLease(committer: na, term: 1, isMine: true, lastSeq: 0))
        let seen = try b.campaign(nb, leaseMs: 60_000)
        #expect(seen == CommitterLease(committer: na, term: 1, isMine: false, lastSeq: 0))
        try a.apply([h.put("c/x", bytes("1"))])
        #expect(try a.renewLease(term: 1, leaseMs: 60_000))
        let refused = thrownError { () throws(HearthError) in try b.apply([h.put("c/y", bytes("2"))]) }
        #expect(refused?.code == .unavailable && refused?.message.contains("not the committer") == true, "\(String(describing: refused))")

        // A clean stop gives the lease up: the next round elects another node, from the stored last seq.
        a.resign(term: 1)
        let second = try b.campaign(nb, leaseMs: 60_000)
        #expect(second == CommitterLease(committer: nb, term: 2, isMine: true, lastSeq: 1))
        var hb = History(startingAfter: 1)
        try b.apply([hb.put("c/y", bytes("2"))])
        #expect(try !a.renewLease(term: 1, leaseMs: 60_000), "the old term is over")
        let deposed = thrownError { () throws(HearthError) in try a.apply([h.put("c/z", bytes("3"))]) }
        #expect(deposed?.message.contains("not the committer") == true, "\(String(describing: deposed))")
        #expect(try a.get(path("c/y"))?.data == bytes("2"), "a deposed node reads on")
    }

    /// A committer that stops renewing (frozen) keeps its session, and so the lock: once its lease has run
    /// out, a follower ends that session, takes the lock, and the frozen node's groups fail from then on.
    @Test func anExpiredLeaseIsTakenOverAndTheOldCommitterIsFencedOut() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let a = try node("a"), b = try node("b")
        defer { a.close(); b.close() }
        let na = ClusterNode(name: "a", address: nil), nb = ClusterNode(name: "b", address: nil)
        #expect(try a.campaign(na, leaseMs: 1).isMine)
        var h = History()
        try a.apply([h.put("c/x", bytes("1"))])
        // Rounds until the 1 ms lease is seen expired (PostgreSQL's clock) and the lock is free.
        var lease = try b.campaign(nb, leaseMs: 60_000)
        for _ in 0..<1000 where !lease.isMine { lease = try b.campaign(nb, leaseMs: 60_000) }
        #expect(lease == CommitterLease(committer: nb, term: 2, isMine: true, lastSeq: 1))
        let fenced = thrownError { () throws(HearthError) in try a.apply([h.put("c/y", bytes("2"))]) }
        #expect(fenced?.code == .unavailable, "\(String(describing: fenced))")
        #expect(try a.get(path("c/y")) == nil)
        #expect(try !a.renewLease(term: 1, leaseMs: 60_000))
        var hb = History(startingAfter: 1)
        try b.apply([hb.put("c/y", bytes("3"))])
        #expect(try b.get(path("c/y"))?.data == bytes("3"))
    }

    @Test func theFeedCarriesTheCatalogACommitStored() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let a = try node("a")
        defer { a.close() }
        #expect(try a.campaign(ClusterNode(name: "a", address: nil), leaseMs: 60_000).isMine)
        var h = History()
        let before = h.put("c/w", bytes("0"))
        var withCatalog = h.put("c/x", bytes("1"))
        withCatalog.indexCatalog = bytes("catalog-1")
        let after = h.put("c/y", bytes("2"))
        try a.apply([before, withCatalog, after])
        let feed = try a.feed(recheck: 0.25)
        defer { feed.close() }
        let records = try feed.next(after: 0, limit: 10, timeout: 0)
        #expect(records?.map(\.seq) == [1, 2, 3])
        #expect(records?.map(\.indexCatalog) == [nil, bytes("catalog-1"), nil])
        #expect(try feed.next(after: 2, limit: 10, timeout: 0)?.first?.indexCatalog == nil, "carried by seq 2 only")
    }

    /// A store made by the first version of the schema gains the lease table and the request columns at open.
    @Test func aVersionOneSchemaIsMigrated() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        try node("a").close()
        try PostgresTestCluster.exec(schema: schema, "DROP TABLE hearth_lease; DROP INDEX hearth_commits_by_request; ALTER TABLE hearth_commits DROP COLUMN request_id, DROP COLUMN request_answer; UPDATE hearth_meta SET schema_version = 1")
        let a = try node("a")
        defer { a.close() }
        #expect(try a.campaign(ClusterNode(name: "a", address: nil), leaseMs: 60_000).isMine)
        try PostgresTestCluster.exec(schema: schema, "DO $$ BEGIN IF (SELECT schema_version FROM hearth_meta) <> 3 OR NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'hearth_commits_by_request' AND schemaname = current_schema()) THEN RAISE 'not migrated'; END IF; END $$")
    }
}
