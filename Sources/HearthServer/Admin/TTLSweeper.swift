import HearthEngine
import HearthLoop
import HearthModel
import HearthStorage

/// Deletes documents whose TTL field (`TTLPolicy`) holds a past timestamp. Every `interval` it walks each
/// policy's collection group in name order, `pageSize` documents per read on a reader thread, and deletes the
/// expired ones with ordinary commits of at most `Self.batchSize` documents (listeners see them), waiting for
/// each to be durable before reading on. So a document is deleted at most one interval plus one sweep after
/// it expires, never before. Just before its commit, each document is checked again on the loop (a write
/// may have moved its expiry). Loop thread.
final class TTLSweeper {
    static let pageSize = 1000
    static let batchSize = 500
    private unowned let server: Server
    private var timer: LoopTimer?
    private var sweeping = false
    private var stopped = false
    /// Sweeps finished since start (for tests: a barrier on "a sweep ran").
    private(set) var sweeps = 0

    init(server: Server) { self.server = server }

    func start(intervalMs: UInt64) {
        timer = server.loop.timer(after: intervalMs, repeat: intervalMs) { [unowned self] in self.sweep() }
    }

    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
    }

    /// Starts a sweep of every policy now, unless one is running.
    func sweep() {
        // Only the node that commits sweeps (a follower's would fail, and the committer's deletes reach it).
        guard !sweeping, !stopped, !server.engine.ttlPolicies.isEmpty, server.engine.commitRefusal == nil else { return }
        sweeping = true
        sweepPolicy(server.engine.ttlPolicies, 0, after: nil)
    }

    private func finishSweep() {
        sweeping = false
        sweeps += 1
    }

    /// Reads the page of `policies[i]`'s group after `after`, deletes what expired, and goes on.
    private func sweepPolicy(_ policies: [TTLPolicy], _ i: Int, after: DocumentPath?) {
        guard !stopped else { return finishSweep() }
        guard i < policies.count else { return finishSweep() }
        let policy = policies[i]
        let engine = server.engine
        var q = Query(target: .collectionGroup(id: policy.collectionGroup, parent: nil),
                      orderBy: [Query.Order(.documentID)], limit: TTLSweeper.pageSize)
        if let after { q.startAt = Query.Bound([.reference(after)], inclusive: false) }
        let prepared: PreparedQuery
        do throws(HearthError) { prepared = try engine.prepare(try q.validated(), needFields: true) } catch {
            server.logger.warn("TTL: cannot scan collection group \(policy.collectionGroup): \(error.message)")
            return sweepPolicy(policies, i + 1, after: nil)
        }
        let store = server.store, codec = engine.codec
        let now = Timestamp(micros: Engine.wallClockMicros())
        let page = ExpiredPage()
        server.readers.submit({
            do throws(HearthError) {
                let snapshot = try store.snapshot()
                defer { snapshot.close() }
                let result = try prepared.run(on: snapshot, codec: codec)
                page.scanned = result.documents.count
                page.last = result.documents.last?.stored.path
                page.expired = result.documents.compactMap { d in
                    guard let t = policy.expiry(of: d.fields), t.micros <= now.micros else { return nil }
                    return d.stored.path
                }
            } catch {
                page.error = error
            }
        }, done: { [self] in
            if let error = page.error {
                server.logger.warn("TTL: reading collection group \(policy.collectionGroup) failed (retried at the next sweep): \(error.message)")
                return sweepPolicy(policies, i + 1, after: nil)
            }
            let next: () -> Void = { [self] in
                if page.scanned < TTLSweeper.pageSize { sweepPolicy(policies, i + 1, after: nil) }
                else { sweepPolicy(policies, i, after: page.last) }
            }
            deleteExpired(page.expired[...], policy: policy, then: next)
        })
    }

    /// Deletes the documents of `paths` still expired now, `batchSize` per commit, each once the previous one
    /// is durable.
    private func deleteExpired(_ paths: ArraySlice<DocumentPath>, policy: TTLPolicy, then next: @escaping () -> Void) {
        guard !stopped else { return finishSweep() }
        guard !paths.isEmpty else { return next() }
        let engine = server.engine
        let batch = paths.prefix(TTLSweeper.batchSize)
        let rest = paths.dropFirst(batch.count)
        // Where the store is across the network or the batch is large (`Engine.readsFirst`), the versions the
        // loop does not hold are read on a reader first (`Engine+WriteReads.swift`), as for a client's write.
        let deletes = batch.map { Write(kind: .delete, path: $0, operation: .delete) }
        guard let reads = engine.readsFirst(for: deletes, requestID: nil) else {
            return commitExpired(batch, rest, policy: policy, then: next)
        }
        // Over a store across the network, what a failed read or a publication since leaves unknown is deleted at
        // a later sweep; over a local store the loop reads it when the batch commits.
        server.readFirst(reads) { [self] _ in commitExpired(batch, rest, policy: policy, then: next) }
    }

    /// Deletes the documents of `batch` still expired now in one commit, then goes on with `rest`.
    private func commitExpired(_ batch: ArraySlice<DocumentPath>, _ rest: ArraySlice<DocumentPath>, policy: TTLPolicy,
                               then next: @escaping () -> Void) {
        guard !stopped else { return finishSweep() }
        let engine = server.engine
        // Removed, replaced or rolled back (its commit failed: `Engine.rollBackCatalog`) since the sweep read
        // the page: the policy no longer deletes anything. (One still pending deletes in commits behind it,
        // which fail with it.)
        guard engine.ttlPolicies.contains(policy) else { return finishSweep() }   // the next sweep starts over
        let now = Engine.wallClockMicros()
        var writes: [Write] = []
        for path in batch {
            guard let fields = try? engine.latestFields(path), let t = policy.expiry(of: fields), t.micros <= now else { continue }
            writes.append(Write(kind: .delete, path: path, operation: .delete))
        }
        _ = engine.takeMissing()   // a document unknown here (a store across the network, see above) is not deleted by this sweep
        guard !writes.isEmpty else { return deleteExpired(rest, policy: policy, then: next) }
        let count = writes.count
        do throws(HearthError) {
            try engine.commit(writes) { [self] result in
                switch result {
                case .success:
                    server.ttlDeleted += UInt64(count)
                    server.logger.debug("TTL: deleted \(count) expired document\(count == 1 ? "" : "s") of collection group \(policy.collectionGroup)")
                    server.loop.timer(after: 0) { [self] in deleteExpired(rest, policy: policy, then: next) }
                case .failure(let error):
                    server.logger.warn("TTL: deleting expired documents of \(policy.collectionGroup) failed (retried at the next sweep): \(error.message)")
                    server.loop.timer(after: 0) { [self] in finishSweep() }
                }
            }
        } catch {
            server.logger.warn("TTL: deleting expired documents of \(policy.collectionGroup) failed (retried at the next sweep): \(error.message)")
            finishSweep()
        }
    }
}

/// A reader thread's page (written before `done` runs).
private final class ExpiredPage: @unchecked Sendable {
    var expired: [DocumentPath] = []
    var scanned = 0
    var last: DocumentPath?
    var error: HearthError?
}
