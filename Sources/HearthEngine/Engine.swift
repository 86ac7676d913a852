#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// The database's meaning: reads, atomic commits with preconditions and transforms, sequence numbers, and
/// group commit. Single-threaded: every method is called on the loop thread (checked in debug builds), except
/// that the `CommitBatch` returned by `takeBatch()` is applied to the store on a writer thread by the caller,
/// and that reader threads use `documentCache` and `catalogView` (both locked inside) with snapshots of the
/// store.
///
/// Visibility: reads return durable state only. A commit is applied in memory at `commit` (so later commits
/// see it and are serialized after it), given the next seq and a commit time, and acknowledged through its
/// completion only after the batch holding it is durable. If a batch fails, it and every commit submitted
/// after it fail, because they were validated against state that never became durable.
public final class Engine {
    public let store: any DocumentStore
    public let codec: any DocumentCodec
    /// Encodes the index catalog for the store; nil: the catalog is not stored (engine tests that do not
    /// care), and declarations last as long as the engine.
    public let indexCatalogCodec: (any IndexCatalogCodec)?
    private let clock: () -> Int64

    // @exclusivity(unchecked) below: loop-thread state read or changed by every commit and publication; dynamic
    // exclusivity checks off (docs/architecture.md, "Decisions": only the loop thread touches it, and no access
    // spans a call that could reach the same property).

    /// Highest seq given to a commit.
    @exclusivity(unchecked) public internal(set) var lastAssignedSeq: UInt64
    /// Highest seq durable and published.
    @exclusivity(unchecked) public internal(set) var lastDurableSeq: UInt64
    /// The store's history (`DocumentStore.historyID`): a seq is a position in this history only.
    public let historyID: UInt64
    @exclusivity(unchecked) var lastCommitMicros: Int64 = 0

    /// Documents changed by commits not yet durable: the newest version of each, with its seq.
    @exclusivity(unchecked) var overlay: [DocumentPath: OverlayEntry] = [:]
    /// Commits applied in memory and not yet handed to the store, ascending seq.
    @exclusivity(unchecked) private var queued: [PendingCommit] = []
    /// The batch being made durable, if any.
    @exclusivity(unchecked) private var inFlight: CommitBatch?
    /// Pending commits (queued or in flight) by request ID: a retry while one is pending waits for its outcome.
    @exclusivity(unchecked) var pendingRequests: [String: PendingCommit] = [:]
    /// Reads a write needs, made off the loop (`Engine+WriteReads.swift`).
    @exclusivity(unchecked) var writeReads = WriteReadState()
    /// Reads of the store are round trips across the network (`DocumentStore.readsAreRemote`, which sets it):
    /// the server then makes the reads a write needs (`readsNeeded`) on reader threads rather than on the
    /// loop. (Listeners' reads are off the loop over every store: `ListenerHub.readsOffLoop`.)
    public var storeIsRemote: Bool
    /// Reads of the store made on the loop thread since start (`stats`' `store.loopReads`): those the gate
    /// confirms, a follower's reads at its published seq, and a reset's.
    public internal(set) var loopStoreReads: UInt64 = 0

    /// Declared composite indexes (building or ready), maintained by every commit.
    public internal(set) var indexes: [IndexDefinition] = [] { didSet { catalogView.publish(indexes) } }
    /// `indexes` for reader threads: the catalog a query running on one plans with.
    public let catalogView: IndexCatalogView
    /// The id the next declared index gets (ids are never reused).
    public internal(set) var nextIndexID: Int64 = 1
    /// Dropped indexes whose entries are still being removed (kept in the catalog until they are).
    public internal(set) var droppingIndexes: [Int64] = []
    /// TTL policies (stored with the index catalog).
    public internal(set) var ttlPolicies: [TTLPolicy] = []
    /// Backfills and purges still to do, oldest first.
    var indexWork: [IndexWork] = []
    /// Called when the index catalog changes (a declaration, a drop, a backfill finished), with the index that
    /// changed and how, for the log.
    public var onIndexesChanged: ((IndexDefinition, IndexEvent) -> Void)?

    /// Set while this node does not commit (it follows another node's commits, or is becoming the committer):
    /// `commit` throws it at once and changes nothing.
    @exclusivity(unchecked) public var commitRefusal: HearthError?
    /// Other nodes commit to the store: it may hold commits this node has not published yet, and the loop's
    /// reads go through `publishedReads`'s snapshot and rollback rather than to the store directly.
    public var storeMayLead = false {
        didSet {
            catalogView.publishedThrough(storeMayLead ? lastDurableSeq : nil)
            if storeMayLead && !oldValue { leadEpoch &+= 1 }
        }
    }
    /// Counts the times the store began to lead this node (it stopped committing): a read of the store's
    /// latest versions asked for before is not the published state (`learn`).
    var leadEpoch: UInt64 = 0

    /// Set while the store's disk is full (by the server, which also clears it): a commit that would store
    /// more than it removes fails with this error at once, while one that only deletes documents (or verifies
    /// them, or leaves them unchanged) still runs, so space can be freed through the API.
    @exclusivity(unchecked) public var diskFull: HearthError?
    /// Called right before a commit is refused because of `diskFull`, so the server can check whether space
    /// came back (and clear `diskFull`, letting the commit through).
    public var recheckDiskSpace: (() -> Void)?
    /// Numbers backfill runs (a restarted backfill is a new generation).
    var backfillGeneration = 0
    /// The catalog changed since a commit last carried it: the next commit queued carries it.
    @exclusivity(unchecked) var catalogDirty = false
    /// The catalog as the store holds it: the one read at start (or taken from another node), then the newest
    /// one a published commit carried. A failed batch rolls the catalog in memory back to it.
    var durableCatalog: IndexCatalog?
    /// True when the store held a catalog at init (it was restored from there).
    public private(set) var loadedStoredCatalog = false
    /// Called with every DATA_LOSS error the engine meets reading the store (a damaged document, change-log
    /// entry or catalog), also those it answers a request with or recovers from (a resume that falls back to
    /// a reset), so the server can log each damaged document.
    public var onDataLoss: ((HearthError) -> Void)?

    /// Called once per durable batch, in seq order, right after its commits are acknowledged and
    /// published to the listeners.
    public var onCommitted: (([CommitRecord]) -> Void)?
    /// Called during a publication once the engine is at the batch's seq and before any listener sees the
    /// batch: the server re-checks here the listeners whose access depends on documents the batch changed
    /// (and ends those no longer allowed, so they never receive it). It must not run requests.
    public var willPublish: (([CommitRecord]) -> Void)?
    /// The listener registry; committed changes reach it from `finish`, the one place where they leave
    /// the engine.
    public private(set) lazy var listeners = ListenerHub(engine: self)
    /// Recently read durable documents (refreshed by `finish`).
    let cache: DocumentCache
    /// The loop thread, which owns the engine, its listener hub and its gate.
    package private(set) var thread = ThreadOwner()
    /// When a read may run, and the readers waiting for a publication (see `SnapshotGate`).
    public private(set) lazy var gate = SnapshotGate(
        storeSeq: { [unowned(unsafe) self] () throws(HearthError) in try self.store.lastSeq() },
        publishedSeq: { [unowned(unsafe) self] in self.lastDurableSeq })

    struct OverlayEntry {
        var doc: StoredDocument?
        var fields: MapValue?
        var seq: UInt64
    }

    /// `cacheBytes` bounds the cache of recently read documents (0: none). With `indexCatalogCodec`, the index
    /// catalog the store holds is restored (building indexes resume their backfill, drops their purge); a
    /// catalog that fails to decode throws DATA_LOSS.
    public init(store: any DocumentStore, codec: any DocumentCodec, indexCatalogCodec: (any IndexCatalogCodec)? = nil,
                cacheBytes: Int = Engine.defaultCacheBytes,
                clock: @escaping () -> Int64 = Engine.wallClockMicros) throws(HearthError) {
        self.store = store
        self.codec = codec
        self.indexCatalogCodec = indexCatalogCodec
        self.catalogView = IndexCatalogView(codec: indexCatalogCodec)
        self.clock = clock
        let last = try store.lastSeq()
        self.cache = DocumentCache(capacityBytes: cacheBytes, published: last)
        self.lastAssignedSeq = last
        self.lastDurableSeq = last
        self.historyID = try store.historyID()
        self.storeIsRemote = store.readsAreRemote
        // Commit times never go backwards, even across a restart on a clock that did, or on another node.
        if last > 0, let newest = try? store.changes(after: last - 1, limit: 1)?.first, newest.seq == last {
            lastCommitMicros = newest.commitTime.micros
        }
        if let catalogCodec = indexCatalogCodec, let data = try store.indexCatalog() {
            let catalog: IndexCatalog
            do { catalog = try catalogCodec.decode(data) } catch {
                throw StorageDamage.indexCatalog("it does not decode: \(error.message)")
            }
            restore(catalog)
            loadedStoredCatalog = true
        }
        if indexCatalogCodec != nil { durableCatalog = indexCatalog }
        catalogView.publish(indexes)
    }

    public static let defaultCacheBytes = 64 << 20

    /// Hands the engine to the calling thread (the daemon builds it, then runs its loop on this thread).
    public func adoptCurrentThread() {
        precondition(inFlight == nil && queued.isEmpty, "the engine changes threads only while idle")
        thread.adopt()
        gate.adoptCurrentThread()
    }

    /// The document cache's hits, misses, entries and bytes since start (for tests and diagnostics).
    public var cacheCounters: (hits: Int, misses: Int, entries: Int, bytes: Int) {
        (cache.hits, cache.misses, cache.count, cache.bytes)
    }

    public static func wallClockMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// True when no commit is queued or in flight.
    public var isIdle: Bool { queued.isEmpty && inFlight == nil }

    /// Runs `body` once every commit pending now has its outcome (right after the newest one's completion, in
    /// its publication or its failure), with true if they were all published (a failed batch fails every
    /// commit queued behind it, so the newest one's outcome is theirs), and returns true; false (`body` not
    /// kept) when none is pending. A refusal decided against the engine's state, which holds the pending
    /// commits, is answered through it: a failed precondition on a document a pending delete removed then
    /// tells the client nothing that is not yet published, and nothing that never will be.
    public func afterPending(_ body: @escaping (Bool) -> Void) -> Bool { afterNewestPending(where: { _ in true }, body) }

    /// `afterPending` after the newest pending commit `carries` picks (the commits queued behind it, which a
    /// failure of it fails too, do not decide).
    func afterNewestPending(where carries: (PendingCommit) -> Bool, _ body: @escaping (Bool) -> Void) -> Bool {
        thread.check("Engine.afterPending")
        guard let newest = queued.last(where: carries) ?? inFlight?.pending.last(where: carries) else { return false }
        newest.settled.append(body)
        return true
    }

    /// Commits queued or in flight.
    public var pendingCommitCount: Int { queued.count + (inFlight?.pending.count ?? 0) }

    // MARK: Reads (durable state)

    /// A durable document: from the cache, or read from the store (a read the gate confirms) and cached when
    /// it is the published version.
    public func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        thread.check("Engine.get")
        if let doc = cache.get(path) { return doc }
        return try readThrough(path)
    }

    /// `get` past a cache miss: the store's version, cached when it is the published one.
    private func readThrough(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        guard let doc = try publishedReads({ (s, ahead) throws(HearthError) in
            if let version = ahead[path] { return version }
            return try s.get(path)
        }) else { return nil }
        // Verified once, here, on its way in: the cache (and so every later get) holds verified documents only.
        try verified(doc)
        // A version newer than the published seq is from a batch that landed but is not yet published: the
        // cache holds published versions only (the gate sends the read itself round again).
        if doc.seq <= lastDurableSeq { cache.insert(doc) }
        return doc
    }

    /// The published version of `path` when the document cache holds it (nil: not cached, which says nothing
    /// about whether it exists), with its rendering (`DocumentCache`): the one kept with the cached version, or
    /// `render`'s, then kept with it. Counts nothing: a caller that answers from it calls `noteCacheHits`, and
    /// a miss is counted by whoever reads the document instead (a reader).
    public func cachedDocument(_ path: DocumentPath, render: (StoredDocument) -> DocumentRendering) -> (doc: StoredDocument, rendering: DocumentRendering)? {
        thread.check("Engine.cachedDocument")
        let key = DocumentCache.Key(path)
        guard let (doc, rendering) = cache.peekRendered(key) else { return nil }
        if let rendering { return (doc, rendering) }
        let made = render(doc)
        cache.attach(made, to: key, version: doc.seq)
        return (doc, made)
    }

    /// Counts `n` reads answered from `cachedDocument`.
    public func noteCacheHits(_ n: Int) { cache.noteHits(n) }

    /// The document cache, for reader threads (`DocumentCache.document(_:at:)`, `offer`).
    public var documentCache: DocumentCache { cache }

    /// The store, for a read that the snapshot gate must confirm (counted).
    var readStore: any DocumentStore {
        gate.noteStoreRead()
        loopStoreReads &+= 1
        return store
    }

    /// A read of the store that the snapshot gate must confirm; a DATA_LOSS it throws is reported to
    /// `onDataLoss` on its way out.
    func storeRead<R>(_ body: (any DocumentStore) throws(HearthError) -> R) throws(HearthError) -> R {
        do {
            return try body(readStore)
        } catch {
            if error.code == .dataLoss { onDataLoss?(error) }
            throw error
        }
    }

    // MARK: Verification of stored documents

    /// Checks that a document read from the store may be served as it is (`DocumentCodec.verify`: for the
    /// JSON codec, one valid UTF-8 JSON object with no raw line break), on top of the store's own checksum:
    /// bytes that fail (damage from before the store had checksums, or a codec bug) throw DATA_LOSS naming
    /// the document and are never served or cached.
    func verified(_ doc: StoredDocument) throws(HearthError) {
        do { try codec.verifyStored(doc) } catch { throw reportDamage(error) }
    }

    /// Decodes a document read from the store; one that does not decode throws DATA_LOSS naming it.
    func decodeStored(_ doc: StoredDocument) throws(HearthError) -> MapValue {
        do { return try codec.decodeStored(doc) } catch { throw reportDamage(error) }
    }

    func reportDamage(_ error: HearthError) -> HearthError {
        onDataLoss?(error)
        return error
    }

    /// Decodes a stored document's fields.
    public func fields(of doc: StoredDocument) throws(HearthError) -> MapValue {
        try codec.decode(doc.data)
    }

    // MARK: Writes

    /// Applies `writes` atomically in memory and queues them for durability. Throws at once (and changes
    /// nothing) when a write's precondition fails or its result is invalid; the error names the write's
    /// index when there are several. Otherwise `completion` runs on the loop thread once the commit is
    /// durable, or fails.
    ///
    /// `review`, when given, sees the commit as it would land (`CommitReview`) before anything changes, and
    /// refuses it by throwing.
    ///
    /// `requestID` names the write (`CommitRecord.request`): while a commit with the same ID is pending, this
    /// one is not applied and gets that commit's outcome (`duplicate`); a commit already durable is found
    /// with `committedRequest` before calling this.
    @discardableResult
    public func commit(_ writes: [Write], nameIndexes: Bool? = nil, requestID: String? = nil,
                       review: ((CommitReview) throws(HearthError) -> Void)? = nil,
                       completion: @escaping (Result<CommitOutcome, HearthError>) -> Void) throws(HearthError) -> UInt64 {
        thread.check("Engine.commit")
        if let commitRefusal { throw commitRefusal }
        if let requestID, let pending = pendingRequests[requestID] {
            pending.retries.append(completion)
            return pending.record.seq
        }
        let prefixIndexes = nameIndexes ?? (writes.count > 1)
        guard !writes.isEmpty else { throw .invalid("a commit needs at least one write") }
        guard writes.count <= Limits.maxWritesPerCommit else {
            throw .invalid("a commit holds at most \(Limits.maxWritesPerCommit) writes (got \(writes.count))")
        }
        let now = clock()
        let commitMicros = max(now, lastCommitMicros + 1)
        let commitTime = Timestamp(micros: commitMicros)
        let seq = lastAssignedSeq + 1

        // State local to this commit: later writes of the commit see earlier ones. One entry per document, in
        // first-touch order, found through one hash lookup per write.
        struct Touched {
            let path: DocumentPath
            let before: StoredDocument?            // durable or pending version before the commit
            let original: WriteApplier.State?      // `before`, decoded
            var state: WriteApplier.State?         // after the commit's writes so far
            let firstWrite: Int
            var written = false                    // by a write other than `verify`
            var writes = 0                         // how many of the commit's writes touched it
            var lastChanged = false                // the last one's `WriteApplier.Outcome.changed`
        }
        // A commit of a few writes finds a document's entry by comparing paths (a single `set` builds no
        // dictionary at all); a larger one through `slot`.
        let hashed = writes.count > 8
        var slot: [DocumentPath: Int] = [:]
        if hashed { slot.reserveCapacity(writes.count) }
        var touched: [Touched] = []
        touched.reserveCapacity(writes.count)
        var results: [WriteResult] = []
        results.reserveCapacity(writes.count)
        var resultSlot: [Int] = []                 // the `touched` entry of each write
        resultSlot.reserveCapacity(writes.count)

        for (i, write) in writes.enumerated() {
            let k: Int
            if let existing = hashed ? slot[write.path] : touched.firstIndex(where: { $0.path == write.path }) {
                k = existing
            } else {
                let stored = try latest(write.path)
                var original: WriteApplier.State?
                if let d = stored.doc {
                    let fields: MapValue
                    if let cached = stored.fields { fields = cached } else { fields = try decodeStored(d) }
                    original = WriteApplier.State(fields: fields, createTime: d.createTime, updateTime: d.updateTime)
                }
                k = touched.count
                touched.append(Touched(path: write.path, before: stored.doc, original: original, state: original, firstWrite: i))
                if hashed { slot[write.path] = k }
            }
            let outcome: WriteApplier.Outcome
            do {
                outcome = try WriteApplier.apply(write, to: touched[k].state, commitTime: commitTime)
            } catch {
                // The error tells something of the document (that it exists or not, its update time, or with a
                // size that counts its fields, that it is large): a reviewer judges it as read first, and a
                // caller who may not read it is told that instead (as Firestore's rules run before a write's
                // preconditions). A new document too large says nothing of what is stored: its error stands.
                if let review, error.code != .invalidArgument || touched[k].original != nil {
                    let t = touched[k]
                    try review(CommitReview(documents: [
                        CommitReview.Document(path: t.path, before: t.original?.fields, after: t.original?.fields,
                                              written: false, firstWrite: t.firstWrite)
                    ], commitTime: commitTime))
                }
                throw prefixIndexes ? error.prefixed("writes[\(i)]") : error
            }
            touched[k].state = outcome.after
            touched[k].writes += 1
            touched[k].lastChanged = outcome.changed
            if write.kind != .verify { touched[k].written = true }
            results.append(outcome.result)
            resultSlot.append(k)
        }

        if let review {
            try review(CommitReview(documents: touched.map {
                CommitReview.Document(path: $0.path, before: $0.original?.fields, after: $0.state?.fields,
                                      written: $0.written, firstWrite: $0.firstWrite)
            }, commitTime: commitTime))
        }

        // While the disk is full, only commits that store nothing new run: every document ends deleted, absent,
        // or as it was.
        if diskFull != nil, touched.contains(where: { t in
            guard let state = t.state else { return false }
            return t.before == nil || t.original?.fields != state.fields
        }) {
            try refuseForFullDisk()
        }

        // Net mutation per document, in first-touch order; documents left as they were are omitted.
        var mutations: [Mutation] = []
        mutations.reserveCapacity(touched.count)
        var indexChanges = IndexChanges()
        var unchanged: [Bool]?
        for (k, t) in touched.enumerated() {
            let path = t.path
            var after: StoredDocument?
            if let newState = t.state {
                // One write compared its result with the original already (`Outcome.changed`); several may have
                // changed the document and changed it back. A document deleted and created again is a new
                // document (its createTime is the commit's), whatever its fields.
                if t.before != nil, let orig = t.original,
                   t.writes == 1 ? !t.lastChanged : orig.fields == newState.fields && orig.createTime == newState.createTime {
                    // Unchanged by the commit as a whole (possibly changed and changed back): keep its times.
                    if unchanged == nil { unchanged = [Bool](repeating: false, count: touched.count) }
                    unchanged![k] = true
                    continue
                }
                after = StoredDocument(path: path, data: codec.encode(newState.fields), createTime: newState.createTime,
                                       updateTime: newState.updateTime, seq: seq)
            } else if t.before == nil {
                continue // absent before and after
            }
            mutations.append(Mutation(path: path, before: t.before, after: after))
            IndexMaintainer.changes(path, before: t.original?.fields, after: t.state?.fields,
                                    composites: indexes, into: &indexChanges)
            overlay[path] = OverlayEntry(doc: after, fields: t.state?.fields, seq: seq)
        }
        if let unchanged {
            for j in results.indices where unchanged[resultSlot[j]] { results[j].updateTime = touched[resultSlot[j]].before!.updateTime }
        }

        lastAssignedSeq = seq
        lastCommitMicros = commitMicros
        let request = requestID.map { CommitRequest(id: $0, answer: CommitAnswer.encode(commitTime: commitTime, results: results, codec: codec)) }
        let carried = takeDirtyCatalog()
        let record = CommitRecord(seq: seq, commitTime: commitTime, mutations: mutations, indexChanges: indexChanges,
                                  indexCatalog: carried?.data, request: request)
        let pending = PendingCommit(record: record, results: results, catalog: carried?.catalog, completion: completion)
        queued.append(pending)
        if let requestID { pendingRequests[requestID] = pending }
        return seq
    }

    /// The outcome of the durable commit that carried `requestID`, while the change log holds it (nil
    /// otherwise, or while it is still pending: `commit` then attaches the retry to it). Its seq may be above
    /// the published one for a moment (a batch landing): answer once it is published.
    public func committedRequest(_ requestID: String) throws(HearthError) -> CommitOutcome? {
        thread.check("Engine.committedRequest")
        guard pendingRequests[requestID] == nil else { return nil }
        let found: CommittedRequest?
        if let known = writeReads.learnedRequests[requestID] {
            found = known
        } else {
            // Over a store across the network the loop does not look it up (`Engine+WriteReads.swift`).
            guard !storeIsRemote else { throw missing(requestID: requestID) }
            found = try store.committedRequest(requestID)
        }
        guard let found else { return nil }
        return try CommitAnswer.decode(found.answer, seq: found.seq, codec: codec)
    }

    /// Throws `diskFull` unless a last check finds that space came back.
    func refuseForFullDisk() throws(HearthError) {
        recheckDiskSpace?()
        if let diskFull { throw diskFull }
    }

    /// Queues a commit that only changes index entries (an index backfill step) and carries the catalog when
    /// it changed; it takes a seq like any commit and `completion` runs once it is durable.
    func commitIndexChanges(_ changes: IndexChanges, completion: @escaping (Result<CommitOutcome, HearthError>) -> Void) {
        let commitMicros = max(clock(), lastCommitMicros + 1)
        let seq = lastAssignedSeq + 1
        lastAssignedSeq = seq
        lastCommitMicros = commitMicros
        let carried = takeDirtyCatalog()
        let record = CommitRecord(seq: seq, commitTime: Timestamp(micros: commitMicros), mutations: [], indexChanges: changes,
                                  indexCatalog: carried?.data)
        queued.append(PendingCommit(record: record, results: [], catalog: carried?.catalog, completion: completion))
    }

    /// The newest version of a document as a write sees it (durable state plus pending commits), decoded.
    public func latestFields(_ path: DocumentPath) throws(HearthError) -> MapValue? {
        let l = try latest(path)
        guard let doc = l.doc else { return nil }
        if let f = l.fields { return f }
        return try decodeStored(doc)
    }

    /// The newest version of a document, durable or not (what a write must see). Over a store across the
    /// network, one neither pending, learned nor cached is missed rather than read (`Engine+WriteReads.swift`).
    private func latest(_ path: DocumentPath) throws(HearthError) -> (doc: StoredDocument?, fields: MapValue?) {
        if let e = overlay[path] { return (e.doc, e.fields) }
        if let known = writeReads.learned[path] { return (known.doc, nil) }
        // A cached version published from a commit comes with the fields that commit built (`DocumentCache`).
        if let hit = cache.getForWrite(path) { return hit }
        if storeIsRemote { throw missing(path) }
        return (try readThrough(path), nil)
    }

    // MARK: Group commit

    /// The queued commits as one batch to make durable, or nil when nothing is queued or a batch is
    /// already in flight (one batch at a time keeps seq order on disk).
    public func takeBatch() -> CommitBatch? {
        thread.check("Engine.takeBatch")
        guard inFlight == nil, !queued.isEmpty else { return nil }
        let batch = CommitBatch(pending: queued)
        queued.removeAll(keepingCapacity: true)
        inFlight = batch
        gate.batchTaken(batch)
        return batch
    }

    /// Applies a batch on the calling (writer) thread. Separate so callers need not reach into the store.
    public static func makeDurable(_ batch: CommitBatch, in store: any DocumentStore) -> HearthError? {
        do {
            try store.apply(batch.records)
            batch.markLanded()
            return nil
        } catch {
            return error
        }
    }

    /// Completes a batch on the loop thread, in an order nothing can observe half-done (docs/architecture.md,
    /// "Publication order"): the engine moves to the batch's last seq (overlay, cache), every listener and
    /// shared view applies the batch, each commit's completion fills its response (completions must not run
    /// requests), and last the snapshot gate wakes the reads that waited for this publication. A failed batch
    /// fails its commits and every commit queued behind it, and changes nothing else.
    public func finish(_ batch: CommitBatch, error: HearthError?) {
        thread.check("Engine.finish")
        precondition(inFlight === batch, "finish called with a batch that is not in flight")
        gate.publicationStarted()
        inFlight = nil
        if let error {
            let failed = batch.pending + queued
            listeners.refillRows.removeAll()   // read for seqs that a later batch will take again
            queued.removeAll()
            overlay.removeAll()
            pendingRequests.removeAll()
            let code: ErrorCode = error.code == .internal || error.code == .resourceExhausted || error.code == .dataLoss ? error.code : .unavailable
            let e = HearthError(code, "commit not durable: \(error.message)")
            // The catalog goes back to the durable one, as the documents do (their overlay is gone).
            rollBackCatalog()
            for p in failed {
                p.completion(.failure(e))
                for retry in p.retries { retry(.failure(e)) }
                for s in p.settled { s(false) }
            }
        } else {
            let lastSeq = batch.records.last?.seq ?? lastDurableSeq
            // The overlay's entries for the batch go, and each one's fields go to the listeners with the after
            // image they were built for: that of the newest record of the batch that wrote the path, so the
            // records are walked newest first (an older record's image of the same path is decoded).
            var afterFields = [[MapValue?]](repeating: [], count: batch.records.count)
            for (r, record) in batch.records.enumerated().reversed() {
                var fields = [MapValue?](repeating: nil, count: record.mutations.count)
                for (k, m) in record.mutations.enumerated() {
                    if let i = overlay.index(forKey: m.path), overlay.values[i].seq <= lastSeq {
                        let e = overlay.remove(at: i).value
                        if e.seq == record.seq, m.after != nil { fields[k] = e.fields }
                    }
                }
                afterFields[r] = fields
            }
            cache.publish(batch.records, through: lastSeq, fields: afterFields)
            writeReads.published(batch.records)
            lastDurableSeq = lastSeq
            willPublish?(batch.records)
            listeners.publish(batch.records, afterFields: afterFields)
            if let carried = batch.pending.last(where: { $0.catalog != nil })?.catalog { durableCatalog = carried }
            for p in batch.pending {
                let outcome = CommitOutcome(seq: p.record.seq, commitTime: p.record.commitTime, results: p.results)
                p.completion(.success(outcome))
                if let id = p.record.request?.id {
                    pendingRequests[id] = nil
                    var again = outcome
                    again.duplicate = true
                    for retry in p.retries { retry(.success(again)) }
                }
                for s in p.settled { s(true) }
            }
            onCommitted?(batch.records)
        }
        gate.publicationFinished()
    }
}
