#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// The SQLite store's write path: a group is durable, readable and acknowledged once the commit log holds it;
/// SQLite gets it later, from a thread of its own, in transactions as large as the backlog.
///
/// ```
///   writer thread (apply)                      applier thread
///   ─────────────────────                      ──────────────
///   validate, frame, append, fdatasync
///   pending += group  ── readers see it ──►    take every pending group
///   return (acknowledged)                      one SQLite transaction, not synced
///                                              pending -= those groups
/// ```
///
/// Reads merge the pending groups with SQLite (`PendingCommits`), so they see every acknowledged commit. The
/// log is emptied only when nothing is pending and SQLite's files are synced (every `resetBytes`, at close, and
/// on a full disk). A start after a crash or power loss applies again whatever the log holds past SQLite.
///
/// Failures: a group SQLite refuses is already acknowledged, so it is never dropped. The applier stops and
/// keeps the backlog pending (reads still see it); the next `append` asks it to try again and, if that fails
/// too, is refused with the cause, as is every write until the backlog applies (a full disk: once space
/// returns). A restart applies the backlog from the log. Backpressure: `append` waits while the backlog holds
/// more than `maxPendingCommits` commits or `maxPendingBytes` of images.
///
/// Threads: `append` from one writer thread at a time; `pending` from any thread; the applier runs on its own.
final class CommitPipeline: @unchecked Sendable {
    static let maxPendingCommits = 20_000
    static let maxPendingBytes: Int64 = 64 << 20
    /// The applier lets a backlog gather for up to `batchInterval` after its first group, or until it holds
    /// `batchCommits` commits, so that one transaction writes a hot page once for many commits (etcd's
    /// backend batches the same way). Measured in docs/benchmarks.md, "The write path".
    static let batchInterval: Int = 10_000_000   // ns
    static let batchCommits = 2_000

    let log: CommitLog
    private let writer: Locked<SQLiteWriter?>
    private let history: UInt64
    private let resetBytes: Int

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Under `mutex`:
    private var backlog = PendingCommits()
    /// The last seq the log holds (the next frame's `prevSeq`).
    private var loggedSeq: UInt64
    /// Why the applier stopped; cleared by `retry`.
    private var failure: HearthError?
    /// Tests: leave the newest `heldGroups` groups pending unless draining.
    private var heldGroups = 0
    private var draining = 0
    private var stopping = false
    private var thread: pthread_t?
    /// Groups applied so far, in how many transactions, and the largest one in commits (diagnostics).
    private(set) var appliedGroups = 0
    private(set) var transactions = 0
    private(set) var largestTransaction = 0

    init(log: CommitLog, writer: Locked<SQLiteWriter?>, history: UInt64, loggedSeq: UInt64, resetBytes: Int) throws(HearthError) {
        self.log = log
        self.writer = writer
        self.history = history
        self.loggedSeq = loggedSeq
        self.resetBytes = resetBytes
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
        let context = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            Unmanaged<CommitPipeline>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<CommitPipeline>.fromOpaque(context).release()
            throw HearthError(.unavailable, "storage: cannot start the applier thread (error \(rc))")
        }
        thread = t
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    private func locked<R>(_ body: () throws(HearthError) -> R) throws(HearthError) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// The groups acknowledged and not yet in SQLite, for a read: take them before opening SQLite's state.
    var pending: PendingCommits { try! locked { backlog } }

    /// The last seq acknowledged.
    var lastSeq: UInt64 { try! locked { loggedSeq } }

    // MARK: The writer thread

    /// Makes `commits` durable in the log and readable; returns once both are true. Throws, leaving nothing
    /// changed, when they do not continue the log's seqs, the log cannot take them, or the applier is stuck
    /// (the message says on what).
    func append(_ commits: [CommitRecord]) throws(HearthError) {
        guard let newest = commits.last else { return }
        if diskIsTight() { return try appendApplying(commits) }
        let prev = try locked { () throws(HearthError) -> UInt64 in
            try waitForRoom()
            return loggedSeq
        }
        let frame = try Self.frame(commits, after: prev, history: history)
        do { try log.append(frame) } catch {
            if error.isDiskFull { try? emptyLog() }
            throw error
        }
        let group = PendingGroup(commits)
        try! locked {
            backlog.append(group)
            loggedSeq = newest.seq
            pthread_cond_broadcast(changed)
        }
        if log.size >= resetBytes { try? emptyLog() }
    }

    private static func frame(_ commits: [CommitRecord], after prev: UInt64, history: UInt64) throws(HearthError) -> [UInt8] {
        try CommitValidation.check(commits, after: prev)
        let frame = CommitLog.frame(commits, history: history, prevSeq: prev)
        guard frame.count - CommitLog.headerSize <= CommitLog.maxPayload else {
            throw HearthError(.resourceExhausted, "storage: a group of \(frame.count) bytes is larger than a commit log frame holds (4 GiB)")
        }
        return frame
    }

    /// Below this much free space on the data directory's file system, groups are applied to SQLite before
    /// they are acknowledged (`appendApplying`).
    static let tightDiskBytes: UInt64 = 256 << 20

    /// True when the file system holding the log has less than `tightDiskBytes` free.
    private func diskIsTight() -> Bool {
        var fs = statvfs()
        guard statvfs(log.path, &fs) == 0 else { return false }
        return UInt64(fs.f_bavail) * UInt64(fs.f_frsize) < Self.tightDiskBytes
    }

    /// On a nearly full disk, a group SQLite could not find room for must not be acknowledged first (the
    /// backlog would then be stuck behind it, and deletes with it): the group is applied to SQLite before
    /// `append` returns, after the backlog, and a group SQLite refuses is zeroed in the log again and
    /// refused. When that was for lack of space, SQLite's files are synced and the log emptied, which gives its
    /// blocks back for the deletes that free space.
    private func appendApplying(_ commits: [CommitRecord]) throws(HearthError) {
        guard let newest = commits.last else { return }
        try drain()
        let frame = try Self.frame(commits, after: lastSeq, history: history)
        let start = log.size
        do { try log.append(frame) } catch {
            if error.isDiskFull { try? emptyLog() }
            throw error
        }
        do {
            try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
                guard let w else { throw CommitValidation.closed }
                try w.apply(commits)
            }
        } catch {
            log.rollBack(to: start, length: frame.count)
            if error.isDiskFull, log.failure == nil { try? emptyLog() }
            throw error
        }
        try! locked { loggedSeq = newest.seq }
        if log.size >= resetBytes { try? emptyLog() }
    }

    /// Under `mutex`: waits while the backlog is over its bounds; a stopped applier is asked to try again
    /// first, and its failure thrown if that fails too.
    private func waitForRoom() throws(HearthError) {
        if failure != nil { try retryLocked() }
        while !stopping && failure == nil
                && (backlog.commitCount > Self.maxPendingCommits || backlog.imageBytes > Self.maxPendingBytes) {
            draining += 1
            pthread_cond_broadcast(changed)
            pthread_cond_wait(changed, mutex)
            draining -= 1
        }
        if let failure { throw stuck(failure) }
        if stopping { throw CommitValidation.closed }
    }

    private func stuck(_ e: HearthError) -> HearthError {
        HearthError(e.code, "\(e.message) (the commits through seq \(backlog.lastSeq ?? loggedSeq) are durable in the commit log; writes are refused until they are applied to the database)")
    }

    /// Under `mutex`: clears the applier's failure and waits for the backlog to apply.
    private func retryLocked() throws(HearthError) {
        failure = nil
        draining += 1
        defer { draining -= 1 }
        pthread_cond_broadcast(changed)
        while !backlog.isEmpty && failure == nil && !stopping { pthread_cond_wait(changed, mutex) }
        if let failure { throw stuck(failure) }
    }

    /// Waits until SQLite holds every acknowledged commit (for reads of SQLite's files themselves: backups,
    /// path listings). Throws the applier's failure when it cannot.
    func drain() throws(HearthError) {
        try locked { () throws(HearthError) in
            if failure != nil { try retryLocked(); return }
            draining += 1
            defer { draining -= 1 }
            pthread_cond_broadcast(changed)
            while !backlog.isEmpty && failure == nil && !stopping { pthread_cond_wait(changed, mutex) }
            if let failure { throw stuck(failure) }
        }
    }

    /// Once nothing is pending, syncs SQLite's files and empties the log (`SQLiteWriter.syncAndEmptyLog`).
    /// Called by the writer thread, so no group is appended meanwhile.
    private func emptyLog() throws(HearthError) {
        try drain()
        try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
            guard let w else { throw CommitValidation.closed }
            try w.syncAndEmptyLog()
        }
    }

    /// Tests: keeps the newest `groups` groups pending (0: none), so reads exercise the merge.
    func hold(_ groups: Int) {
        try! locked {
            heldGroups = groups
            pthread_cond_broadcast(changed)
        }
    }

    /// Applies the backlog and stops the thread. Returns false when the backlog could not be applied (the
    /// log keeps it for the next open).
    func close() -> Bool {
        let applied = (try? drain()) != nil
        guard let t = try! locked({ () -> pthread_t? in
            stopping = true
            pthread_cond_broadcast(changed)
            defer { thread = nil }
            return thread
        }) else { return applied }
        pthread_join(t, nil)
        return applied
    }

    // MARK: The applier thread

    private func run() {
        while true {
            pthread_mutex_lock(mutex)
            var work: [PendingGroup] = []
            var deadline: timespec?
            while true {
                if stopping { break }
                let keep = draining > 0 ? 0 : heldGroups
                if failure == nil, backlog.groups.count > keep {
                    if draining > 0 || backlog.commitCount >= Self.batchCommits { work = Array(backlog.groups.dropLast(keep)); break }
                    if let d = deadline, Self.passed(d) { work = Array(backlog.groups.dropLast(keep)); break }
                    if deadline == nil { deadline = Self.now(plus: Self.batchInterval) }
                    var d = deadline!
                    pthread_cond_timedwait(changed, mutex, &d)
                    continue
                }
                deadline = nil
                pthread_cond_wait(changed, mutex)
            }
            pthread_mutex_unlock(mutex)
            if work.isEmpty { return }
            let records = work.flatMap(\.records)
            let result = Result { () throws(HearthError) in
                try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
                    guard let w else { throw CommitValidation.closed }
                    try w.apply(records)
                }
            }
            pthread_mutex_lock(mutex)
            switch result {
            case .success:
                backlog.removeThrough(records.last!.seq)
                appliedGroups += work.count
                transactions += 1
                largestTransaction = max(largestTransaction, records.count)
            case .failure(let e):
                failure = e
            }
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(mutex)
        }
    }

    private static func now(plus ns: Int) -> timespec {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        let total = Int(t.tv_nsec) + ns
        t.tv_sec += total / 1_000_000_000
        t.tv_nsec = total % 1_000_000_000
        return t
    }

    private static func passed(_ d: timespec) -> Bool {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return t.tv_sec > d.tv_sec || (t.tv_sec == d.tv_sec && t.tv_nsec >= d.tv_nsec)
    }

    /// What the applier has done, and what it has yet to do.
    var counters: ApplierStatus {
        try! locked {
            ApplierStatus(groups: appliedGroups, transactions: transactions, largestTransaction: largestTransaction,
                            backlogCommits: backlog.commitCount)
        }
    }
}

