import HearthModel

/// What operations need of a store besides `DocumentStore`, in one place: listing collection IDs, finding the
/// documents of a subtree (for a recursive delete), its size on disk, compaction, and online backup. Every
/// method may be called from any thread; reads run on a connection of their own (never the loop thread's),
/// and `compact` takes the writer's turn like one `apply`. A backend that cannot do one of these throws
/// UNIMPLEMENTED from it (a store that is not `StoreAdministration` at all gets UNIMPLEMENTED for all of
/// them from the server).
public protocol StoreAdministration: DocumentStore {
    /// The IDs of the collections directly under `parent` (root collections when nil) holding at least one
    /// document at any depth, sorted by UTF-8 bytes.
    func collectionIDs(under parent: DocumentPath?) throws(HearthError) -> [String]

    /// Up to `limit` paths of documents in the subtree at `root`: a collection's documents and everything
    /// below them, or a document and everything below it; ordered by collection path, then ID.
    func documentPaths(under root: ResourcePath, limit: Int) throws(HearthError) -> [DocumentPath]

    /// Bytes the store's files take on disk (0 for a store without files).
    func bytesOnDisk() -> Int64

    /// What a store that applies acknowledged groups in the background has done and has yet to do (nil: it
    /// applies each group before acknowledging it).
    var applier: ApplierStatus? { get }

    /// Gives the space of deleted data back to the filesystem; returns what it did.
    func compact() throws(HearthError) -> CompactionResult

    /// Writes a consistent copy of the whole store, as of one seq, into the data directory `directory`
    /// (created when missing; it must not hold a store already), while the store keeps serving reads and
    /// commits: a directory `SQLiteStore(directory:)` opens as it is. Runs on the calling thread (never the
    /// loop's) for as long as the copy takes; `progress` is called after each slice of the copy and stops it
    /// by returning false (the copy then throws UNAVAILABLE and leaves no store in `directory`). Returns the
    /// seq the copy holds (types in `StoreMaintenance.swift`).
    func backup(to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult
}

extension StoreAdministration {
    public var applier: ApplierStatus? { nil }
}

/// A background applier's counters since the store opened (`StoreAdministration.applier`).
public struct ApplierStatus: Sendable, Equatable {
    /// Groups applied, in how many transactions, and the most commits one transaction held.
    public var groups: Int
    public var transactions: Int
    public var largestTransaction: Int
    /// Commits acknowledged and not yet applied, and the groups holding them (coalesced as they wait).
    public var backlogCommits: Int
    public var backlogGroups: Int
    /// Groups the applier has replaced by coalesced ones (a group coalesced again counts again).
    public var coalescedGroups: Int
    /// Why the applier stopped (writes are refused until it can go on), or nil.
    public var stalled: String?
    /// The write-back pacer (SQLite: `SQLiteWriteback`): files written back to the disk while the applier and
    /// checkpoints write, write-backs that failed, and the first failure (nil: none).
    public var writebacks: Int
    public var writebackFailures: Int
    public var writebackFailure: String?
    /// Groups the commit log's writer held back while the backlog was over its soft bound (paced to the
    /// applier's rate), and over its hard bound (until the applier made room), and for how long in all (µs).
    public var pacedGroups: Int
    public var pacedMicros: UInt64
    public var blockedGroups: Int
    public var blockedMicros: UInt64

    public init(groups: Int, transactions: Int, largestTransaction: Int, backlogCommits: Int, backlogGroups: Int = 0,
                coalescedGroups: Int = 0, stalled: String? = nil,
                writebacks: Int = 0, writebackFailures: Int = 0, writebackFailure: String? = nil,
                pacedGroups: Int = 0, pacedMicros: UInt64 = 0, blockedGroups: Int = 0, blockedMicros: UInt64 = 0) {
        self.groups = groups
        self.transactions = transactions
        self.largestTransaction = largestTransaction
        self.backlogCommits = backlogCommits
        self.backlogGroups = backlogGroups
        self.coalescedGroups = coalescedGroups
        self.stalled = stalled
        self.writebacks = writebacks
        self.writebackFailures = writebackFailures
        self.writebackFailure = writebackFailure
        self.pacedGroups = pacedGroups
        self.pacedMicros = pacedMicros
        self.blockedGroups = blockedGroups
        self.blockedMicros = blockedMicros
    }
}

/// What `StoreAdministration.compact` did.
public struct CompactionResult: Sendable, Equatable {
    /// How: "incremental vacuum", "full vacuum", or "none" (nothing on disk).
    public var method: String
    public var bytesBefore: Int64
    public var bytesAfter: Int64

    public init(method: String, bytesBefore: Int64, bytesAfter: Int64) {
        self.method = method
        self.bytesBefore = bytesBefore
        self.bytesAfter = bytesAfter
    }
}

/// Walks sorted collection paths to the distinct child IDs under a prefix, with about one seek per ID and
/// one more per ID that has deeper collections: `next(cursor, strictly)` returns the first collection path at
/// or after (after, when `strictly`) `cursor` that starts with `prefix`, or nil. IDs come back sorted by UTF-8
/// bytes ("c" before "c-x", though "a/c-x" sorts between "a/c" and "a/c/d").
public enum CollectionIDWalk {
    public static func ids(prefix: String, next: (String, Bool) throws(HearthError) -> String?) throws(HearthError) -> [String] {
        var ids = Set<String>()
        var cursor = prefix
        var strictly = false
        while let v = try next(cursor, strictly) {
            let rest = v.utf8.dropFirst(prefix.utf8.count)
            if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
                let id = String(decoding: rest[..<slash], as: UTF8.self)
                ids.insert(id)
                // Skip the rest of the deeper collections of `id`: "0" is the byte after "/".
                cursor = prefix + id + "0"
                strictly = false
            } else {
                ids.insert(String(decoding: rest, as: UTF8.self))
                cursor = v
                strictly = true
            }
        }
        return ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
