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

/// One commit as stored: its seq (strictly increasing across the database), its commit time, and the net
/// mutation of every document it changed (documents it left unchanged are absent).
public struct CommitRecord: Sendable, Equatable {
    public var seq: UInt64
    public var commitTime: Timestamp
    public var mutations: [Mutation]

    public init(seq: UInt64, commitTime: Timestamp, mutations: [Mutation]) {
        self.seq = seq
        self.commitTime = commitTime
        self.mutations = mutations
    }
}

/// How long the change log keeps commits, for listeners resuming from an older seq.
public struct RetentionPolicy: Sendable, Equatable {
    /// Commits older than this (by commit time) may be pruned.
    public var maxAgeMicros: Int64
    /// The log is pruned, oldest first, while it holds more than this many bytes of document images.
    public var maxBytes: Int64

    public init(maxAgeMicros: Int64, maxBytes: Int64) {
        self.maxAgeMicros = maxAgeMicros
        self.maxBytes = maxBytes
    }

    /// 24 hours and 256 MiB.
    public static let `default` = RetentionPolicy(maxAgeMicros: 24 * 3600 * 1_000_000, maxBytes: 256 << 20)
}

/// The storage protocol every backend implements (SQLite embedded, in-memory twin, PostgreSQL later), checked
/// by one conformance suite (Tests/HearthStorageTests).
///
/// Threading contract: reads (`get`, `list`, `changes`, `lastSeq`) are called from one thread (the loop
/// thread); `apply` is called from one writer thread at a time, concurrently with reads. Reads see only what
/// `apply` has durably committed, never a partial group.
public protocol DocumentStore: AnyObject, Sendable {
    /// The highest seq durably stored; 0 for a new store.
    func lastSeq() throws(HearthError) -> UInt64

    /// The document at `path`, or nil.
    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument?

    /// Documents directly in `collection`, ordered by ID bytes, with IDs after `afterID` (all when nil), at
    /// most `limit`.
    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument]

    /// Durably applies `commits` (ascending seq, each above `lastSeq()`) in one transaction: all or none.
    /// Returns once the data is on stable storage (fsync). Also appends them to the change log and prunes
    /// the log past its retention.
    func apply(_ commits: [CommitRecord]) throws(HearthError)

    /// The commits with seq > `after`, ascending, at most `limit`. Nil when the log no longer holds every
    /// commit after `after` (pruned past retention), so the caller must fall back to a full reset.
    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]?

    /// The oldest seq the change log can resume from: `changes(after: s)` succeeds for every s >= this value.
    func oldestResumableSeq() throws(HearthError) -> UInt64

    /// Flushes and closes; no call may follow.
    func close()
}

/// Encodes a document's fields for storage and decodes them back. The server injects the JSON codec so that a
/// stored document can be spliced into a response without re-encoding; the engine and the store never see
/// the format.
public protocol DocumentCodec: Sendable {
    func encode(_ fields: MapValue) -> [UInt8]
    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue
}
