import HearthModel

/// The in-memory twin of the SQLite store: the same contract (`DocumentStore`), the same change log and retention
/// rules, the same secondary-index semantics (`MemoryIndex`), nothing on disk. Engine tests run against it, and the
/// conformance suite holds it to the same behaviour as every durable backend.
///
/// Thread-safe: one lock guards all state, so any number of threads may call it (the single-reader /
/// single-writer contract is a floor, not a requirement here). `apply` validates the whole group before it
/// changes anything, so a failed `apply` leaves the store untouched.
public final class MemoryStore: StoreAdministration {
    /// The documents of one collection, sorted by ID bytes (parallel arrays: `ids[i]` is `docs[i].path.id`).
    private struct Collection {
        var ids: [[UInt8]] = []
        var docs: [StoredDocument] = []
    }

    private struct LoggedCommit {
        var record: CommitRecord
        var bytes: Int64
        /// The commit's request ID (in `requests` until the commit is pruned).
        var requestID: String?
    }

    private struct State {
        var collections: [CollectionPath: Collection] = [:]
        /// Secondary-index entries, sorted by key.
        var index = MemoryIndex()
        /// The change log; entries before `logStart` are pruned and wait for compaction.
        var log: [LoggedCommit] = []
        var logStart = 0
        var logBytes: Int64 = 0
        var lastSeq: UInt64 = 0
        var prunedThrough: UInt64 = 0
        /// The latest index catalog a commit carried.
        var catalog: [UInt8]?
        /// Request IDs of the commits the log holds.
        var requests: [String: CommittedRequest] = [:]
        var closed = false
    }

    /// How long the change log keeps commits.
    public let retention: RetentionPolicy
    private let state = Locked(State())

    public init(retention: RetentionPolicy = .default) {
        self.retention = retention
    }

    public func lastSeq() throws(HearthError) -> UInt64 {
        try read { $0.lastSeq }
    }

    public func oldestResumableSeq() throws(HearthError) -> UInt64 {
        try read { $0.prunedThrough }
    }

    /// Random per instance: every MemoryStore is a history of its own.
    private let history = UInt64.random(in: 1...UInt64(Int64.max))

    public func historyID() throws(HearthError) -> UInt64 { history }

    public func indexCatalog() throws(HearthError) -> [UInt8]? {
        try read { $0.catalog }
    }

    public func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        try read { s in Self.document(at: path, in: s) }
    }

    /// A copy of the state (copy-on-write: nothing is copied until the store changes).
    public func snapshot() throws(HearthError) -> any StoreSnapshot {
        try read { s in Snapshot(state: s) }
    }

    private final class Snapshot: StoreSnapshot {
        let state: State
        init(state: State) { self.state = state }
        var seq: UInt64 { state.lastSeq }
        func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? { MemoryStore.document(at: path, in: state) }
        func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
            MemoryStore.scan(state, from: lower, to: upper, reverse: reverse, limit: limit)
        }
        func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
            state.index.range(from: lower, to: upper).count
        }
        func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                               _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
            for e in MemoryStore.entries(state, from: lower, to: upper, reverse: reverse, limit: limit) {
                guard try e.withView(visit) else { return }
            }
        }
        func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
            MemoryStore.documents(state, in: scope, after: after, limit: limit)
        }
        func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
            MemoryStore.changes(state, after: after, limit: limit)
        }
        func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? { state.requests[id] }
        func indexCatalog() throws(HearthError) -> [UInt8]? { state.catalog }
        func close() {}
    }

    /// `StoreSnapshot.documents`: the collections of the scope in path-byte order, each from its first ID
    /// after the cursor.
    private static func documents(_ s: State, in scope: DocumentScope, after: DocumentPath?, limit: Int) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        let afterCollection = after.map { Array($0.collection.description.utf8) }
        let collections = s.collections.keys
            .filter { c in
                switch scope {
                case .all: return true
                case .collection(let only): return c == only
                case .collectionGroup(let id): return c.id == id
                }
            }
            .map { (key: Array($0.description.utf8), path: $0) }
            .filter { c in afterCollection.map { !c.key.lexicographicallyPrecedes($0) } ?? true }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        var out: [StoredDocument] = []
        for c in collections {
            guard let docs = s.collections[c.path] else { continue }
            var start = 0
            if let after, c.key == afterCollection { start = upperBound(docs.ids, Array(after.id.utf8)) }
            for d in docs.docs[start...] {
                guard out.count < limit else { return out }
                out.append(d)
            }
        }
        return out
    }

    public func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        let after = afterID.map { Array($0.utf8) }
        return try read { s in
            guard limit > 0, let c = s.collections[collection] else { return [] }
            let start = after.map { Self.upperBound(c.ids, $0) } ?? 0
            let end = start + min(limit, c.ids.count - start)
            return Array(c.docs[start..<end])
        }
    }

    public func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        try read { s in Self.scan(s, from: lower, to: upper, reverse: reverse, limit: limit) }
    }

    private static func scan(_ s: State, from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) -> [IndexHit] {
        // An entry whose document is missing is skipped and does not count toward the limit (as in SQL, where
        // the join drops it before LIMIT applies).
        walk(s, from: lower, to: upper, reverse: reverse, limit: limit) { i in
            Self.document(at: s.index.paths[i], in: s).map { IndexHit(key: s.index.keys[i], document: $0) }
        }
    }

    /// The index positions in `lower ..< upper`, in scan order, each mapped by `take` (nil: skipped, not
    /// counted), up to `limit` results.
    private static func walk<T>(_ s: State, from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                _ take: (Int) -> T?) -> [T] {
        guard limit > 0 else { return [] }
        let range = s.index.range(from: lower, to: upper)
        var out: [T] = []
        var i = reverse ? range.upperBound - 1 : range.lowerBound
        while out.count < limit && range.contains(i) {
            if let t = take(i) { out.append(t) }
            i += reverse ? -1 : 1
        }
        return out
    }

    public func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        try read { s in s.index.range(from: lower, to: upper).count }
    }

    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        // The entries of one state, visited outside the lock (the visitor may read the store).
        for e in try read({ s in Self.entries(s, from: lower, to: upper, reverse: reverse, limit: limit) }) {
            guard try e.withView(visit) else { return }
        }
    }

    private static func entries(_ s: State, from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) -> [IndexEntry] {
        walk(s, from: lower, to: upper, reverse: reverse, limit: limit) { i in IndexEntry(key: s.index.keys[i], path: s.index.paths[i]) }
    }

    public func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try read { s in Self.changes(s, after: after, limit: limit) }
    }

    public func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        try read { s in s.requests[id] }
    }

    private static func changes(_ s: borrowing State, after: UInt64, limit: Int) -> [CommitRecord]? {
        guard after >= s.prunedThrough else { return nil }
        guard limit > 0 else { return [] }
        // Binary search for the first retained commit with seq > after.
        var lo = s.logStart, hi = s.log.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if s.log[mid].record.seq <= after { lo = mid + 1 } else { hi = mid }
        }
        return s.log[lo..<(lo + min(limit, s.log.count - lo))].map(\.record)
    }

    public func apply(_ commits: [CommitRecord]) throws(HearthError) {
        try state.withLock { (s: inout State) throws(HearthError) in
            guard !s.closed else { throw CommitValidation.closed }
            try CommitValidation.check(commits, after: s.lastSeq)
            guard let newest = commits.last else { return }
            for commit in commits {
                for m in commit.mutations { Self.write(m, into: &s) }
                s.index.apply(commit.indexChanges)
                if let catalog = commit.indexCatalog { s.catalog = catalog }
                // The log keeps mutations only: index changes and the catalog are not part of the change feed.
                var logged = commit
                logged.indexChanges = IndexChanges()
                logged.indexCatalog = nil
                logged.request = nil
                let bytes = commit.imageBytes
                s.log.append(LoggedCommit(record: logged, bytes: bytes, requestID: commit.request?.id))
                if let r = commit.request { s.requests[r.id] = CommittedRequest(seq: commit.seq, answer: r.answer) }
                s.logBytes += bytes
            }
            s.lastSeq = newest.seq
            prune(&s, cutoff: retention.ageCutoff(newest: newest.commitTime))
        }
    }

    public func close() {
        state.withLock { s in
            s = State()
            s.closed = true
        }
    }

    // MARK: - Internals

    // MARK: Administration (StoreAdministration)

    /// The in-memory store has no files to copy.
    public func backup(to directory: String, progress: (BackupProgress) -> Bool) throws(HearthError) -> BackupResult {
        throw HearthError(.unimplemented, "storage: the in-memory store cannot take an online backup (it has no files)")
    }

    public func collectionIDs(under parent: DocumentPath?) throws(HearthError) -> [String] {
        let prefix = parent.map { $0.description + "/" } ?? ""
        let paths = try read { s in s.collections.filter { !$0.value.docs.isEmpty }.keys.map(\.description) }
        var ids = Set<String>()
        for p in paths where p.hasPrefix(prefix) && p.utf8.count > prefix.utf8.count {
            let rest = p.utf8.dropFirst(prefix.utf8.count)
            ids.insert(String(decoding: rest.prefix { $0 != UInt8(ascii: "/") }, as: UTF8.self))
        }
        return ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    public func documentPaths(under root: ResourcePath, limit: Int) throws(HearthError) -> [DocumentPath] {
        guard limit > 0 else { return [] }
        let text = root.description
        let isDocument = root.segments.count % 2 == 0
        let docs: [DocumentPath] = try read { s in
            var found: [DocumentPath] = []
            for (path, c) in s.collections {
                let p = path.description
                let inside = isDocument ? p.hasPrefix(text + "/") : (p == text || p.hasPrefix(text + "/"))
                if inside { found += c.docs.map(\.path) }
            }
            return found
        }
        var paths: [DocumentPath] = []
        if isDocument, let doc = try? DocumentPath(root), try get(doc) != nil { paths.append(doc) }
        // Ordered as the SQLite store orders them: by collection path, then ID (bytes).
        paths += docs.sorted {
            let a = $0.collection.description, b = $1.collection.description
            return a == b ? $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) : a.utf8.lexicographicallyPrecedes(b.utf8)
        }
        return Array(paths.prefix(limit))
    }

    /// Nothing on disk.
    public func bytesOnDisk() -> Int64 { 0 }

    /// Nothing on disk to give back.
    public func compact() throws(HearthError) -> CompactionResult {
        _ = try lastSeq()   // UNAVAILABLE once closed, as every call
        return CompactionResult(method: "none", bytesBefore: 0, bytesAfter: 0)
    }

    private func read<R>(_ body: (borrowing State) -> R) throws(HearthError) -> R {
        try state.withLock { (s: inout State) throws(HearthError) -> R in
            guard !s.closed else { throw CommitValidation.closed }
            return body(s)
        }
    }

    private static func document(at path: DocumentPath, in s: borrowing State) -> StoredDocument? {
        guard let c = s.collections[path.collection] else { return nil }
        let key = Array(path.id.utf8)
        let i = lowerBound(c.ids, key)
        return i < c.ids.count && c.ids[i] == key ? c.docs[i] : nil
    }

    private static func write(_ m: Mutation, into s: inout State) {
        let collection = m.path.collection
        let key = Array(m.path.id.utf8)
        var c = s.collections.removeValue(forKey: collection) ?? Collection()
        let i = lowerBound(c.ids, key)
        let exists = i < c.ids.count && c.ids[i] == key
        switch (m.after, exists) {
        case (let doc?, true): c.docs[i] = doc
        case (let doc?, false): c.ids.insert(key, at: i); c.docs.insert(doc, at: i)
        case (nil, true): c.ids.remove(at: i); c.docs.remove(at: i)
        case (nil, false): break
        }
        if !c.ids.isEmpty { s.collections[collection] = c }
    }

    /// Drops the oldest commits while retention says so, then compacts the log array now and then.
    private func prune(_ s: inout State, cutoff: Int64) {
        while s.logStart < s.log.count {
            let oldest = s.log[s.logStart]
            guard retention.prunesOldest(commitMicros: oldest.record.commitTime.micros, logBytes: s.logBytes, cutoff: cutoff)
            else { break }
            s.logBytes -= oldest.bytes
            s.prunedThrough = oldest.record.seq
            if let id = oldest.requestID { s.requests[id] = nil }
            s.logStart += 1
        }
        if s.logStart > 64 && s.logStart * 2 > s.log.count {
            s.log.removeFirst(s.logStart)
            s.logStart = 0
        }
    }

    /// The first index whose ID is not below `key` (by bytes).
    private static func lowerBound(_ ids: [[UInt8]], _ key: [UInt8]) -> Int {
        var lo = 0, hi = ids.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ids[mid].lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The first index whose ID is above `key` (by bytes).
    private static func upperBound(_ ids: [[UInt8]], _ key: [UInt8]) -> Int {
        var lo = 0, hi = ids.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if key.lexicographicallyPrecedes(ids[mid]) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }
}
