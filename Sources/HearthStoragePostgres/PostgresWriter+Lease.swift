import HearthModel
import HearthStorage

/// The committer's election on the writer's connection (`ClusterStore`): the schema's writer lock is the
/// role, and the lease row (`hearth_lease`) tells the other nodes who holds it, where to reach it, and until
/// when it has promised to renew. Lease times are PostgreSQL's clock, so nodes' clocks never meet.
extension PostgresWriter {
    /// The key of the schema's writer lock, as SQL (`$1` is the schema's name).
    private static let lockKey = "hashtextextended($1, 7412)"

    var holdsLock: Bool { lockedSession != 0 && lockedSession == connection.sessions && !connection.isBroken }

    func campaign(_ node: ClusterNode, leaseMs: Int) throws(HearthError) -> CommitterLease {
        try connection.reconnectIfBroken()
        if lockedSession != connection.sessions { lockedSession = 0 }
        let seen = try readLease(leaseMs: leaseMs)
        if lockedSession != 0 {
            return CommitterLease(committer: seen.committer, term: seen.term, isMine: true, lastSeq: seen.lastSeq)
        }
        // A session holding the lock under this node's own name is one this node left behind (its connection
        // broke while the backend lingered, a COMMIT waiting on a standby): never wait for its lease.
        let ownStale = seen.committer?.name == node.name && seen.holder != nil
        // The committer stopped renewing (frozen, cut off from the database): end its session, which releases
        // the lock; its groups fail from then on. Only the session the lease names (another node may have just
        // taken the lock and not written its lease yet), unless the lease ran out long ago.
        if let holder = seen.holder, ownStale || (seen.expired && (holder == seen.pid || seen.longExpired)) {
            try connection.query("SELECT pg_terminate_backend($1::int4)", [.int8(holder)], "ending the session of a committer whose lease ran out")
        }
        guard seen.holder == nil || seen.expired || ownStale else {
            return CommitterLease(committer: seen.committer, term: seen.term, isMine: false, lastSeq: seen.lastSeq)
        }
        let taken = try connection.query("SELECT pg_try_advisory_lock(\(Self.lockKey))", [.string(schema)], "trying the schema's writer lock")
        guard taken.bytes(0, 0) == [1] else {
            return CommitterLease(committer: nil, term: seen.term, isMine: false, lastSeq: seen.lastSeq)
        }
        lockedSession = connection.sessions
        do throws(HearthError) {
            let rows = try connection.query("""
                INSERT INTO hearth_lease AS l (id, term, committer, address, lease_until, pid)
                VALUES (1, 1, $1, $2, clock_timestamp() + $3 * interval '1 millisecond', pg_backend_pid())
                ON CONFLICT (id) DO UPDATE SET term = l.term + 1, committer = $1, address = $2, lease_until = excluded.lease_until,
                                               pid = excluded.pid
                RETURNING term, (SELECT last_seq FROM hearth_meta WHERE id = 1)
                """, [.string(node.name), node.address.map(PGValue.string) ?? PGValue(type: PGValue.textOID, bytes: nil), .int8(leaseMs)],
                "taking the committer's lease")
            // A statement outside a transaction is sent again on a new session when the old one broke: the
            // lease must have been written by the session that holds the lock.
            guard connection.sessions == lockedSession else {
                lockedSession = 0
                return CommitterLease(committer: nil, term: seen.term, isMine: false, lastSeq: seen.lastSeq)
            }
            let term = rows.uint64(0, 0), last = rows.uint64(0, 1)
            // A new term starts from the stored history, whatever this node last knew.
            expectedLastSeq = last
            known = nil
            doubt = nil
            forgetOldest()
            return CommitterLease(committer: node, term: term, isMine: true, lastSeq: last)
        } catch {
            lockedSession = 0
            connection.rollBack()
            _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", [.string(schema)], "giving the writer lock back")
            throw error
        }
    }

    func renewLease(term: UInt64, leaseMs: Int) throws(HearthError) -> Bool {
        guard holdsLock else { lockedSession = 0; return false }
        do throws(HearthError) {
            let rows = try connection.query("""
                UPDATE hearth_lease SET lease_until = clock_timestamp() + $2 * interval '1 millisecond' WHERE id = 1 AND term = $1 RETURNING term
                """, [.int8(term), .int8(leaseMs)], "renewing the committer's lease")
            if rows.count == 1 && connection.sessions == lockedSession { return true }
        } catch {
            // A session that broke took the lock with it; any other failure is the database's, tried again.
            guard connection.isBroken || connection.sessions != lockedSession else { throw error }
        }
        lockedSession = 0
        return false
    }

    func resign(term: UInt64) {
        guard holdsLock else { lockedSession = 0; return }
        _ = try? connection.query("UPDATE hearth_lease SET lease_until = clock_timestamp() WHERE id = 1 AND term = $1",
                                  [.int8(term)], "ending the committer's lease")
        _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", [.string(schema)], "giving the writer lock back")
        lockedSession = 0
    }

    private struct SeenLease {
        var committer: ClusterNode?
        var term: UInt64
        var expired: Bool
        /// The backend holding the writer lock (another node's, or one that has not ended yet).
        var holder: Int64?
        /// The stored last seq.
        var lastSeq: UInt64
        /// The backend the lease names (its committer's session), and whether the lease ran out more than a
        /// whole lease ago.
        var pid: Int64 = 0
        var longExpired = false
    }

    private func readLease(leaseMs: Int) throws(HearthError) -> SeenLease {
        let rows = try connection.query("""
            SELECT l.term, l.committer, l.address, CASE WHEN l.lease_until < clock_timestamp() THEN 1 ELSE 0 END::int8,
                   (SELECT k.pid::int8 FROM pg_locks k
                     WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1 AND k.pid <> pg_backend_pid()
                       AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                       AND ((k.classid::int8 << 32) | k.objid::int8) = \(Self.lockKey) LIMIT 1),
                   (SELECT last_seq FROM hearth_meta WHERE id = 1), l.pid,
                   CASE WHEN l.lease_until + $2 * interval '1 millisecond' < clock_timestamp() THEN 1 ELSE 0 END::int8
            FROM (SELECT 1) AS one LEFT JOIN hearth_lease l ON l.id = 1
            """, [.string(schema), .int8(leaseMs)], "reading the committer's lease")
        let holder = rows.isNull(0, 4) ? nil : rows.int64(0, 4)
        let last = rows.uint64(0, 5)
        guard !rows.isNull(0, 0) else { return SeenLease(committer: nil, term: 0, expired: false, holder: holder, lastSeq: last) }
        let node = ClusterNode(name: rows.text(0, 1), address: rows.isNull(0, 2) ? nil : rows.text(0, 2))
        return SeenLease(committer: node, term: rows.uint64(0, 0), expired: rows.int64(0, 3) == 1, holder: holder, lastSeq: last,
                         pid: rows.int64(0, 6), longExpired: rows.int64(0, 7) == 1)
    }
}
