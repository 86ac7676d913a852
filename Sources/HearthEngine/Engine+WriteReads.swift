import HearthModel
import HearthStorage

/// A write reads the store before the engine can apply it: the version of each document it touches that no
/// pending commit and the document cache hold, and, with a request ID, whether a commit already carried it.
/// Where the store is across the network (`DocumentStore.readsAreRemote`) those reads are made on a reader
/// thread rather than on the loop:
///
/// 1. `readsNeeded(for:requestID:)` on the loop says what to read, and starts watching it;
/// 2. a reader reads them as the store holds them then (`DocumentStore.readLatest`: no snapshot, a round trip
///    per read);
/// 3. back on the loop, `learn` keeps what is still the published version: a document or request ID a
///    commit published after step 1 changed is dropped (read again on the loop if the write needs it), and
///    the caller commits at once, then calls `forgetLearned`.
///
/// The store holds at least the published seq of step 1; whatever it holds beyond is this node's own commits
/// (only the committer prepares writes): pending ones are in the overlay, which a write consults first, and
/// published ones are the commits `learn` distrusts.
extension Engine {
    /// What `commit(writes, requestID:)` would read from the store; nil when it reads nothing.
    public func readsNeeded(for writes: [Write], requestID: String?) -> WriteReads? {
        thread.check("Engine.readsNeeded")
        var paths: [DocumentPath] = []
        var seen = Set<DocumentPath>()
        for w in writes where overlay[w.path] == nil && writeReads.learned[w.path] == nil
            && cache.peekRendered(DocumentCache.Key(w.path)) == nil && seen.insert(w.path).inserted {
            paths.append(w.path)
        }
        var request: String?
        if let requestID, pendingRequests[requestID] == nil, writeReads.learnedRequests[requestID] == nil { request = requestID }
        guard !paths.isEmpty || request != nil else { return nil }
        let reads = WriteReads(paths: paths, requestID: request, publishedAtStart: lastDurableSeq)
        writeReads.watch(reads)
        return reads
    }

    /// Takes what a reader read for `reads` (`WriteReads.read`) that is still the published state, for the
    /// commit the caller makes next; pass nil when the read failed (it stops watching either way).
    public func learn(_ result: WriteReadResult?, for reads: WriteReads) {
        thread.check("Engine.learn")
        let stillValid = writeReads.unwatch(reads, readAt: result?.seq)
        guard let result else { return }
        for (path, doc) in result.documents where stillValid.paths.contains(path) {
            writeReads.learned[path] = .some(doc)
            if let doc, doc.seq <= lastDurableSeq { cache.insert(doc) }
        }
        if let id = result.requestID, stillValid.request { writeReads.learnedRequests[id] = .some(result.request) }
    }

    /// Drops what `learn` kept (right after the commit it was for).
    public func forgetLearned() {
        writeReads.learned.removeAll(keepingCapacity: true)
        writeReads.learnedRequests.removeAll(keepingCapacity: true)
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

    /// Reads them as the store holds them now (`DocumentStore.readLatest`; any thread); documents are verified
    /// as the engine verifies what it reads.
    public func read(from store: any DocumentStore, codec: any DocumentCodec) throws(HearthError) -> WriteReadResult {
        let latest = try store.readLatest(paths, requestID: requestID)
        var docs: [(DocumentPath, StoredDocument?)] = []
        docs.reserveCapacity(paths.count)
        for (p, doc) in zip(paths, latest.documents) {
            if let doc { try codec.verifyStored(doc) }
            docs.append((p, doc))
        }
        return WriteReadResult(seq: publishedAtStart, documents: docs, requestID: requestID, request: latest.request)
    }
}

/// What a reader read for `WriteReads` at the snapshot's seq.
public struct WriteReadResult: Sendable {
    public let seq: UInt64
    let documents: [(DocumentPath, StoredDocument?)]
    let requestID: String?
    let request: CommittedRequest?
}

/// The engine's side of write reads: what is being read (and the last publication that changed it since),
/// and what was learned for the commit being made. Loop thread only.
struct WriteReadState {
    var learned: [DocumentPath: StoredDocument?] = [:]
    var learnedRequests: [String: CommittedRequest?] = [:]
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
    /// The engine moved to a seq without the commits between (`Engine.reset(toStoreSeq:)`) during the scan.
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
        learned.removeAll()
        learnedRequests.removeAll()
        for p in paths.keys { paths[p]!.changedAt = seq }
        for id in requests.keys { requests[id]!.changedAt = seq }
        if scanChanges != nil { scanInvalid = true }
    }

    /// Commits being published: notes what they change among what is being read, and drops what was learned
    /// (it is only for the commit made right after learning).
    mutating func published(_ records: [CommitRecord]) {
        learned.removeAll(keepingCapacity: true)
        learnedRequests.removeAll(keepingCapacity: true)
        if scanChanges != nil { for r in records { for m in r.mutations { scanChanges!.insert(m.path) } } }
        guard !paths.isEmpty || !requests.isEmpty else { return }
        for r in records {
            for m in r.mutations where paths[m.path] != nil { paths[m.path]!.changedAt = r.seq }
            if let id = r.request?.id, requests[id] != nil { requests[id]!.changedAt = r.seq }
        }
    }
}
