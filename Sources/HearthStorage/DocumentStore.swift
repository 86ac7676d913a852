import HearthModel

/// A document as the store keeps it: fields encoded by the engine's `DocumentCodec` (opaque bytes here),
/// the commit times, and the seq of the commit that last changed it.
public struct StoredDocument: Sendable, Equatable {
    public var path: DocumentPath
    public var data: [UInt8]
    public var createTime: Timestamp
    public var updateTime: Timestamp
    /// The commit that last changed the document.
    public var seq: UInt64

    public init(path: DocumentPath, data: [UInt8], createTime: Timestamp, updateTime: Timestamp, seq: UInt64) {
        self.path = path
        self.data = data
        self.createTime = createTime
        self.updateTime = updateTime
        self.seq = seq
    }
}

/// The net effect of one commit on one document. `before` is the document as it was before the commit
/// (nil when it did not exist): the change log keeps it so that listeners can resume from an older seq.
public struct Mutation: Sendable, Equatable {
    public var path: DocumentPath
    public var before: StoredDocument?
    /// The document after the commit; nil when the commit deleted it.
    public var after: StoredDocument?

    public init(path: DocumentPath, before: StoredDocument?, after: StoredDocument?) {
        self.path = path
        self.before = before
        self.after = after
    }
}

/// One commit as stored: its seq (strictly increasing across the database), its commit time, the net
/// mutation of every document it changed (documents it left unchanged are absent), and the index entries it
/// changed. A commit may have index changes and no mutations (an index backfill): it still takes a seq and
/// is logged, with no mutations.
public struct CommitRecord: Sendable, Equatable {
    public var seq: UInt64
    public var commitTime: Timestamp
    public var mutations: [Mutation]
    /// Secondary-index entries this commit removes and adds (applied in the same transaction; removals
    /// first). Not kept in the change log: `changes(after:)` returns records with empty index changes.
    /// Removing an absent key is a no-op (removal matches by key alone); adding an existing key points it at
    /// the new path (within one commit, the later addition of a key wins).
    public var indexChanges: IndexChanges
    /// The engine's index catalog as of this commit, when the commit changes it (nil: unchanged). Opaque to
    /// the store: the engine encodes it (the declared composite indexes, docs/storage.md "Index catalog").
    /// `apply` stores it in the same transaction as the commit's index changes, replacing the previous one,
    /// so the declarations and the entries they describe are always durable together. Not kept in the
    /// change log: `changes(after:)` returns records with a nil catalog.
    public var indexCatalog: [UInt8]?
    /// The client's name for this write (`requestId`) and the answer it got, opaque to the store (the engine
    /// encodes it): `committedRequest` finds it while the change log holds the commit, so a retry of the same
    /// write is answered instead of applied twice. Not returned by `changes(after:)`.
    public var request: CommitRequest?

    public init(seq: UInt64, commitTime: Timestamp, mutations: [Mutation], indexChanges: IndexChanges = IndexChanges(),
                indexCatalog: [UInt8]? = nil, request: CommitRequest? = nil) {
        self.seq = seq
        self.commitTime = commitTime
        self.mutations = mutations
        self.indexChanges = indexChanges
        self.indexCatalog = indexCatalog
        self.request = request
    }
}

/// A commit's request ID and its answer (`CommitRecord.request`).
public struct CommitRequest: Sendable, Equatable {
    /// The client's 1 to `maxIDBytes` bytes of UTF-8, behind the scope of the identity that sent it while
    /// rules are enforced (the server's `Context.scopedRequestID`: under 1 KiB in all);
    /// unique among the commits the change log holds.
    public var id: String
    /// The answer, as the engine encoded it.
    public var answer: [UInt8]

    public static let maxIDBytes = 128

    public init(id: String, answer: [UInt8]) {
        self.id = id
        self.answer = answer
    }
}

/// What `DocumentStore.committedRequest` finds: the commit that carried a request ID, and its answer.
public struct CommittedRequest: Sendable, Equatable {
    public var seq: UInt64
    public var answer: [UInt8]

    public init(seq: UInt64, answer: [UInt8]) {
        self.seq = seq
        self.answer = answer
    }
}

/// One entry of a secondary index: an order-preserving key built by the engine (HearthModel's `IndexKey`)
/// and the document it points at. Keys are opaque to the store, unique, and ordered by their bytes (memcmp).
public struct IndexEntry: Sendable, Hashable {
    public var key: [UInt8]
    public var path: DocumentPath

    public init(key: [UInt8], path: DocumentPath) {
        self.key = key
        self.path = path
    }
}

/// An index entry as `StoreReads.visitIndexEntries` hands it out: its key and the UTF-8 of its document's
/// collection path and ID, in the store's own memory, valid only during the visit (nothing is built for an
/// entry its visitor does not ask more of).
public struct IndexEntryView {
    public let key: UnsafeRawBufferPointer
    /// The collection path, `a/b/c`.
    public let collection: UnsafeRawBufferPointer
    public let id: UnsafeRawBufferPointer

    public init(key: UnsafeRawBufferPointer, collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer) {
        self.key = key
        self.collection = collection
        self.id = id
    }

    /// The document's path; DATA_LOSS naming the entry when its bytes do not form one (an ID holding a `/`
    /// among them: it would read as another path).
    public func path() throws(HearthError) -> DocumentPath {
        var segments = collection.split(separator: 47, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        segments.append(String(decoding: id, as: UTF8.self))
        let name = { segments.joined(separator: "/") }
        if id.contains(47) { throw StorageDamage.indexEntry(name(), "invalid path: its ID holds a \"/\"") }
        do { return try DocumentPath(ResourcePath(segments: segments)) } catch {
            throw StorageDamage.indexEntry(name(), "invalid path: \(error.message)")
        }
    }

    /// The entry, built.
    public func entry() throws(HearthError) -> IndexEntry { IndexEntry(key: Array(key), path: try path()) }
}

extension IndexEntry {
    /// Calls `body` with the entry as `visitIndexEntries` hands it out.
    public func withView<R, E: Error>(_ body: (IndexEntryView) throws(E) -> R) throws(E) -> R {
        let collection = Array(path.path.segments.dropLast().joined(separator: "/").utf8)
        let id = Array(path.id.utf8)
        let r: Result<R, E> = key.withUnsafeBytes { k in
            collection.withUnsafeBytes { c in
                id.withUnsafeBytes { i in
                    do throws(E) { return .success(try body(IndexEntryView(key: k, collection: c, id: i))) } catch { return .failure(error) }
                }
            }
        }
        return try r.get()
    }
}

/// The index entries a commit removes and adds.
public struct IndexChanges: Sendable, Equatable {
    public var removed: [IndexEntry]
    public var added: [IndexEntry]

    public init(removed: [IndexEntry] = [], added: [IndexEntry] = []) {
        self.removed = removed
        self.added = added
    }

    public var isEmpty: Bool { removed.isEmpty && added.isEmpty }
}

/// A document found through an index, with the key that found it.
public struct IndexHit: Sendable, Equatable {
    public var key: [UInt8]
    public var document: StoredDocument

    public init(key: [UInt8], document: StoredDocument) {
        self.key = key
        self.document = document
    }
}

/// How long the change log keeps commits, for listeners resuming from an older seq.
public struct RetentionPolicy: Sendable, Equatable {
    /// Commits older than this (by commit time, relative to the newest commit) are pruned.
    public var maxAgeMicros: Int64
    /// The log is pruned, oldest first, while it holds more than this many bytes of document images
    /// (`CommitRecord.imageBytes`).
    public var maxBytes: Int64

    public init(maxAgeMicros: Int64, maxBytes: Int64) {
        self.maxAgeMicros = maxAgeMicros
        self.maxBytes = maxBytes
    }

    /// 24 hours and 256 MiB.
    public static let `default` = RetentionPolicy(maxAgeMicros: 24 * 3600 * 1_000_000, maxBytes: 256 << 20)
}

/// The reads a query needs: point reads and index ranges. A store answers them at its latest state (each call
/// one consistent state); a `StoreSnapshot` answers them all at one seq.
public protocol StoreReads: AnyObject {
    /// The document at `path`, or nil.
    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument?
    /// See `DocumentStore.scanIndex`.
    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit]
    /// See `DocumentStore.countIndex`.
    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int
    /// Calls `visit` with each index entry `scanIndex` would scan (same bounds, order and limit), without its
    /// document and whether or not that exists, until `visit` returns false: for a caller that finds the
    /// documents elsewhere (a cache), reading only the index. `visit` may read documents through `self`
    /// meanwhile (`get`), but not start another index scan.
    /// Default: `scanIndex`'s hits as entries (entries whose document is missing are then skipped).
    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError)
}

extension StoreReads {
    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        for hit in try scanIndex(from: lower, to: upper, reverse: reverse, limit: limit) {
            guard try IndexEntry(key: hit.key, path: hit.document.path).withView(visit) else { return }
        }
    }

    /// The entries `visitIndexEntries` visits, built.
    public func scanIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexEntry] {
        var out: [IndexEntry] = []
        try visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit) { (e) throws(HearthError) in
            out.append(try e.entry())
            return true
        }
        return out
    }
}

/// Every read of one committed state of a store, the state after commit `seq`, however many commits the
/// store applies meanwhile (a read transaction). Used by one thread at a time, on any thread; `close()` it
/// when done (it pins storage, e.g. keeps the WAL from being reset), exactly once.
public protocol StoreSnapshot: StoreReads {
    /// The last commit the snapshot holds.
    var seq: UInt64 { get }

    /// Documents in `scope`, ordered by (parent collection path, ID), both by UTF-8 bytes, after `after`
    /// (from the first when nil; it need not exist), at most `limit` (none when `limit` < 1). For exports:
    /// paging with the last path returned reads every document of the scope exactly once. A backend that
    /// cannot enumerate documents throws UNIMPLEMENTED (the default, `StoreMaintenance.swift`).
    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument]

    /// The change log as the snapshot holds it (`DocumentStore.changes`, up to the snapshot's seq): a resumed
    /// listener's first snapshot diffs from an earlier seq with it on a reader thread, and a node that
    /// publishes commits it did not make reads the state at its published seq as a snapshot ahead of it with
    /// the commits after that seq rolled back. Every backend implements it (the default throws UNIMPLEMENTED).
    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]?

    /// `DocumentStore.committedRequest` as of the snapshot's seq: a write with a request ID is prepared off the
    /// loop with it on a node whose store is across the network. Every backend implements it (the default
    /// throws UNIMPLEMENTED).
    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest?

    /// `DocumentStore.indexCatalog` as of the snapshot's seq: a node that fell behind retention reads where it
    /// moves to (seq, catalog) off the loop with it.
    func indexCatalog() throws(HearthError) -> [UInt8]?

    func close()
}

/// The storage protocol every backend implements (SQLite embedded, in-memory twin, PostgreSQL later), checked
/// by one conformance suite (Tests/HearthStorageTests). docs/storage.md has the long form.
///
/// Threading contract: reads (`get`, `list`, `scanIndex`, `countIndex`, `changes`, `lastSeq`, `oldestResumableSeq`)
/// are called from one thread (the loop thread); `apply` is called from one writer thread at a time, concurrently
/// with reads. Reads see only what `apply` has durably committed, never a partial group, and every group it has
/// returned for. `snapshot()` may be called
/// from any thread, and its snapshots are used off the loop thread, concurrently with both. Backends may allow
/// more (MemoryStore takes any thread) but never less.
///
/// Errors: UNAVAILABLE when the store cannot work right now (busy, I/O error, disk full, closed); INTERNAL for
/// a caller bug (a bad seq); DATA_LOSS for stored data that is damaged. Messages name the operation.
///
/// Damage: a backend that can detect damaged rows (SQLite keeps a checksum with every document row and
/// change-log row) verifies every row it reads and never returns one that fails: `get`, `list` and
/// `scanIndex` throw DATA_LOSS naming the damaged document's path (`StorageDamage.document`), `changes` throws
/// DATA_LOSS naming the commit and document, and `indexCatalog` throws DATA_LOSS when the catalog is damaged.
/// Other rows keep being served: a read that does not meet the damaged row succeeds.
public protocol DocumentStore: StoreReads, Sendable {
    /// True when a read costs a round trip across the network (PostgreSQL): the daemon then makes the reads a
    /// write needs on a reader thread rather than on its loop (`Engine.readsNeeded`). False by default.
    var readsAreRemote: Bool { get }

    /// Documents and a request ID as the store holds them now, from any thread: each read sees what is durable
    /// when it runs, without a snapshot's cost (for a caller that validates what it gets against the commits
    /// it knows of: a write's reads, `Engine+WriteReads.swift`). Damaged documents throw DATA_LOSS as `get`
    /// does. The default reads a snapshot.
    func readLatest(_ paths: [DocumentPath], requestID: String?) throws(HearthError) -> LatestReads

    /// The highest seq applied (durably); 0 for a new store. Never decreases, even when retention empties the
    /// change log.
    func lastSeq() throws(HearthError) -> UInt64

    /// The document at `path`, or nil.
    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument?

    /// Documents directly in `collection` (not in its subcollections), ordered by ID bytes (UTF-8, so "B" <
    /// "a" < "é"), with IDs after `afterID` (all when nil; it need not exist), at most `limit` (none when
    /// `limit` < 1). One consistent snapshot.
    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument]

    /// Durably applies `commits` in one transaction: all or none. Returns once the data is on stable storage
    /// (fsync). Commit by commit: for each mutation, in order, stores `after` at `path`, or removes the
    /// document when `after` is nil; then applies the commit's `indexChanges` (removals, then additions).
    /// The images are trusted (`before` is not compared with the stored document). An empty array is a no-op.
    ///
    /// Also appends the commits to the change log exactly as given but without their index changes, then prunes the
    /// log per the backend's `RetentionPolicy`: oldest whole commits first, while the oldest is older than the
    /// group's last commit time minus `maxAgeMicros`, or the log holds more than `maxBytes` of
    /// `CommitRecord.imageBytes`. Pruning may empty the log; it never touches documents. A backend that makes
    /// a group durable first and applies it to its readable structure later (SQLite, after its commit log:
    /// `PendingCommits`) prunes when it applies: `oldestResumableSeq()` may then trail the group until the
    /// applier's next transaction (up to ~500 ms and two transactions), which only keeps more history resumable.
    ///
    /// Throws INTERNAL, changing nothing, when the seqs are not strictly ascending and above `lastSeq()`, a seq
    /// exceeds `Int64.max`, or an image's path differs from its mutation's. On a storage failure before the
    /// group is durable, nothing of it is kept and the store stays usable. A backend that applies in the
    /// background and meets a failure there keeps the (acknowledged) group readable and refuses later groups
    /// with the cause until it can apply it (docs/storage.md, "Durability").
    func apply(_ commits: [CommitRecord]) throws(HearthError)

    /// Index entries with `lower <= key < upper` (memcmp order), ascending or, when `reverse`, descending,
    /// at most `limit` (none when `limit` < 1), each joined with the document it points at. An empty `upper`
    /// means no upper bound (an empty `lower` is the smallest bound anyway); a `lower` at or above a non-empty
    /// `upper` yields nothing. An entry whose document is missing is skipped and does not count toward
    /// `limit` (the engine never writes one; no backend asserts on it). One consistent snapshot.
    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit]

    /// The number of index entries with `lower <= key < upper` (no upper bound when `upper` is empty), whether
    /// or not their documents exist. One consistent snapshot.
    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int

    /// The commits with seq > `after`, ascending, at most `limit` (none when `limit` < 1), each exactly as
    /// applied (mutations in their order, with both images) except that `indexChanges` is empty: index changes
    /// are not logged. Nil when the log no longer holds every commit after
    /// `after`, i.e. `after < oldestResumableSeq()`, so the caller must fall back to a full reset. Empty when
    /// `after >= lastSeq()`. One consistent snapshot.
    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]?

    /// The commit that carried request `id` (`CommitRecord.request`) and its answer, while the change log
    /// still holds that commit (retention prunes it with the commit); nil otherwise. Every acknowledged commit
    /// is found, including one durable in a commit log and not yet applied to the store's tables.
    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest?

    /// The oldest seq the change log can resume from: `changes(after: s)` succeeds for every s >= this value.
    /// It is the highest seq pruned so far (0 when nothing was), and never decreases.
    func oldestResumableSeq() throws(HearthError) -> UInt64

    /// A snapshot of the latest committed state, for reads off the loop thread. Callable from any thread;
    /// a backend may keep a few connections for them. UNAVAILABLE once closed.
    func snapshot() throws(HearthError) -> any StoreSnapshot

    /// The identity of this store's history: a random positive number created with the store and never
    /// changed (a copy of the files keeps it). Two stores with the same ID hold the same commits up to the
    /// lower of their `lastSeq()`s; a resume token (a seq) means something only within its history.
    func historyID() throws(HearthError) -> UInt64

    /// The index catalog stored by the latest commit that carried one (`CommitRecord.indexCatalog`), exactly
    /// as given; nil when no commit ever did. Read once at open by the engine.
    func indexCatalog() throws(HearthError) -> [UInt8]?

    /// Flushes and closes, waiting for a running `apply`. Idempotent; any other call that follows throws
    /// UNAVAILABLE.
    func close()
}

/// Encodes a document's fields for storage and decodes them back. The server injects the JSON codec so that a
/// stored document can be spliced into a response without re-encoding; the engine and the store never see
/// the format.
public protocol DocumentCodec: Sendable {
    func encode(_ fields: MapValue) -> [UInt8]
    /// Decodes stored fields. Fails for every input `verify` rejects.
    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue
    /// Checks, without decoding, that stored bytes are a well-formed encoding that may be served as they
    /// are (spliced into a response). The engine verifies every document it reads from the store before
    /// it serves or caches it, so bytes the store holds reach a client only after passing this.
    func verify(_ data: [UInt8]) throws(HearthError)
}

extension DocumentCodec {
    /// By default, verifying is decoding.
    public func verify(_ data: [UInt8]) throws(HearthError) { _ = try decode(data) }

    /// `verify` of a document read from the store: bytes that fail throw DATA_LOSS naming the document.
    public func verifyStored(_ doc: StoredDocument) throws(HearthError) {
        do { try verify(doc.data) } catch { throw StorageDamage.undecodable(doc, error) }
    }

    /// `decode` of a document read from the store: bytes that fail throw DATA_LOSS naming the document.
    public func decodeStored(_ doc: StoredDocument) throws(HearthError) -> MapValue {
        do { return try decode(doc.data) } catch { throw StorageDamage.undecodable(doc, error) }
    }
}

/// The DATA_LOSS errors every backend and the engine raise for damaged stored data, worded alike so that a
/// log can report each damaged document once.
public enum StorageDamage {
    /// A stored document that fails its checksum or does not decode. The message starts with
    /// `document <path> is damaged in storage`.
    public static func document(_ path: String, _ detail: String) -> HearthError {
        HearthError(.dataLoss, "document \(path) is damaged in storage (\(detail)); it is not served")
    }

    /// A change-log row (a commit's mutation of `path`) that fails its checksum or does not decode.
    public static func change(seq: UInt64, path: String, _ detail: String) -> HearthError {
        HearthError(.dataLoss, "the change log entry of document \(path) at seq \(seq) is damaged in storage (\(detail))")
    }

    /// A stored document whose bytes the codec rejects.
    public static func undecodable(_ doc: StoredDocument, _ error: HearthError) -> HearthError {
        document(doc.path.description, "its data does not decode: \(error.message)")
    }

    /// An index entry whose stored fields do not name a document (`what` says which).
    public static func indexEntry(_ what: String, _ detail: String) -> HearthError {
        HearthError(.dataLoss, "an index entry for \(what) is damaged in storage (\(detail))")
    }

    /// The stored index catalog fails its checksum or does not decode.
    public static func indexCatalog(_ detail: String) -> HearthError {
        HearthError(.dataLoss, "the index catalog is damaged in storage (\(detail))")
    }
}

extension DocumentStore {
    public var readsAreRemote: Bool { false }

    public func readLatest(_ paths: [DocumentPath], requestID: String?) throws(HearthError) -> LatestReads {
        let s = try snapshot()
        defer { s.close() }
        return try s.reads(paths, requestID: requestID)
    }
}

extension StoreSnapshot {
    /// `paths` and `requestID` as the snapshot holds them (what `readLatest` returns, at the snapshot's seq).
    public func reads(_ paths: [DocumentPath], requestID: String?) throws(HearthError) -> LatestReads {
        var docs: [StoredDocument?] = []
        docs.reserveCapacity(paths.count)
        for p in paths { docs.append(try get(p)) }
        return LatestReads(documents: docs, request: try requestID.map { id throws(HearthError) in try committedRequest(id) } ?? nil)
    }
}

/// What `DocumentStore.readLatest` read: each path's document (nil: absent), in order, and the request ID's
/// commit (nil: none the change log holds, or no ID asked).
public struct LatestReads: Sendable, Equatable {
    public let documents: [StoredDocument?]
    public let request: CommittedRequest?
    public init(documents: [StoredDocument?], request: CommittedRequest?) {
        self.documents = documents
        self.request = request
    }
}
