import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// This node's part in a cluster over a shared store (docs/architecture.md, "Nodes over PostgreSQL"):
///
/// - the election: every third of the lease, the committer renews its lease and the followers run a round of
///   the election (`ClusterStore.campaign`), on a thread of its own;
/// - the feed: a follower reads the commits after its published seq from the store's `CommitFeed` on another
///   thread, and publishes them through the engine (`Engine.adopt`) whenever the engine has nothing pending;
/// - forwarding: a follower sends the writes its clients make to the committer (`PeerLink`) and answers each
///   once it has published the seq the committer gave it.
///
/// The role moves follower → promoting (elected, publishing up to the stored last seq of the new term) →
/// committer, and back to follower when a renewal fails. Loop thread only, but for the work handed to the
/// two threads.
final class ClusterCoordinator {
    unowned let server: Server
    let store: any ClusterStore
    let settings: ClusterSettings
    private(set) var role: ClusterRole = .follower(committer: nil)
    private let electionThread: WorkerPool
    private let feedThread: WorkerPool
    private let feed: FeedBox
    private var electing = false
    private var tailing = false
    private var stopped = false
    private var roundTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    /// Commits read from the feed and not yet published (the engine had a batch of its own pending).
    private var fetched: [CommitRecord] = []
    /// Limit windows the next adoption would refill are being read on reader threads (`Server.windowsReady`),
    /// for the fetched records up to this seq.
    private var readingWindows = false
    private var windowsBatchThrough: UInt64?
    /// The link to the committer, made on the first write forwarded to it.
    private var link: PeerLink?
    /// Forwarded writes the committer answered, waiting until this node has published their seq.
    private var answered: [(seq: UInt64, pending: PeerLink.Pending, line: [UInt8], failed: Bool)] = []
    /// Failures of the election or the feed, logged at most once a second.
    private lazy var problems = LogThrottle(loop: server.loop, logger: server.logger, summary: "more cluster errors")
    /// Commits published from the feed, and writes forwarded (for stats).
    /// Until when (loop clock, ms) this node may act as the committer without hearing back from a renewal:
    /// three quarters of a lease after the last renewal (or election) was sent. Past it, the node steps down
    /// before serving anything, since another node may be elected by now (`checkLease`).
    private var leaseValidUntil: UInt64 = 0
    /// Set when the database's history went behind what this node published (PostgreSQL lost acknowledged
    /// commits in a failover): the node stops campaigning and refuses to commit until it is restarted.
    private var historyLost: String?
    private(set) var adopted: UInt64 = 0
    private(set) var forwarded: UInt64 = 0
    private(set) var elections = 0

    init(server: Server, store: any ClusterStore, settings: ClusterSettings) throws(HearthError) {
        self.server = server
        self.store = store
        self.settings = settings
        electionThread = WorkerPool(loop: server.loop, threads: 1, name: "hearth-election")
        feedThread = WorkerPool(loop: server.loop, threads: 1, name: "hearth-feed")
        feed = FeedBox(try store.feed(recheck: 0.25))
    }

    private var engine: Engine { server.engine }
    private var node: ClusterNode { settings.node }

    /// Runs one round of the election at once (a single node is the committer before it serves), then the
    /// rounds and the feed. Loop thread, before serving.
    func start() throws(HearthError) {
        engine.gate.expectsPublications = true
        becomeFollower(committer: nil, quietly: true)
        settle(try store.campaign(node, leaseMs: settings.leaseMs))
        let every = settings.roundMs
        roundTimer = server.loop.timer(after: every, repeat: every) { [unowned self] in self.electionRound() }
        fetchMore()
    }

    /// Stops the rounds and the feed; a committer gives its lease up so that another node takes over at
    /// once. After in-flight commits are done (shutdown waits for them).
    func stop() {
        guard !stopped else { return }
        stopped = true
        roundTimer?.cancel()
        retryTimer?.cancel()
        electionThread.close()
        feedThread.close()
        feed.feed.close()
        link?.fail(HearthError(.unavailable, "this node is shutting down"))
        if let term = role.term {
            store.resign(term: term)
            server.logger.info("cluster: gave up the committer's lease (term \(term))")
        }
    }

    // MARK: The election

    private func electionRound() {
        checkLease()
        guard !electing, !stopped, historyLost == nil else { return }
        electing = true
        let store = self.store, node = self.node, leaseMs = settings.leaseMs
        let outcome = ElectionOutcome()
        let term = role.term
        let sentAt = server.loop.now
        let publishedAtSend = engine.lastDurableSeq
        electionThread.submit({
            do throws(HearthError) {
                if let term { outcome.renewed = try store.renewLease(term: term, leaseMs: leaseMs) } else { outcome.lease = try store.campaign(node, leaseMs: leaseMs) }
            } catch {
                outcome.error = error
            }
        }, done: { [unowned self] in
            electing = false
            guard !stopped else { return }
            if let error = outcome.error {
                problems.note("cluster: \(term == nil ? "election round" : "renewing the lease") failed (tried again in \(settings.roundMs) ms): \(error.message)")
                return
            }
            if let renewed = outcome.renewed, term == role.term {
                if renewed {
                    leaseValidUntil = sentAt + UInt64(settings.leaseMs * 3 / 4)
                } else {
                    server.logger.warn("cluster: lost the committer's lease (term \(term ?? 0)): another node is elected, or the session to the database ended; following")
                    becomeFollower(committer: nil, quietly: false)
                }
            } else if let lease = outcome.lease, role.term == nil {
                settle(lease, sentAt: sentAt, published: publishedAtSend)
            }
        })
    }

    /// Takes the outcome of a round of the election.
    /// `published`: this node's published seq when the round was sent (the feed may have moved it on since,
    /// past what the round read).
    private func settle(_ lease: CommitterLease, sentAt: UInt64? = nil, published: UInt64? = nil) {
        storeSeq = max(storeSeq, lease.lastSeq)
        let published = published ?? engine.lastDurableSeq
        if published > lease.lastSeq {
            // The database is behind what this node published: acknowledged commits were lost (a failover to a
            // standby that lacked them). Continuing would serve two histories under one seq.
            historyLost = "this node published seq \(published) but the database's last seq is \(lease.lastSeq): PostgreSQL lost commits it had acknowledged (a failover to a standby that lacked them?)"
            server.logger.error("cluster: \(historyLost!); this node stops committing and campaigning: restart it to serve the database's history")
            if lease.isMine { store.resign(term: lease.term) }
            role = .follower(committer: nil)
            engine.commitRefusal = HearthError(.unavailable, historyLost!)
            engine.storeMayLead = true
            dropLink(HearthError(.unavailable, "this node's history is not the database's"))
            return
        }
        if lease.isMine {
            leaseValidUntil = (sentAt ?? server.loop.now) + UInt64(settings.leaseMs * 3 / 4)
            elections += 1
            role = .promoting(term: lease.term, from: lease.lastSeq)
            engine.commitRefusal = HearthError(.unavailable, "this node was just elected committer and is publishing up to seq \(lease.lastSeq) first; try again")
            server.logger.info("cluster: \(node.name) elected committer, term \(lease.term); publishing up to seq \(lease.lastSeq) first")
            dropLink(HearthError(.unavailable, "this node became the committer before the previous one answered"))
            publishFetched()
            return
        }
        guard case .follower(let known) = role else { return }
        // A lease naming this node is one of its own lingering sessions (the next round ends it): no
        // committer to forward to meanwhile.
        let committer = lease.committer?.name == node.name ? nil : lease.committer
        if known != committer {
            if let c = committer {
                server.logger.info("cluster: following committer \(c.name) at \(c.address ?? "(no address)"), term \(lease.term)")
            }
            becomeFollower(committer: committer, quietly: true)
        }
    }

    /// A committer (or a node being promoted) that has not heard back from a renewal within three quarters of
    /// a lease steps down at once: another node may hold the lease by now, and this node must neither serve
    /// reads from a store it no longer alone writes nor commit. Called before every read and every round.
    func checkLease() {
        guard role.term != nil, server.loop.now > leaseValidUntil else { return }
        server.logger.warn("cluster: no renewal of the committer's lease confirmed for \(settings.leaseMs * 3 / 4) ms: this node may have lost the committer's lease; following until the next election round")
        becomeFollower(committer: nil, quietly: false)
    }

    private func becomeFollower(committer: ClusterNode?, quietly: Bool) {
        role = .follower(committer: committer)
        engine.commitRefusal = HearthError(.unavailable, "this node is a follower and does not commit; run this on the committer\(committer.map { " (\($0.name) at \($0.address ?? "no address"))" } ?? "")")
        engine.storeMayLead = true
        if link?.committer != committer {
            dropLink(HearthError(.unavailable, "the committer changed before it answered"))
        }
        fetchMore()
    }

    /// Once elected: commits once every commit of earlier terms is published and nothing of this node is
    /// pending.
    private func checkPromotion() {
        guard case .promoting(let term, let from) = role, engine.isIdle, engine.lastDurableSeq >= from else { return }
        role = .committer(term: term)
        engine.continueFromPublished()
        engine.storeMayLead = false
        engine.commitRefusal = nil
        server.logger.info("cluster: \(node.name) is the committer, term \(term), from seq \(engine.lastDurableSeq)")
    }

    // MARK: The feed

    private func fetchMore() {
        guard !tailing, !stopped else { return }
        if case .committer = role { return }   // its own commits are published as they land
        tailing = true
        let after = max(engine.lastDurableSeq, fetched.last?.seq ?? 0)
        let feed = self.feed
        let outcome = FeedOutcome()
        feedThread.submit({
            do throws(HearthError) {
                outcome.records = try feed.feed.next(after: after, limit: 1000, timeout: 0.25)
            } catch {
                outcome.error = error
            }
        }, done: { [unowned self] in
            tailing = false
            guard !stopped else { return }
            if let error = outcome.error {
                problems.note("cluster: reading the commit feed failed (tried again in 250 ms): \(error.message)")
                retryLater()
                return
            }
            guard let records = outcome.records else { return fellBehind() }
            fetched += records
            publishFetched()
            fetchMore()
        })
    }

    /// The change log no longer holds the commits after this node's published seq (retention pruned them
    /// while the node was stalled): it moves to the store's seq without them, and every listener gets its
    /// whole result again (a reset, as a resume from a pruned seq), then it tails the feed from there. Where
    /// it moves to is read on the feed's thread, and each listener's result on a reader thread
    /// (`Server.readAfterReset`): the loop reads nothing.
    private func fellBehind() {
        fetched.removeAll()
        guard engine.isIdle else { return retryLater() }
        let was = engine.lastDurableSeq
        let store = self.store
        tailing = true
        feedThread.submit({ () -> Result<Engine.ResetPoint, HearthError> in
            do throws(HearthError) { return .success(try Engine.ResetPoint.read(from: store)) } catch { return .failure(error) }
        }, done: { [unowned self] (point: Result<Engine.ResetPoint, HearthError>) in
            tailing = false
            guard !stopped else { return }
            switch point {
            case .failure(let error):
                problems.note("cluster: this node fell behind the change log's retention at seq \(was), and reading the store's seq failed (tried again in 1 s): \(error.message)")
                retryLater(ms: 1000)
            case .success(let point):
                guard engine.isIdle else { return retryLater() }
                let reads = engine.reset(to: point)
                server.readAfterReset(reads)
                server.logger.warn("cluster: this node fell behind the change log's retention at seq \(was) (the commits after it were pruned); it moved to seq \(engine.lastDurableSeq) and reset its listeners (\(reads.count))")
                answerPublished()
                checkPromotion()
                fetchMore()
            }
        })
    }

    private func retryLater(ms: UInt64 = 250) {
        retryTimer?.cancel()
        retryTimer = server.loop.timer(after: ms) { [unowned self] in
            retryTimer = nil
            fetchMore()
        }
    }

    /// Publishes what the feed brought, if the engine has nothing of its own pending; else it waits for
    /// `engineSettled`.
    private func publishFetched() {
        let published = engine.lastDurableSeq
        if let i = fetched.firstIndex(where: { $0.seq > published }) {
            if i > 0 { fetched.removeFirst(i) }
        } else {
            fetched.removeAll()
        }
        if !fetched.isEmpty, engine.isIdle, !readingWindows {
            // A window the publication would refill is read first, off the loop. The batch is the records
            // fetched when that began: what the feed brings meanwhile waits for the next publication, so the
            // rounds of reads end (each settles a refill of the same batch).
            let through = windowsBatchThrough ?? fetched[fetched.count - 1].seq
            let count = fetched.firstIndex { $0.seq > through } ?? fetched.count
            let batch = Array(fetched[..<count])
            guard server.windowsReady(for: batch, whenRead: { [unowned self] in
                readingWindows = false
                if !stopped { publishFetched() }
            }) else {
                readingWindows = true
                windowsBatchThrough = through
                return
            }
            windowsBatchThrough = nil
            fetched.removeFirst(count)
            adopted += UInt64(batch.count)
            server.loop.boundsFlushPasses = Server.boundsFlushPasses(after: batch)   // as for a batch of its own
            engine.adopt(batch)
            answerPublished()
            if !fetched.isEmpty { return publishFetched() }   // what came while the windows were read
        }
        checkPromotion()
    }

    /// The engine finished a batch of its own (`Server.batchLanded`). A failed batch left seqs assigned that
    /// no commit holds: while this node commits, its next commit continues the published seq, so the log it
    /// writes for the followers has no gap.
    func engineSettled() {
        guard !stopped else { return }
        if role.term != nil, engine.isIdle, engine.lastAssignedSeq > engine.lastDurableSeq { engine.continueFromPublished() }
        publishFetched()
    }

    // MARK: Forwarding

    /// A write (or an index or TTL change) that a follower sends to the committer: true when it was forwarded
    /// or refused here, false when this node runs it itself (it is the committer, or becoming it).
    func forward(_ line: UnsafeRawBufferPointer, id: [UInt8]?, command: Command, session: Session) -> Bool {
        guard case .follower(let committer) = role else { return false }
        let dispatcher = server.dispatcher
        guard let committer else {
            electionRound()   // at once, not at the next tick: the committer may just have gone
            dispatcher.replyError(HearthError(.unavailable, "no committer is elected yet; try again").prefixed(command.name), id: id, session: session)
            return true
        }
        if server.access.enforcing && server.access.adminKeyForPeers == nil {
            dispatcher.replyError(HearthError(.failedPrecondition, "this node is a follower and, while rules are enforced, forwards writes only with --admin-key-file (the same key on every node); write to the committer \(committer.name) at \(committer.address ?? "(no address)")").prefixed(command.name), id: id, session: session)
            return true
        }
        let link = self.link ?? makeLink(committer)
        forwarded += 1
        let slot = session.beginWrite()
        link.forward(line, as: session.principal,
                     PeerLink.Pending(session: session, slot: slot, id: id, op: command.name,
                                      timing: RequestTiming(slot: command.slot, started: ServerMetrics.nanos())))
        return true
    }

    private func makeLink(_ committer: ClusterNode) -> PeerLink {
        let l = PeerLink(loop: server.loop, committer: committer, maxLineBytes: max(server.config.maxResponseBytes, server.config.maxLineBytes) + 4096,
                         adminKey: server.access.enforcing ? server.access.adminKeyForPeers : nil)
        l.onAnswer = { [unowned self] p, line, answer in forwardAnswered(p, line: line, answer) }
        l.onPush = { p, line in if !p.session.closed { p.session.conn.send(line) } }
        l.onFailure = { [unowned self, unowned l] owed, error in
            if link === l {
                link = nil
                electionRound()   // the committer may be gone: a round now rather than at the next tick
            }
            for p in owed { finish(p, line: server.dispatcher.errorLine(error.prefixed(p.op), id: p.id), failed: true) }
        }
        link = l
        l.open()
        return l
    }

    private func dropLink(_ error: HearthError) {
        link?.fail(error)
        link = nil
    }

    /// The committer's answer to a forwarded write: sent once this node has published its seq (a commit's, or
    /// the seq a refusal was decided at: the client's next read here must not find what the refusal saw
    /// missing, or miss what it saw).
    private func forwardAnswered(_ p: PeerLink.Pending, line: [UInt8], _ answer: PeerLink.Answer) {
        var bytes = line
        bytes.append(0x0A)
        guard let seq = answer.seq, seq > engine.lastDurableSeq else { return finish(p, line: bytes, failed: !answer.ok) }
        answered.append((seq, p, bytes, !answer.ok))
    }

    /// After a publication: answers the forwarded writes whose seq it reached, in the order they were answered.
    private func answerPublished() {
        let published = engine.lastDurableSeq
        guard answered.contains(where: { $0.seq <= published }) else { return }
        let ready = answered.filter { $0.seq <= published }
        answered.removeAll { $0.seq <= published }
        for a in ready { finish(a.pending, line: a.line, failed: a.failed) }
    }

    private func finish(_ p: PeerLink.Pending, line: [UInt8], failed: Bool) {
        server.requestFinished(p.timing, failed: failed, id: p.id, session: p.session)
        p.session.endWrite(p.slot, response: line)
        if server.shuttingDown { server.maybeFinishShutdown() }
    }

    /// Forwarded writes not answered to their client yet (a shutdown waits for them).
    var forwardsAwaited: Int { answered.count + (link?.unanswered ?? 0) }

    // MARK: Figures

    /// The database's last seq as the last election round read it.
    private var storeSeq: UInt64 = 0

    var status: ClusterStatus {
        var committer: String?
        switch role {
        case .follower(let c): committer = c?.name
        case .promoting, .committer: committer = node.name
        }
        let published = engine.lastDurableSeq
        let known = max(storeSeq, published)
        return ClusterStatus(node: node.name, role: role.name, term: role.term, committer: committer, storeSeq: known,
                             lagCommits: known - published, adopted: adopted, forwarded: forwarded,
                             awaited: forwardsAwaited, elections: elections)
    }
}

/// The feed, handed to its thread (used by one thread at a time: the feed thread, then the loop at stop).
private final class FeedBox: @unchecked Sendable {
    let feed: any CommitFeed
    init(_ feed: any CommitFeed) { self.feed = feed }
}

/// Written on the election thread before `done` runs (libuv orders it).
private final class ElectionOutcome: @unchecked Sendable {
    var lease: CommitterLease?
    var renewed: Bool?
    var error: HearthError?
}

private final class FeedOutcome: @unchecked Sendable {
    var records: [CommitRecord]?
    var error: HearthError?
}
