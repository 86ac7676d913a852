#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// Commits groups to PostgreSQL on its own connection: one transaction per group, whose first statement locks
/// the meta row and checks that the stored `last_seq` is the one this group follows (the fence: a group built
/// on another history, or racing another writer, changes nothing). Each group's rows go in a few statements
/// over arrays (`unnest`), netted per document and per index key first. Used by one thread at a time.
final class PostgresWriter {
    let connection: PGConnection
    private let retention: RetentionPolicy
    /// The oldest commits still in the change log, in order (seq, commit time, image bytes): what retention
    /// prunes next. Read in pages and followed in memory, so a group can prune in the same round trip as it
    /// commits; `pageReachesEnd` says the page runs to the log's end, and then this writer's own commits join
    /// it. Emptied on any failure (read again by the next group).
    private var oldestPage: [(seq: UInt64, micros: Int64, bytes: Int64)] = []
    private var pageReachesEnd = false
    /// Commits read into the page at a time (4,096; tests make it small to cross pages).
    private let pageSize: Int
    static let defaultPageSize = 4096
    /// Set when a COMMIT's outcome could not be learned: every later group is refused with it, since this
    /// writer no longer knows which seq the stored history ends at (a restart reads it again).
    var doubt: HearthError?

    /// The schema's writer lock belongs to this session of the connection (0: not held).
    var lockedSession = 0
    let schema: String
    /// One of several nodes over the schema (`ClusterStore`): the lock is taken only by `campaign`, never
    /// again on its own after the session that held it ended (another node may be the committer by then).
    let clustered: Bool
    /// The channel the commit feeds of this schema listen on.
    private let channel: String
    /// The last seq this writer committed, or found stored when it first took the schema's lock: what the
    /// stored `last_seq` must be when its next group begins. Both directions matter: higher means another
    /// writer committed; lower means the database lost commits it had acknowledged (a failover to a standby
    /// that had not received them), and the engine's history is then no longer the store's.
    var expectedLastSeq: UInt64?

    /// Takes the schema's writer lock, or throws UNAVAILABLE when another hearthd holds it.
    /// With `lockingNow` false the lock is first taken by the first group (a store opened to read beside another).
    init(connection: PGConnection, schema: String, retention: RetentionPolicy, lockingNow: Bool, clustered: Bool = false,
         pageSize: Int = PostgresWriter.defaultPageSize) throws(HearthError) {
        self.pageSize = max(1, pageSize)
        self.clustered = clustered
        self.connection = connection
        self.schema = schema
        channel = PostgresCommitFeed.channel(for: schema)
        self.retention = retention
        if lockingNow && !clustered { try lockSchema() }
    }

    /// Before a group: the session holds the schema's writer lock. A single daemon takes it again after a
    /// reconnect; a cluster node does not (the lock is the committer's role, taken only by `campaign`).
    private func requireLock() throws(HearthError) {
        guard clustered else { return try lockSchema() }
        try connection.reconnectIfBroken()
        guard lockedSession != 0, lockedSession == connection.sessions else {
            lockedSession = 0
            throw Self.notCommitter(schema)
        }
    }

    static func notCommitter(_ schema: String) -> HearthError {
        HearthError(.unavailable, "storage: this node is not the committer of schema \(schema) (it does not hold the writer lock); the write was not applied")
    }

    /// One hearthd commits to a schema at a time: a session-level advisory lock, held by the writer's session
    /// and so released by PostgreSQL when that session ends however it ends. Taken again after a reconnect.
    /// A session that just ended (a daemon that stopped a moment ago, this writer's own previous session) may
    /// hold it for a little while longer, so a refusal is tried again for up to `patience` seconds.
    private func lockSchema(patience: Double = 3) throws(HearthError) {
        try connection.reconnectIfBroken()
        guard lockedSession != connection.sessions else { return }
        let deadline = MonotonicClock.seconds() + patience
        while true {
            let rows = try connection.query("SELECT pg_try_advisory_lock(hashtextextended($1, 7412))", [.string(schema)], "locking schema \(schema) for writing")
            if rows.bytes(0, 0) == [1] { break }
            guard MonotonicClock.seconds() < deadline else {
                throw HearthError(.unavailable, "storage: schema \(schema) is in use by another hearthd (it holds the schema's writer lock); one daemon writes to a schema at a time")
            }
            usleep(50_000)
        }
        lockedSession = connection.sessions
        if expectedLastSeq == nil {
            let rows = try connection.query("SELECT last_seq FROM hearth_meta WHERE id = 1", [], "reading last_seq")
            expectedLastSeq = rows.uint64(0, 0)
        }
    }

    func close() { connection.close() }

    var serverDescription: String { connection.serverDescription }

    /// Commits `commits` in one transaction (see `DocumentStore.apply`).
    ///
    /// Usually in one round trip: BEGIN, the fence (`hearth_fence`: the stored `last_seq` must be the one this
    /// writer last committed, else nothing is applied), the group's rows, the meta row and COMMIT, sent together
    /// (`PGConnection.pipeline`), with retention's DELETEs when its page of oldest commits says so. Step by
    /// step instead, reading the meta row under its lock first, when this writer does not know the stored
    /// state yet (its first group, after a failure) or when pruning would run past its page.
    func apply(_ commits: [CommitRecord]) throws(HearthError) {
        guard let newest = commits.last else { return }
        if let doubt { throw doubt }
        do throws(HearthError) {
            try requireLock()
        } catch {
            known = nil
            throw error
        }
        guard let expected = expectedLastSeq else { throw HearthError(.internal, "storage: the writer has no last seq") }
        try CommitValidation.check(commits, after: expected)
        let rows = GroupRows(commits)
        let cutoff = retention.ageCutoff(newest: newest.commitTime)
        if let log = known, pageReachesEnd || !oldestPage.isEmpty,
           let plan = prunePlan(commits, after: log, adding: rows.imageBytes, cutoff: cutoff) {
            guard try !applyPipelined(rows, newest: newest, after: expected, log: log, plan: plan) else { return }
            // The connection broke under the group and PostgreSQL says it was not applied: once more, on the
            // new session (an idle connection learns that it broke only when it next sends something).
        }
        try applyStepByStep(rows, newest: newest, cutoff: cutoff, expected: expected)
    }

    /// The change log's pruning point and bytes as this writer last committed them in the meta row (nil:
    /// unknown, read again by the next group); its `last_seq` is `expectedLastSeq`.
    var known: LogState?

    struct LogState {
        var prunedThrough: UInt64
        var logBytes: Int64
    }

    /// The group in one round trip. Returns true when it is committed; false when the connection broke and
    /// PostgreSQL says nothing of it was applied (the caller may try again); throws otherwise.
    private func applyPipelined(_ rows: GroupRows, newest: CommitRecord, after lastSeq: UInt64, log: LogState,
                                plan: PrunePlan) throws(HearthError) -> Bool {
        var statements = [PGStatement(sql: "BEGIN", params: [], what: "starting a commit"),
                          PGStatement(sql: "SELECT hearth_fence($1)", params: [.int8(lastSeq)], what: "checking the stored last seq")]
        statements += rows.statements
        if plan.through != log.prunedThrough { statements += Self.pruneStatements(after: log.prunedThrough, through: plan.through) }
        statements.append(Self.advance(newest, prunedThrough: plan.through, logBytes: plan.logBytes))
        statements.append(notify(newest))
        statements.append(PGStatement(sql: "COMMIT", params: [], what: "committing seqs \(rows.firstSeq)...\(newest.seq)"))
        do throws(PGPipelineFailure) {
            try connection.pipeline(statements)
        } catch {
            known = nil
            forgetOldest()
            switch error {
            case .failed(let e):
                connection.rollBack()
                if e.message.contains("SQLSTATE HR001") { throw historyChanged(e.message) }
                throw e
            case .notSent:
                return false   // nothing reached PostgreSQL: the caller sends it step by step, relocking first
            case .broken:
                // The COMMIT may have been applied even though its answer was lost: ask.
                guard try committed(newest.seq, after: lastSeq) else { return false }
            }
        }
        known = LogState(prunedThrough: plan.through, logBytes: plan.logBytes)
        expectedLastSeq = newest.seq
        oldestPage = plan.page
        return true
    }

    /// The group statement by statement, reading the meta row under its lock first and pruning when due.
    private func applyStepByStep(_ rows: GroupRows, newest: CommitRecord, cutoff: Int64, expected: UInt64) throws(HearthError) {
        known = nil
        var log = LogState(prunedThrough: 0, logBytes: 0)
        do throws(HearthError) {
            try beginLocked()
            let stored = try connection.query("SELECT last_seq, pruned_through, log_bytes FROM hearth_meta WHERE id = 1 FOR UPDATE", [],
                                              "locking the meta row")
            guard stored.count == 1 else { throw HearthError(.internal, "storage: hearth_meta has no row") }
            let storedLastSeq = stored.uint64(0, 0)
            guard storedLastSeq == expected else {
                throw historyChanged("the stored last seq is \(storedLastSeq), and this daemon last committed (or found) \(expected)")
            }
            log = LogState(prunedThrough: stored.uint64(0, 1), logBytes: stored.int64(0, 2))
            for statement in rows.statements { try connection.query(statement.sql, statement.params, statement.what) }
            log.logBytes += rows.imageBytes
            try prune(&log.prunedThrough, &log.logBytes, cutoff: cutoff)
            for statement in [Self.advance(newest, prunedThrough: log.prunedThrough, logBytes: log.logBytes), notify(newest)] {
                try connection.query(statement.sql, statement.params, statement.what)
            }
        } catch {
            connection.unpin()
            connection.rollBack()
            forgetOldest()
            throw error
        }
        do throws(HearthError) {
            try connection.query("COMMIT", [], "committing seqs \(rows.firstSeq)...\(newest.seq)")
            connection.unpin()
        } catch {
            connection.unpin()
            forgetOldest()
            // The COMMIT may have reached PostgreSQL and been applied even though its answer was lost: ask.
            guard connection.isBroken, try committed(newest.seq, after: expected) else {
                connection.rollBack()
                throw error
            }
        }
        known = log
        expectedLastSeq = newest.seq
    }

    /// BEGIN on a session that holds the schema's writer lock, the connection pinned to it. An idle connection
    /// learns that it broke only when BEGIN fails: the lock is then taken again on a new session, and BEGIN
    /// sent once more (never on a session without the lock).
    private func beginLocked() throws(HearthError) {
        for attempt in 0..<2 {
            try requireLock()
            connection.pin()
            do throws(HearthError) {
                try connection.query("BEGIN", [], "starting a commit")
            } catch {
                connection.unpin()
                if attempt == 0 && connection.isBroken { continue }
                throw error
            }
            guard connection.sessions == lockedSession else {
                connection.unpin()
                connection.rollBack()
                throw HearthError(.unavailable, "storage: the writer's session changed under a commit; try again")
            }
            return
        }
    }

    /// Refuses this group and every later one: the stored history is not the one the engine continues.
    private func historyChanged(_ detail: String) -> HearthError {
        if clustered {
            // Another node committed: this one is no longer the committer (its next campaign says who is).
            lockedSession = 0
            known = nil
            return HearthError(.unavailable, "storage: this node is no longer the committer of schema \(schema) (\(detail)); the write was not applied")
        }
        let e = HearthError(.unavailable, "storage: the store's history changed under this daemon (\(detail)): another writer committed, or PostgreSQL lost commits it had acknowledged (a failover to a standby that lacked them); writes are refused until hearthd restarts")
        doubt = e
        return e
    }

    /// Wakes every feed of the schema (`PostgresCommitFeed`) once the transaction commits (PostgreSQL delivers
    /// a NOTIFY at commit, never for a transaction that rolls back); the payload is the group's last seq.
    private func notify(_ newest: CommitRecord) -> PGStatement {
        PGStatement(sql: "SELECT pg_notify($1, $2)", params: [.string(channel), .string(String(newest.seq))], what: "notifying the commit feeds")
    }

    /// The statement that records the group in the meta row.
    private static func advance(_ newest: CommitRecord, prunedThrough: UInt64, logBytes: Int64) -> PGStatement {
        PGStatement(sql: "UPDATE hearth_meta SET last_seq = $1, last_commit_us = $2, pruned_through = $3, log_bytes = $4 WHERE id = 1",
                    params: [.int8(newest.seq), .int8(newest.commitTime.micros), .int8(prunedThrough), .int8(logBytes)],
                    what: "advancing last_seq")
    }

    /// After a COMMIT whose answer was lost with the connection: whether the group ending at `seq` is stored
    /// (true), or not (false: `last_seq` is still `after`).
    ///
    /// "Not applied" is trusted only once the old session is known to have ended, since its COMMIT may still
    /// be running (waiting for a synchronous standby, say): the writer takes the schema's lock on a new session,
    /// which PostgreSQL releases only when the old one ends. PostgreSQL is asked again for up to 30 s (a
    /// restart); when it cannot answer by then, or answers neither, the doubt refuses every later group.
    private func committed(_ seq: UInt64, after: UInt64) throws(HearthError) -> Bool {
        if clustered {
            // The lock went with the session, and another node may take it before this one could ask: the
            // node stops committing, and the commit feed, which every node publishes from, shows whether the
            // group was applied.
            lockedSession = 0
            known = nil
            throw HearthError(.unavailable, "storage: PostgreSQL did not answer the COMMIT of seq \(seq), so whether it was applied is unknown; this node stops committing and the commit feed will show it")
        }
        let deadline = MonotonicClock.seconds() + 30
        var cause = HearthError(.unavailable, "no answer")
        while MonotonicClock.seconds() < deadline {
            do throws(HearthError) {
                try lockSchema(patience: max(0, deadline - MonotonicClock.seconds()))
                let stored = try connection.query("SELECT last_seq FROM hearth_meta WHERE id = 1", [], "reading last_seq after a lost COMMIT").uint64(0, 0)
                if stored == seq { return true }
                if stored == after { return false }
                cause = HearthError(.internal, "last_seq is \(stored), neither \(after) nor \(seq)")
                break
            } catch {
                cause = error
                usleep(200_000)
            }
        }
        doubt = PostgresStore.uncertain(seq, cause)
        throw doubt!
    }

    func forgetOldest() {
        oldestPage = []
        pageReachesEnd = false
    }

    /// Reads the oldest commits above `after` into the page.
    private func loadPage(after: UInt64) throws(HearthError) {
        let rows = try connection.query("SELECT seq, commit_us, bytes FROM hearth_commits WHERE seq > $1 ORDER BY seq LIMIT $2",
                                        [.int8(PostgresReads.seqBound(after)), .int8(pageSize)], "reading the oldest commits")
        oldestPage = (0..<rows.count).map { (rows.uint64($0, 0), rows.int64($0, 1), rows.int64($0, 2)) }
        pageReachesEnd = rows.count < pageSize
    }

    /// What retention prunes with a group, decided from the page alone: the last seq pruned, the log's bytes
    /// after it, and the page as it will then be. Nil when the page cannot tell (it runs out before pruning
    /// stops): the group then goes step by step, which reads more.
    struct PrunePlan {
        var through: UInt64
        var logBytes: Int64
        var page: [(seq: UInt64, micros: Int64, bytes: Int64)]
    }

    private func prunePlan(_ commits: [CommitRecord], after log: LogState, adding bytes: Int64, cutoff: Int64) -> PrunePlan? {
        var page = oldestPage
        if pageReachesEnd {
            page += commits.map { ($0.seq, $0.commitTime.micros, $0.imageBytes) }
            guard page.count <= 2 * pageSize else { return nil }   // let the step-by-step path read it afresh
        }
        var plan = PrunePlan(through: log.prunedThrough, logBytes: log.logBytes + bytes, page: [])
        var pruned = 0
        while pruned < page.count, retention.prunesOldest(commitMicros: page[pruned].micros, logBytes: plan.logBytes, cutoff: cutoff) {
            plan.logBytes -= page[pruned].bytes
            plan.through = page[pruned].seq
            pruned += 1
        }
        // Pruning that would go past the page needs the commits after it.
        if pruned == page.count && !pageReachesEnd { return nil }
        plan.page = Array(page[pruned...])
        return plan
    }

    /// Removes the oldest whole commits while retention says so (`RetentionPolicy.prunesOldest`), from the
    /// page, read again from the log as it runs out. Runs inside the group's transaction, after its rows.
    private func prune(_ prunedThrough: inout UInt64, _ logBytes: inout Int64, cutoff: Int64) throws(HearthError) {
        // Inside the transaction, the log holds this group's commits too: the page is read afresh (this path
        // runs for a writer's first group, after a failure, or once pruning ran past the page).
        try loadPage(after: prunedThrough)
        var through = prunedThrough
        while let first = oldestPage.first, retention.prunesOldest(commitMicros: first.micros, logBytes: logBytes, cutoff: cutoff) {
            logBytes -= first.bytes
            through = first.seq
            oldestPage.removeFirst()
            if oldestPage.isEmpty && !pageReachesEnd { try loadPage(after: through) }
        }
        guard through != prunedThrough else { return }
        for statement in Self.pruneStatements(after: prunedThrough, through: through) {
            try connection.query(statement.sql, statement.params, statement.what)
        }
        prunedThrough = through
    }

    /// The statements that drop the change log from `after` (exclusive, what was pruned before) through
    /// `through`. The lower bound matters: the rows pruned before stay in the indexes as dead entries until
    /// vacuum, and a scan from the log's start would walk them all again on every group.
    private static func pruneStatements(after: UInt64, through: UInt64) -> [PGStatement] {
        [PGStatement(sql: "DELETE FROM hearth_changes WHERE seq > $1 AND seq <= $2", params: [.int8(after), .int8(through)],
                     what: "pruning the change log"),
         PGStatement(sql: "DELETE FROM hearth_commits WHERE seq > $1 AND seq <= $2", params: [.int8(after), .int8(through)],
                     what: "pruning the change log")]
    }
}
