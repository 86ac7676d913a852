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
/// SQLite gets it later, from a thread of its own, in transactions of up to `transactionLogFactor` times the
/// log's reset size.
///
/// ```
///   writer thread (apply)                      applier thread
///   ─────────────────────                      ──────────────
///   validate, frame, append, fdatasync
///   pending += group  ── readers see it ──►    take the oldest pending groups (bounded)
///   return (acknowledged)                      one SQLite transaction, not synced
///                                              pending -= those groups
/// ```
///
/// Reads merge the pending groups with SQLite (`PendingCommits`), so they see every acknowledged commit. A start
/// after a crash or power loss applies again whatever the log holds past SQLite.
///
/// The log never waits for SQLite to be emptied: once it holds `resetBytes`, the writer renames it to
/// `CommitLog.retiredName` and starts a new one, and the applier, once it has applied the retired segment's
/// last group, syncs SQLite's files and removes the segment. Only when the log reaches `hardLimitFactor`
/// times `resetBytes` (the applier far behind, or a rotation that failed), on a full disk, and at the limit
/// while the disk is nearly full, does the writer wait for the backlog, sync and empty both. At close the
/// backlog is applied, SQLite synced and the log emptied (it stays, marking the directory as a store's).
///
/// Failures: a group SQLite refuses is already acknowledged, so it is never dropped. The applier stops and
/// keeps the backlog pending (reads still see it); the next `append` asks it to try again and, if that fails
/// too, is refused with the cause, as is every write until the backlog applies (a full disk: once space
/// returns). A restart applies the backlog from the log. Backpressure: `append` waits while the backlog holds
/// more than `maxPendingCommits` commits, `maxPendingGroups` groups or `maxPendingBytes` of images, or log
/// frames of more than `pendingLogFactor` times `resetBytes` (so an applier that falls behind slows the writer
/// down before the log can reach its hard limit, where the writer would wait for the whole backlog). One
/// transaction applies groups of at most `transactionLogFactor` times `resetBytes` of frames (at least one
/// group), so a writer waiting for room waits for at most about one such transaction. Before that, past three
/// quarters of any bound, `append` paces the writer to the applier's measured rate (`AppendPacer`), and while
/// it waits the applier applies without waiting for its interval: under sustained overload, writes slow to the
/// applier's pace by milliseconds per group rather than stopping at the bound.
///
/// Threads: `append` from one writer thread at a time; `pending` from any thread; the applier runs on its own.
final class CommitPipeline: @unchecked Sendable {
    static let maxPendingCommits = 40_000
    static let maxPendingGroups = 512
    static let maxPendingBytes: Int64 = 64 << 20
    /// The applier lets a backlog gather for up to `batchInterval`, counted from when it finds groups waiting
    /// after its last transaction, or until the backlog holds `batchWrites` document writes or a quarter of
    /// what backpressure allows (`maxPendingCommits`, `maxPendingBytes`, and `maxPendingGroups`, counted after
    /// coalescing: `groupsAreFull`), so that one transaction writes a hot
    /// page once for many commits. The write limit is etcd's backend default (`--backend-batch-limit`
    /// 10,000); the interval is five times etcd's (`--backend-batch-interval` 100 ms), so that under sustained
    /// single-document writes the write limit ends most transactions: 10,000 sets to 10,000 hot documents write
    /// each of their pages once per transaction, where 100 ms held at most ~3,800 sets, and durable sets rose
    /// 17% at the median of five rounds. Nothing waits for the applier below the
    /// bounds (the log made the groups durable, and reads merge the backlog, whose groups the applier
    /// coalesces while it waits: `coalesceFanIn`). Measured in docs/benchmarks.md, "Longer applier
    /// transactions, and the backlog coalesced".
    static let batchInterval: Int = 500_000_000   // ns
    static let batchWrites = 10_000
    /// Between transactions, the applier replaces each run of this many adjacent groups of one tier with one
    /// group of the next (`PendingGroup(coalescing:)`) whose frames fit in one transaction, so that a read,
    /// which consults every pending group, consults about seven per tier however many groups the interval
    /// gathers (groups run from the oldest, highest tiers to the newest, unless a group too large to coalesce
    /// splits a run; a commit is coalesced once per tier, ~log₈ of the groups gathered). Groups that arrive
    /// during a transaction wait for its end. The groups of the transaction in progress and the newest
    /// `heldGroups` (tests) are left as they are.
    static let coalesceFanIn = 8
    /// `append` waits while the backlog's log frames exceed this many times `resetBytes`: the active log then
    /// stays below its hard limit (`hardLimitFactor`), where the writer would wait for the whole backlog.
    static let pendingLogFactor = 6
    /// One applier transaction takes groups of at most this many times `resetBytes` of log frames. An applier
    /// that is behind writes each scattered page it dirties once per transaction: four times (32 MiB) rather
    /// than twice lets it catch up faster (a sustained fan-out's commit → last follower p99 fell from 199-231 ms
    /// to 89-137 ms in 30 s runs: docs/benchmarks.md, "Documents and index entries in key order").
    static let transactionLogFactor = 4

    /// The active log: the writer thread's (under `appending`).
    private var log: CommitLog
    private let directory: String
    private let writer: Locked<SQLiteWriter?>
    /// Paces each transaction's writes (and the checkpoint its commit may run) out to the disk.
    private let writeback: SQLiteWriteback?
    private let history: UInt64
    private let resetBytes: Int
    static let hardLimitFactor = 8
    /// Held by `append` and `close`, so that a close never runs beside an append.
    private let appending = Locked<Void>(())

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Under `mutex`:
    private var backlog = PendingCommits()
    /// The last seq the log holds (the next frame's `prevSeq`).
    private var loggedSeq: UInt64
    /// Why the applier stopped; cleared when a write or a drain asks it to try again (`waitUntilApplied`).
    private var failure: HearthError?
    /// A sync of SQLite's files or of the data directory failed: what they hold is unknown, so nothing may
    /// rely on them (no log is emptied or removed) and every write is refused until a restart recovers.
    private var poisoned: HearthError?
    /// The last seq of the retired log segment, while it exists.
    private var retiredThrough: UInt64?
    /// The active log is due to rotate and waits for the retired segment to go (`rotateOrEmpty`).
    private var rotationWaits = false
    /// Logs retired so far (renamed to `CommitLog.retiredName`), under the lock.
    private var rotationCount = 0
    /// Tests: leave the newest `heldGroups` groups pending unless draining (groups as they are then: a group
    /// coalesced before a hold counts as one).
    private var heldGroups = 0
    /// `batchInterval`, unless a test changed it (`setBatchInterval`).
    private var interval = CommitPipeline.batchInterval
    /// Tests: runs on the applier thread after each transaction, before the applied groups leave the backlog.
    private var afterTransaction: (@Sendable () -> Void)?
    private var draining = 0
    /// The last seq of the transaction the applier is running, if any: its groups are not coalesced
    /// (`coalesceNow` runs on another thread), so it removes exactly what it applied.
    private var applyingThrough: UInt64?
    private var stopping = false
    private var thread: pthread_t?
    /// Groups applied so far, in how many transactions, and the largest one in commits (diagnostics).
    private(set) var appliedGroups = 0
    private(set) var transactions = 0
    private(set) var largestTransaction = 0
    /// Groups replaced by coalesced ones so far (a coalesced group coalesced again counts again).
    private(set) var coalescedGroups = 0
    /// The soft bound's pace (`AppendPacer`), and the groups that waited for it or for the hard bound, and for
    /// how long in all (diagnostics).
    private var pacer = AppendPacer()
    private var pacedGroups = 0
    private var pacedNanos: UInt64 = 0
    private var blockedGroups = 0
    private var blockedNanos: UInt64 = 0
    /// When the wait in progress began, if the writer waits for the pace or at the bound now: `counters` counts
    /// it as it goes, so that a long stall shows while it lasts. While the writer waits for the pace, the
    /// applier applies without waiting for its interval.
    private var pacedSince: UInt64?
    private var blockedSince: UInt64?

    init(log: CommitLog, directory: String, writer: Locked<SQLiteWriter?>, writeback: SQLiteWriteback?, history: UInt64,
         loggedSeq: UInt64, resetBytes: Int) throws(HearthError) {
        self.log = log
        self.directory = directory
        self.writer = writer
        self.writeback = writeback
        self.history = history
        self.loggedSeq = loggedSeq
        self.resetBytes = resetBytes
        mutex.initialize(to: pthread_mutex_t())
        changed.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        StorageThread.initCondition(changed)   // the applier's timed wait
        thread = try StorageThread.start("applier", name: "hearth-applier") { self.run() }
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
        try appending.withLock { (_: inout Void) throws(HearthError) in
            try locked { () throws(HearthError) in if stopping { throw CommitValidation.closed } }
            guard let newest = commits.last else { return }
            if diskIsTight() { return try appendApplying(commits) }
            let (prev, started) = try locked { () throws(HearthError) -> (UInt64, UInt64) in
                let started = try waitForRoom()
                return (loggedSeq, started)
            }
            let frame = try Self.frame(commits, after: prev, history: history)
            do throws(HearthError) { try log.append(frame) } catch {
                if error.isDiskFull { try? emptyLog() }
                throw error
            }
            let group = PendingGroup(commits, logBytes: frame.count)
            try! locked {
                pacer.appended(bytes: frame.count, at: started, fill: fill)
                backlog.append(group)
                loggedSeq = newest.seq
                // Only the applier waits for groups, between its transactions: it needs a wake when its
                // untimed wait has something to take now, its batch filled before its deadline (it wakes at
                // that deadline on its own), or it has groups to coalesce.
                if applyingThrough == nil && (backlog.groups.count == heldGroups + 1 || batchIsFull || groupsAreFull
                                              || coalescibleRun() != nil) {
                    pthread_cond_broadcast(changed)
                }
            }
            if log.size >= resetBytes { rotateOrEmpty() }
        }
    }

    /// The log has outgrown `resetBytes`: retire it and start a new one, unless the last retired segment is
    /// still waiting for the applier (then the log grows, up to the hard limit, where everything is applied
    /// and the log emptied).
    private func rotateOrEmpty() {
        if log.size >= resetBytes * Self.hardLimitFactor { try? emptyLog(); return }
        let retired = try! locked { () -> Bool in
            // The log is due to rotate while the last retired segment still waits for the applier: it applies
            // at once rather than at its interval, so the two segments stay near the reset size.
            if retiredThrough != nil && !rotationWaits {
                rotationWaits = true
                pthread_cond_broadcast(changed)
            }
            return retiredThrough != nil
        }
        guard !retired, log.size >= nextRotationBytes else { return }
        rotate()
    }

    /// The size at which the next rotation is tried: `resetBytes`, or another `resetBytes` after one failed.
    private var nextRotationBytes = 0

    private var retiredPath: String { DataDirectory.file(CommitLog.retiredName, in: directory) }

    /// Renames the log to `CommitLog.retiredName` (synced into the directory) and opens a new one. When the
    /// rename fails, the log keeps its name and takes the next frames, and the next rotation is tried after
    /// another `resetBytes`. Once the rename has happened, any later failure leaves the directory in a state
    /// that is not known to be durable: the pipeline is poisoned (recovery reads both names).
    private func rotate() {
        let active = log.path
        guard rename(active, retiredPath) == 0 else {
            nextRotationBytes = log.size + resetBytes
            return
        }
        do {
            try DataDirectory.sync(directory)
            let fresh = try CommitLog(directory: directory)
            log.close()
            log = fresh
            nextRotationBytes = 0
            try! locked {
                retiredThrough = loggedSeq
                rotationCount += 1
            }
        } catch {
            // The frames are whole and in order under whichever name the file has; refuse further groups
            // rather than append to a log whose name is not known to be durable.
            _ = rename(retiredPath, active)
            poison(error)
        }
    }

    private static func frame(_ commits: [CommitRecord], after prev: UInt64, history: UInt64) throws(HearthError) -> [UInt8] {
        try CommitValidation.check(commits, after: prev)
        try SQLiteSchema.checkKeyable(commits)
        let frame = CommitLog.frame(commits, history: history, prevSeq: prev)
        guard frame.count - CommitLog.headerSize <= CommitLog.maxPayload else {
            throw HearthError(.resourceExhausted, "storage: a group of \(frame.count) bytes is larger than a commit log frame holds (4 GiB)")
        }
        return frame
    }

    /// Below this much free space on the data directory's file system, groups are applied to SQLite before
    /// they are acknowledged (`appendApplying`).
    static let tightDiskBytes: UInt64 = 256 << 20

    /// True when the file system holding the log has less than `tightDiskBytes` free, or less than four
    /// times the backlog's images (what SQLite may need for them: documents, change rows, WAL copies).
    private func diskIsTight() -> Bool {
        var fs = statvfs()
        guard statvfs(log.path, &fs) == 0 else { return false }
        let free = UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
        let backlogBytes = UInt64(max(0, try! locked { backlog.imageBytes }))
        return free < max(Self.tightDiskBytes, 4 * backlogBytes)
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
                writeback?.begin()
                defer { writeback?.end() }
                try w.apply(commits)
            }
        } catch {
            log.rollBack(to: start, length: frame.count)
            if error.isDiskFull, log.failure == nil { try? emptyLog() }
            throw error
        }
        try! locked { loggedSeq = newest.seq }
        // Nothing is pending here, so emptying is cheap, and a nearly full disk keeps no retired segment.
        if log.size >= resetBytes { try? emptyLog() }
    }

    /// Under `mutex`: waits while the backlog is over its bounds (the hard bound: until the applier has made
    /// room), then, while it is over the soft bound, until the pace lets the next group start (`AppendPacer`);
    /// returns when the group starts. A stopped applier is asked to try again first (`waitUntilApplied`), and
    /// its failure thrown if that fails too.
    private func waitForRoom() throws(HearthError) -> UInt64 {
        if let poisoned { throw poisoned }
        if failure != nil { try waitUntilApplied() }
        var now = StorageThread.nanos()
        if fill > 1 {
            let since = now
            blockedGroups += 1
            blockedSince = since
            while !stopping && failure == nil && poisoned == nil && fill > 1 {
                draining += 1
                pthread_cond_broadcast(changed)
                pthread_cond_wait(changed, mutex)
                draining -= 1
            }
            now = StorageThread.nanos()
            blockedNanos &+= now &- since
            blockedSince = nil
        }
        var start = pacer.start(now: now, fill: fill)
        if start > now {
            let since = now
            pacedGroups += 1
            pacedSince = since
            pthread_cond_broadcast(changed)   // the applier applies at once while a writer is paced
            // The applier's broadcast after each transaction re-evaluates the fill: below the soft bound the
            // group starts at once.
            while !stopping && failure == nil && poisoned == nil && start > now {
                var deadline = StorageThread.deadline(at: start)
                pthread_cond_timedwait(changed, mutex, &deadline)
                now = StorageThread.nanos()
                start = pacer.start(now: now, fill: fill)
            }
            pacedNanos &+= now &- since
            pacedSince = nil
        }
        if let poisoned { throw poisoned }
        if let failure { throw stuck(failure) }
        if stopping { throw CommitValidation.closed }
        return now
    }

    /// Under `mutex`: the largest share of one of `append`'s bounds the backlog holds (over 1: `append` waits
    /// for the applier to make room).
    private var fill: Double {
        max(Double(backlog.commitCount) / Double(Self.maxPendingCommits),
            Double(backlog.groups.count) / Double(Self.maxPendingGroups),
            Double(backlog.imageBytes) / Double(Self.maxPendingBytes),
            Double(backlog.logBytes) / Double(resetBytes * Self.pendingLogFactor))
    }

    private func stuck(_ e: HearthError) -> HearthError {
        HearthError(e.code, "\(e.message) (the commits through seq \(backlog.lastSeq ?? loggedSeq) are durable in the commit log; writes are refused until they are applied to the database)")
    }

    /// Under `mutex`: clears the applier's failure (it tries again) and waits until every group acknowledged
    /// so far is applied; throws what stops that. Groups appended meanwhile are not waited for, so steady
    /// writes cannot hold a drain off (with `appending` held, as `append`, `emptyLog` and `close` call it,
    /// none can be appended and the backlog ends empty).
    private func waitUntilApplied() throws(HearthError) {
        if let poisoned { throw poisoned }
        failure = nil
        let target = loggedSeq
        draining += 1
        defer { draining -= 1 }
        pthread_cond_broadcast(changed)
        while holdsGroup(through: target) && failure == nil && poisoned == nil && !stopping { pthread_cond_wait(changed, mutex) }
        if let poisoned { throw poisoned }
        if let failure { throw stuck(failure) }
        if holdsGroup(through: target) { throw CommitValidation.closed }
    }

    /// Under `mutex`: the backlog still holds a group acknowledged at or before `seq` (groups are in seq order).
    private func holdsGroup(through seq: UInt64) -> Bool {
        guard let oldest = backlog.groups.first else { return false }
        return oldest.lastSeq <= seq
    }

    /// Waits until SQLite holds every commit acknowledged before the call (for reads of SQLite's files
    /// themselves: backups, path listings, compaction); commits acknowledged while it waits may still be
    /// pending when it returns. Throws the applier's failure when it cannot.
    func drain() throws(HearthError) {
        try locked { () throws(HearthError) in try waitUntilApplied() }
    }

    /// Once nothing is pending, syncs SQLite's files, then empties the log and removes the retired segment.
    /// Called with `appending` held, so no group is appended meanwhile.
    private func emptyLog() throws(HearthError) {
        try drain()
        try syncDatabase()
        try log.reset()
        try removeRetired()
    }

    /// Syncs SQLite's files (any thread but the applier's, which holds the writer lock already). When that fails
    /// the kernel may have dropped the pages it could not write and a second sync could succeed without them:
    /// the pipeline is poisoned.
    private func syncDatabase() throws(HearthError) {
        try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
            guard let w else { throw CommitValidation.closed }
            try syncFiles(of: w)
        }
    }

    private func syncFiles(of w: SQLiteWriter) throws(HearthError) {
        if let p = try! locked({ poisoned }) { throw p }
        do { try w.connection.syncFiles() } catch {
            poison(error)
            throw error
        }
    }

    private func poison(_ error: HearthError) {
        try! locked {
            if poisoned == nil {
                poisoned = HearthError(.unavailable, "\(error.message); commits are refused until hearthd restarts and recovers")
            }
            pthread_cond_broadcast(changed)
        }
    }

    /// Removes the retired segment (SQLite's synced files hold all of it), synced out of the directory.
    private func removeRetired() throws(HearthError) {
        guard try! locked({ retiredThrough }) != nil else { return }
        guard unlink(retiredPath) == 0 || errno == ENOENT else {
            let error = HearthError(.unavailable, "storage: removing \(retiredPath) failed: \(DataDirectory.describe(errno))")
            poison(error)
            throw error
        }
        do { try DataDirectory.sync(directory) } catch {
            poison(error)
            throw error
        }
        try! locked {
            retiredThrough = nil
            rotationWaits = false
        }
    }

    /// Logs retired since the pipeline started.
    var rotations: Int { try! locked { rotationCount } }

    /// Tests: `body` runs on the applier thread after each transaction (nil: nothing).
    func afterEachTransaction(_ body: (@Sendable () -> Void)?) {
        try! locked { afterTransaction = body }
    }

    /// Tests: keeps the newest `groups` groups pending (0: none), so reads exercise the merge.
    func hold(_ groups: Int) {
        try! locked {
            heldGroups = groups
            pthread_cond_broadcast(changed)
        }
    }

    /// Tests: waits until the writer waits for the pace (true), or `seconds` pass (false).
    func waitUntilPaced(within seconds: Double) -> Bool {
        try! locked { StorageThread.wait(on: changed, mutex, within: seconds) { pacedSince != nil } }
    }

    /// Tests: takes `bytesPerSecond` of log frames as the applier's rate, as if measured over a whole window
    /// (`AppendPacer.assume`); later transactions move it as measured ones do.
    func assumeApplierRate(_ bytesPerSecond: Double) {
        try! locked { pacer.assume(rate: bytesPerSecond) }
    }

    /// Tests: how long the applier lets a backlog gather (nanoseconds), from its next wait on.
    func setBatchInterval(_ nanoseconds: Int) {
        try! locked {
            interval = nanoseconds
            pthread_cond_broadcast(changed)
        }
    }

    /// Tests: waits up to `seconds` until the applier has coalesced every run it would; false if it had not
    /// (a stalled applier coalesces nothing).
    func waitUntilCoalesced(within seconds: Double) -> Bool {
        try! locked { StorageThread.wait(on: changed, mutex, within: seconds) { coalescibleRun() == nil } }
    }

    /// Tests: coalesces, on the calling thread, every run the applier would, the held groups included (never
    /// the groups of a transaction in progress).
    func coalesceNow() {
        try! locked {
            let held = heldGroups
            heldGroups = 0
            defer { heldGroups = held }
            while let run = coalescibleRun() { replace(run, with: PendingGroup(coalescing: Array(backlog.groups[run]))) }
        }
    }

    /// Applies the backlog and stops the thread; then, when SQLite holds everything and its files sync,
    /// empties the log and removes the retired segment (a cleanly closed data directory holds the database, an
    /// empty commit.log and LOCK; the empty log marks the directory as a store's, so a database that loses its
    /// contents is refused rather than replaced by a new store, `SQLiteStore.init`). When the backlog cannot
    /// be applied, the log keeps it for the next open.
    func close() {
        appending.withLock { _ in
            let applied = (try? drain()) != nil
            let t = try! locked { () -> pthread_t? in
                stopping = true
                pthread_cond_broadcast(changed)
                defer { thread = nil }
                return thread
            }
            if let t { pthread_join(t, nil) }
            defer { log.close() }
            guard applied, (try? syncDatabase()) != nil else { return }
            _ = unlink(retiredPath)
            log.empty()
        }
    }

    // MARK: The applier thread

    private func run() {
        while true {
            pthread_mutex_lock(mutex)
            var work: [PendingGroup] = []
            var deadline: timespec?
            while true {
                if stopping || poisoned != nil { break }
                let keep = draining > 0 ? 0 : heldGroups
                if failure == nil, backlog.groups.count > keep {
                    // A writer paced to this thread's rate, measured as if it applied back to back, makes it do so.
                    let due = draining > 0 || pacedSince != nil || batchIsFull || rotationWaits || deadline.map(StorageThread.passed) == true
                    if deadline == nil { deadline = StorageThread.deadline(after: interval) }
                    if !due, let run = coalescibleRun() {
                        let groups = Array(backlog.groups[run])
                        pthread_mutex_unlock(mutex)
                        let coalesced = PendingGroup(coalescing: groups)
                        pthread_mutex_lock(mutex)
                        // Only this thread removes groups, so `run` still names the same ones, unless a test
                        // coalesced them meanwhile (`coalesceNow`).
                        if run.upperBound <= backlog.groups.count && zip(backlog.groups[run], groups).allSatisfy(===) {
                            replace(run, with: coalesced)
                        }
                        continue
                    }
                    // Groups left that cannot be coalesced (too large, or held by a test) count as well.
                    if due || groupsAreFull {
                        work = transaction(from: backlog.groups.dropLast(keep))
                        applyingThrough = work.last!.lastSeq
                        break
                    }
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
            let retired = try! locked { retiredThrough }
            // The transaction's time from when it holds SQLite's writer (not a wait for it, which a compaction or a
            // backup may hold for long) to its end, the sync and removal of a retired segment included, is what
            // `AppendPacer` measures the rate by: the applier's cycle, as a writer it paces sees it.
            var began: UInt64 = 0
            writeback?.begin()
            let result = Result { () throws(HearthError) in
                try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) in
                    guard let w else { throw CommitValidation.closed }
                    began = StorageThread.nanos()
                    try w.apply(records)
                    // The retired segment's last group is in SQLite: once SQLite's files are synced, the
                    // segment has nothing left to give.
                    if let retired, records.last!.seq >= retired { try? syncFiles(of: w) }
                }
            }
            writeback?.end()
            if let retired, records.last!.seq >= retired, case .success = result, try! locked({ poisoned }) == nil {
                try? removeRetired()
            }
            let took = began == 0 ? 0 : StorageThread.nanos() &- began
            try! locked { afterTransaction }?()
            pthread_mutex_lock(mutex)
            switch result {
            case .success:
                pacer.applied(bytes: work.reduce(0) { $0 + $1.logBytes }, nanos: took)
                backlog.removeThrough(records.last!.seq)
                appliedGroups += work.reduce(0) { $0 + $1.acknowledgedGroups }
                transactions += 1
                largestTransaction = max(largestTransaction, records.count)
            case .failure(let e):
                failure = e
            }
            applyingThrough = nil
            pthread_cond_broadcast(changed)
            pthread_mutex_unlock(mutex)
        }
    }

    /// The oldest groups of `groups` that one transaction applies: up to `transactionLogFactor` times
    /// `resetBytes` of log frames, and at least one group.
    private func transaction(from groups: ArraySlice<PendingGroup>) -> [PendingGroup] {
        let limit = resetBytes * Self.transactionLogFactor
        var bytes = 0
        var end = groups.startIndex
        while end < groups.endIndex {
            bytes += groups[end].logBytes
            if bytes > limit && end > groups.startIndex { break }
            end += 1
        }
        return Array(groups[groups.startIndex..<end])
    }

    /// Under `mutex`: `coalesceFanIn` adjacent groups of one tier to coalesce, the oldest such of the newest
    /// run that has them, whose frames fit in one transaction (so that `transaction(from:)` still bounds what a
    /// transaction applies); nil when there are none. Leaves out the newest `heldGroups` (tests) and the
    /// groups of the transaction in progress.
    private func coalescibleRun() -> Range<Int>? {
        let groups = backlog.groups
        let fanIn = Self.coalesceFanIn
        let limit = resetBytes * Self.transactionLogFactor
        let floor = applyingThrough.map { seq in groups.prefix { $0.lastSeq <= seq }.count } ?? 0
        var end = groups.count - heldGroups
        while end - floor >= fanIn {
            let tier = groups[end - 1].tier
            var start = end - 1
            while start > floor && groups[start - 1].tier == tier { start -= 1 }
            var first = start
            while first + fanIn <= end {
                let run = first ..< first + fanIn
                if groups[run].reduce(0, { $0 + $1.logBytes }) <= limit { return run }
                first += 1
            }
            end = start
        }
        return nil
    }

    /// Under `mutex`: puts `coalesced` in place of the groups at `run`, counts them, and tells `waitUntilCoalesced`.
    private func replace(_ run: Range<Int>, with coalesced: PendingGroup) {
        backlog.coalesce(run, into: coalesced)
        coalescedGroups += run.count
        pthread_cond_broadcast(changed)
    }

    /// Under `mutex`: the backlog is as large as one transaction should wait for.
    private var batchIsFull: Bool {
        backlog.writeCount >= Self.batchWrites || backlog.commitCount >= Self.maxPendingCommits / 4
            || backlog.imageBytes >= Self.maxPendingBytes / 4
    }

    /// Under `mutex`: the backlog holds a quarter of the groups `append` waits at. The applier checks it after
    /// coalescing what it can (groups that arrived during a transaction are coalesced before it applies).
    private var groupsAreFull: Bool { backlog.groups.count >= Self.maxPendingGroups / 4 }

    /// What the applier has done, and what it has yet to do.
    var counters: ApplierStatus {
        try! locked {
            let now = StorageThread.nanos()
            let paced = pacedNanos &+ (pacedSince.map { now &- $0 } ?? 0)
            let blocked = blockedNanos &+ (blockedSince.map { now &- $0 } ?? 0)
            return ApplierStatus(groups: appliedGroups, transactions: transactions, largestTransaction: largestTransaction,
                                 backlogCommits: backlog.commitCount, backlogGroups: backlog.groups.count,
                                 coalescedGroups: coalescedGroups, stalled: (poisoned ?? failure)?.message,
                                 pacedGroups: pacedGroups, pacedMicros: paced / 1000,
                                 blockedGroups: blockedGroups, blockedMicros: blocked / 1000)
        }
    }
}

