import HearthModel
import HearthStorage

/// Where the store is across the network (`DocumentStore.readsAreRemote`), the loop never reads it: a
/// document or request ID the loop needs and does not hold is read on a reader thread first, and the work
/// that needed it runs again once it is back.
///
/// 1. What to read is known up front (`readsNeeded(for:requestID:)`: what a write touches), or found by
///    running: a loop read of something neither pending, cached nor learned notes it as missing and throws
///    UNAVAILABLE (`latest`, `publishedOnLoop`, `committedRequest`); the caller takes the misses
///    (`takeMissing`) and asks for them (`readsNeeded(paths:requestID:published:)`). Either way the engine
///    starts watching what is read.
/// 2. A reader reads it (`WriteReads.read`): for a write, as the store holds it now (`readLatest`, one
///    round trip); for the published state (a rule's `get()` while judging a read or a listen), the same on
///    the committer, else at a snapshot, and the caller waits until the snapshot's seq is published here
///    (`readsNeeded(paths:requestID:published:)`).
/// 3. Back on the loop, `learn` keeps what is still right: a document or request ID a commit published after
///    the read changed is dropped (and missed again if still needed). The caller runs its work again at
///    once, then calls `forgetLearned`.
///
/// A write's latest read holds at least the published seq of step 1; whatever the store holds beyond is this
/// node's own commits (only the committer prepares writes): pending ones are in the overlay, which a write
/// consults first, and published ones are the commits `learn` distrusts. So a latest read of a document the
/// overlay does not hold when it is learned is also its published version.
extension Engine {
    /// A write of at least this many documents reads what the loop does not hold on a reader first, over any
    /// store (`readsFirst(for:requestID:)`).
    public static let readFirstWrites = 32

    /// What a write reads on a reader before it commits (`readsNeeded(for:requestID:)`, then `learn`); nil when
    /// it commits at once, the loop reading what it lacks. Every write reads first where the store is across the
    /// network; over a local store, a write of `readFirstWrites` documents or more. A point read on the loop
    /// costs a few µs, less than the hop to a reader and back, but a post fanned out to 1,000 feeds misses 1,000
    /// documents that do not exist yet, and those reads would hold every other connection (and the publication
    /// of the commit before it) for milliseconds, while on a reader they run beside the loop.
    public func readsFirst(for writes: [Write], requestID: String?) -> WriteReads? {
        guard storeIsRemote || writes.count >= Self.readFirstWrites else { return nil }
        return readsNeeded(for: writes, requestID: requestID)
    }

    /// What `commit(writes, requestID:)` would read from the store; nil when it reads nothing (all of it is
    /// pending, cached or learned). Once something must be read, everything not pending or cached is, since
    /// what was learned is forgotten before the read is back.
    public func readsNeeded(for writes: [Write], requestID: String?, also extra: [DocumentPath] = []) -> WriteReads? {
        thread.check("Engine.readsNeeded")
        var paths: [DocumentPath] = []
        var seen = Set<DocumentPath>(minimumCapacity: writes.count + extra.count)   // no rehash as it grows
        var unknown = false
        for p in writes.lazy.map(\.path) + extra where overlay[p] == nil && cache.peekRendered(DocumentCache.Key(p)) == nil
            && seen.insert(p).inserted {
            paths.append(p)
            if writeReads.learned[p] == nil { unknown = true }
        }
        var request: String?
        if let requestID, pendingRequests[requestID] == nil {
            request = requestID
            if writeReads.learnedRequests[requestID] == nil { unknown = true }
        }
        guard unknown else { return nil }
        let reads = WriteReads(paths: paths, requestID: request, publishedAtStart: lastDurableSeq, published: false, leadEpoch: leadEpoch)
        writeReads.watch(reads)
        return reads
    }

    /// Reads of `paths` (and `requestID`) that the loop missed: as the store holds them now, or with
    /// `published`, as of the published seq. Nil when there is nothing to read.
    ///
    /// The published state is read at a snapshot (the caller waits until its seq is published before
    /// `learn`) where the store may hold commits this node has not published: on a node that follows, or for a
    /// document a commit of this node is pending on. Otherwise (the committer, no pending commit on them) the
    /// store's latest versions are the published ones, and one round trip (`readLatest`) reads them: a commit
    /// of this node that lands meanwhile is in the overlay when they are learned, or already published and
    /// then distrusted (`learn`).
    public func readsNeeded(paths: [DocumentPath], requestID: String? = nil, published: Bool) -> WriteReads? {
        thread.check("Engine.readsNeeded")
        var unique: [DocumentPath] = []
        var seen = Set<DocumentPath>()
        for p in paths where seen.insert(p).inserted { unique.append(p) }
        guard !unique.isEmpty || requestID != nil else { return nil }
        let atSnapshot = published && (storeMayLead || requestID != nil || unique.contains { overlay[$0] != nil })
        let reads = WriteReads(paths: unique, requestID: requestID, publishedAtStart: lastDurableSeq, published: atSnapshot, leadEpoch: leadEpoch)
        writeReads.watch(reads)
        return reads
    }

    /// Takes what a reader read for `reads` (`WriteReads.read`) that is still right, for the work the
    /// caller runs next; pass nil when the read failed (it stops watching either way).
    public func learn(_ result: WriteReadResult?, for reads: WriteReads) {
        thread.check("Engine.learn")
        let stillValid = writeReads.unwatch(reads, readAt: result?.seq)
        guard let result else { return }
        // A latest read is the published version where no commit of this node is pending on the document, as
        // long as no other node commits (this node was the committer throughout: the store held only its own
        // commits beyond the published seq).
        let latestIsPublished = !storeMayLead && reads.leadEpoch == leadEpoch
        for (path, doc) in result.documents where stillValid.paths.contains(path) {
            writeReads.learn(doc, at: path, published: reads.published || (latestIsPublished && overlay[path] == nil))
            if let doc, doc.seq <= lastDurableSeq { cache.insert(doc) }
        }
        if let id = result.requestID, stillValid.request { writeReads.learnedRequests[id] = .some(result.request) }
    }

    /// Takes `versions` as the published versions of their documents (a batch being published: its
    /// documents' versions after it), for the work the caller runs next; `forgetLearned` after.
    public func learnPublished(_ versions: [DocumentPath: StoredDocument?]) {
        thread.check("Engine.learnPublished")
        for (path, doc) in versions { writeReads.learn(doc, at: path, published: true) }
    }

    /// Drops what `learn` kept (right after the work it was for).
    public func forgetLearned() {
        writeReads.forget()
    }

    /// The published version of `path`, for a read the loop makes while judging (a rule's `get()`, a
    /// document listen's resource): from the cache, or learned. Over a store across the network it is not
    /// read here: it is noted as missing and UNAVAILABLE thrown (see above); over a local store it is read.
    public func publishedOnLoop(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        thread.check("Engine.publishedOnLoop")
        guard storeIsRemote else { return try get(path) }
        if let doc = cache.get(path) { return doc }
        if let known = writeReads.learned[path], known.published { return known.doc }
        throw missing(path)
    }

    /// Notes `path` as missing: the loop needs it and, the store being across the network, does not read it.
    func missing(_ path: DocumentPath) -> HearthError {
        writeReads.missing.append(path)
        return HearthError(.unavailable, "document \(path) is read from the store on a reader first; this request runs again once it is back (try again)")
    }

    /// Notes `requestID` as missing (see `missing(_:)`).
    func missing(requestID: String) -> HearthError {
        writeReads.missingRequest = requestID
        return HearthError(.unavailable, "request ID \(requestID) is looked up in the store on a reader first; this request runs again once it is back (try again)")
    }

    /// Runs `body` for each of `items` (documents judged one by one): one that throws after the loop missed a
    /// read does not stop the others, so that every item's misses are read in one round, and the first such
    /// error is thrown at the end. Any other error is thrown at once.
    public func gatheringMisses<S: Sequence>(_ items: S, _ body: (S.Element) throws(HearthError) -> Void) throws(HearthError) {
        var missed: HearthError?
        for item in items {
            do { try body(item) } catch {
                guard hasMissing else { throw error }
                if missed == nil { missed = error }
            }
        }
        if let missed { throw missed }
    }

    /// True when the loop missed something since the last `takeMissing`.
    public var hasMissing: Bool { !writeReads.missing.isEmpty || writeReads.missingRequest != nil }

    /// The documents (and request ID) the loop missed since the last call, and forgets them.
    public func takeMissing() -> (paths: [DocumentPath], requestID: String?) {
        thread.check("Engine.takeMissing")
        defer { writeReads.missing.removeAll(keepingCapacity: true); writeReads.missingRequest = nil }
        return (writeReads.missing, writeReads.missingRequest)
    }
}

/// What a write must read from the store (`Engine.readsNeeded`), to run on a reader thread.
public struct WriteReads: Sendable {
    public let paths: [DocumentPath]
    public let requestID: String?
    /// The published seq when the reads were asked for. The store holds at least that by the time they run;
    /// anything later it holds is this node's own commit (a follower does not commit), which is pending (the
    /// overlay answers for it) or published after this seq (and then not trusted: `learn`).
    let publishedAtStart: UInt64
    /// Read at a snapshot, for the published state (else as the store holds them now).
    public let published: Bool
    /// `Engine.leadEpoch` when asked for.
    let leadEpoch: UInt64

    /// Reads them (any thread): as the store holds them now (`DocumentStore.readLatest`), or at a snapshot
    /// when `published`. Documents are verified as the engine verifies what it reads.
    public func read(from store: any DocumentStore, codec: any DocumentCodec) throws(HearthError) -> WriteReadResult {
        let seq: UInt64
        let found: LatestReads
        if published {
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            found = try snapshot.reads(paths, requestID: requestID)
            seq = snapshot.seq
        } else {
            found = try store.readLatest(paths, requestID: requestID)
            seq = publishedAtStart
        }
        var docs: [(DocumentPath, StoredDocument?)] = []
        docs.reserveCapacity(paths.count)
        for (p, doc) in zip(paths, found.documents) {
            if let doc { try codec.verifyStored(doc) }
            docs.append((p, doc))
        }
        return WriteReadResult(seq: seq, documents: docs, requestID: requestID, request: found.request)
    }
}

/// What a reader read for `WriteReads`, and the seq it is right at (a latest read: the published seq when it
/// was asked for; a snapshot: its seq, to be published before it is learned).
public struct WriteReadResult: Sendable {
    public let seq: UInt64
    let documents: [(DocumentPath, StoredDocument?)]
    let requestID: String?
    let request: CommittedRequest?
}

/// The engine's side of write reads: what is being read (and the last publication that changed it since),
/// and what was learned for the commit being made. Loop thread only.
struct WriteReadState {
    /// What was learned of each document, and whether it is known to be the published version (read at a
    /// snapshot, or not pending when learned; once known, for as long as it is learned).
    private(set) var learned: [DocumentPath: (doc: StoredDocument?, published: Bool)] = [:]
    var learnedRequests: [String: CommittedRequest?] = [:]
    /// What the loop needed and did not read since the last `takeMissing`.
    var missing: [DocumentPath] = []
    var missingRequest: String?

    mutating func learn(_ doc: StoredDocument?, at path: DocumentPath, published: Bool) {
        learned[path] = (doc, published || learned[path]?.published == true)
    }

    mutating func forget() {
        learned.removeAll(keepingCapacity: true)
        learnedRequests.removeAll(keepingCapacity: true)
    }
    /// Paths and request IDs being read: how many reads want each, and the seq of the last published commit
    /// that changed it (or carried it) since the first of them began (0: none).
    private var paths: [DocumentPath: (readers: Int, changedAt: UInt64)] = [:]
    private var requests: [String: (readers: Int, changedAt: UInt64)] = [:]

    mutating func watch(_ reads: WriteReads) {
        for p in reads.paths { paths[p, default: (0, 0)].readers += 1 }
        if let id = reads.requestID { requests[id, default: (0, 0)].readers += 1 }
    }

    /// Stops watching `reads`; returns which of them a read at `seq` still has right (nothing changed them
    /// after `seq`).
    mutating func unwatch(_ reads: WriteReads, readAt seq: UInt64?) -> (paths: Set<DocumentPath>, request: Bool) {
        var valid = Set<DocumentPath>()
        for p in reads.paths {
            guard let w = paths[p] else { continue }
            if let seq, w.changedAt <= seq { valid.insert(p) }
            if w.readers == 1 { paths[p] = nil } else { paths[p]!.readers -= 1 }
        }
        var request = false
        if let id = reads.requestID, let w = requests[id] {
            if let seq, w.changedAt <= seq { request = true }
            if w.readers == 1 { requests[id] = nil } else { requests[id]!.readers -= 1 }
        }
        return (valid, request)
    }

    /// The documents commits published since a page of index work was asked for changed (`startScan`), while
    /// its scan runs on a reader.
    private var scanChanges: Set<DocumentPath>?
    /// The engine moved to a seq without the commits between (`Engine.reset(to:)`) during the scan.
    private var scanInvalid = false

    mutating func startScan() {
        scanChanges = []
        scanInvalid = false
    }

    /// The documents changed since `startScan`; nil: trust none of what the scan read.
    mutating func endScan() -> Set<DocumentPath>? {
        defer { scanChanges = nil; scanInvalid = false }
        return scanInvalid ? nil : (scanChanges ?? [])
    }

    /// The engine moved to `seq` without publishing the commits before it: nothing being read can be checked
    /// against them, so none of it is trusted.
    mutating func invalidateAll(at seq: UInt64) {
        forget()
        for p in paths.keys { paths[p]!.changedAt = seq }
        for id in requests.keys { requests[id]!.changedAt = seq }
        if scanChanges != nil { scanInvalid = true }
    }

    /// Commits being published: notes what they change among what is being read, and drops what was learned
    /// (it is only for the commit made right after learning).
    mutating func published(_ records: [CommitRecord]) {
        forget()
        if scanChanges != nil { for r in records { for m in r.mutations { scanChanges!.insert(m.path) } } }
        guard !paths.isEmpty || !requests.isEmpty else { return }
        for r in records {
            for m in r.mutations where paths[m.path] != nil { paths[m.path]!.changedAt = r.seq }
            if let id = r.request?.id, requests[id] != nil { requests[id]!.changedAt = r.seq }
        }
    }
}
