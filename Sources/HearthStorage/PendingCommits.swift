#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// One group of commits a store has made durable (in its commit log) and not yet applied to the structure it
/// reads from: the records as given, and their net effect on documents and index entries.
public final class PendingGroup: Sendable {
    /// The commits, ascending, as `apply` was given them.
    public let records: [CommitRecord]
    public let firstSeq: UInt64
    public let lastSeq: UInt64
    /// The newest version of each document the group changed (nil: deleted).
    let documents: [DocumentPath: StoredDocument?]
    /// The `hashValue`s of `documents`' paths: a point read hashes its path once and asks each group this
    /// set, which rules out almost every group without hashing the path again.
    let pathHashes: Set<Int>
    /// The newest index catalog the group carries.
    let catalog: [UInt8]?
    /// The images' bytes (`CommitRecord.imageBytes`), for bounding what is kept.
    public let imageBytes: Int64
    /// The documents the commits wrote, counted per commit (a document two commits wrote counts twice).
    public let writeCount: Int
    /// The bytes of the commit-log frame that made the group durable (0 for a store without one).
    public let logBytes: Int
    /// The group's net index changes, built by the first index read that needs them: most groups are
    /// applied before any read asks, and a fan-out group holds thousands of keys.
    private let indexState = Locked<IndexState?>(nil)

    /// The index keys the group changed, each once, in memcmp order, with the document each points at after
    /// the group (nil: removed). Flat: key `i` is `bytes[i == 0 ? 0 : ends[i - 1] ..< ends[i]]` (`FlatKeys`: a
    /// group of a bulk load holds hundreds of thousands of keys, which a dictionary of `[UInt8]` would hash a
    /// byte at a time and a sort of them would retain and release at every comparison).
    struct IndexState: Sendable {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        var paths: [DocumentPath?] = []

        func start(_ i: Int) -> Int { i == 0 ? 0 : ends[i - 1] }
    }

    /// `records` must be non-empty and ascending (the store validated them).
    public init(_ records: [CommitRecord], logBytes: Int = 0) {
        self.logBytes = logBytes
        precondition(!records.isEmpty, "a pending group holds at least one commit")
        self.records = records
        firstSeq = records.first!.seq
        lastSeq = records.last!.seq
        var documents: [DocumentPath: StoredDocument?] = [:]
        var catalog: [UInt8]?
        var bytes: Int64 = 0
        var writes = 0
        for r in records {
            writes += r.mutations.count
            for m in r.mutations { documents[m.path] = .some(m.after) }
            if let c = r.indexCatalog { catalog = c }
            bytes += r.imageBytes
        }
        self.documents = documents
        pathHashes = Set(documents.keys.map(\.hashValue))
        self.catalog = catalog
        imageBytes = bytes
        writeCount = writes
    }

    /// The net index changes: per commit, removals first, then additions, so a key removed and added by one
    /// commit ends up added, and a later commit's change wins.
    private var index: IndexState {
        indexState.withLock { state in
            if let state { return state }
            var keys = FlatKeys()
            var paths: [DocumentPath?] = []
            for r in records {
                for e in r.indexChanges.removed { keys.append(e.key); paths.append(nil) }
                for e in r.indexChanges.added { keys.append(e.key); paths.append(e.path) }
            }
            var built = IndexState()
            let order = keys.lastOfEachKey()
            built.bytes.reserveCapacity(keys.bytes.count)
            built.ends.reserveCapacity(order.count)
            built.paths.reserveCapacity(order.count)
            keys.bytes.withUnsafeBufferPointer { b in
                for i in order {
                    let s = keys.spans[i]
                    built.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: b[s.start ..< s.start + s.count]))
                    built.ends.append(built.bytes.count)
                    built.paths.append(paths[i])
                }
            }
            state = built
            return built
        }
    }

    /// memcmp order.
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                let n = min(x.count, y.count)
                let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
                return c != 0 ? c < 0 : x.count < y.count
            }
        }
    }

    /// The keys this group changed in `[lower, upper)` (no upper bound when `upper` is empty), ascending,
    /// each with its state after the group (nil: removed).
    fileprivate func keys(from lower: [UInt8], to upper: [UInt8]) -> [(key: [UInt8], path: DocumentPath?)] {
        let state = index
        return state.bytes.withUnsafeBytes { b in
            // The first key not before `bound`.
            func firstNotBefore(_ bound: [UInt8], from lo: Int) -> Int {
                bound.withUnsafeBytes { x in
                    var lo = lo, hi = state.ends.count
                    while lo < hi {
                        let mid = (lo + hi) / 2
                        let key = UnsafeRawBufferPointer(rebasing: b[state.start(mid) ..< state.ends[mid]])
                        if UTF8Order.compareBytes(key, x) < 0 { lo = mid + 1 } else { hi = mid }
                    }
                    return lo
                }
            }
            let lo = firstNotBefore(lower, from: 0)
            let end = upper.isEmpty ? state.ends.count : firstNotBefore(upper, from: lo)
            return (lo ..< end).map { i in (Array(b[state.start(i) ..< state.ends[i]]), state.paths[i]) }
        }
    }
}

/// The reads of one committed state of a backend that `PendingCommits` merges with.
public protocol PendingBase: StoreReads {
    /// `scanIndex` keeping the entries whose document the base lacks (their document nil): the base may lack
    /// a document the pending groups hold, and the merged scan must then count that entry as a hit.
    func scanIndexRows(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [(key: [UInt8], path: DocumentPath, document: StoredDocument?)]
    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument]
    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument]
    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]?
}

/// Commits made durable but not yet applied to a backend's readable state (the SQLite store acknowledges a
/// group once its commit log holds it and applies it to SQLite in the background), and the one rule that
/// merges them into every read: the state after the newest pending commit is the base state plus, for each
/// document and index key the pending groups touch, the newest group's version of it.
///
/// That holds for a base at any seq between the oldest group's first seq minus one and the newest group's last
/// seq, since a key the groups do not touch is the same in every such state, and a key they touch takes the
/// newest version whatever the base held. So a reader takes the pending groups first (`PendingCommits` is an
/// immutable value), then opens its base state, which the background applier can only have moved forward
/// over groups it took (`after(_:)` drops those already in the base). Every read here is exact at `seq`.
public struct PendingCommits: Sendable {
    /// Ascending, contiguous in apply order.
    public private(set) var groups: [PendingGroup] = []

    public init(_ groups: [PendingGroup] = []) { self.groups = groups }

    public var isEmpty: Bool { groups.isEmpty }
    /// The newest pending seq.
    public var lastSeq: UInt64? { groups.last?.lastSeq }
    public var commitCount: Int { groups.reduce(0) { $0 + $1.records.count } }
    public var imageBytes: Int64 { groups.reduce(0) { $0 + $1.imageBytes } }
    public var writeCount: Int { groups.reduce(0) { $0 + $1.writeCount } }
    public var logBytes: Int { groups.reduce(0) { $0 + $1.logBytes } }

    public mutating func append(_ group: PendingGroup) { groups.append(group) }

    /// Drops the groups through `seq` (applied).
    public mutating func removeThrough(_ seq: UInt64) { groups.removeAll { $0.lastSeq <= seq } }

    /// The groups a base at `baseSeq` does not hold yet; empty when the base is at or past the newest.
    public func after(_ baseSeq: UInt64) -> PendingCommits {
        guard let last = groups.last, last.lastSeq > baseSeq else { return PendingCommits() }
        return PendingCommits(groups.filter { $0.lastSeq > baseSeq })
    }

    // MARK: Point reads

    /// The newest pending version of `path`: `.some(nil)` deleted, nil untouched by the groups.
    public func document(_ path: DocumentPath) -> StoredDocument?? {
        guard !groups.isEmpty else { return nil }
        let hash = path.hashValue
        for g in groups.reversed() where g.pathHashes.contains(hash) {
            if let d = g.documents[path] { return .some(d) }
        }
        return nil
    }

    public func get(_ path: DocumentPath, base: some StoreReads) throws(HearthError) -> StoredDocument? {
        if let d = document(path) { return d }
        return try base.get(path)
    }

    /// The pending commit that carried request `id`, if any.
    public func committedRequest(_ id: String) -> CommittedRequest? {
        for g in groups {
            for r in g.records {
                if let req = r.request, req.id == id { return CommittedRequest(seq: r.seq, answer: req.answer) }
            }
        }
        return nil
    }

    /// The newest index catalog the groups carry, if any.
    public var indexCatalog: [UInt8]? {
        for g in groups.reversed() { if let c = g.catalog { return c } }
        return nil
    }

    // MARK: Index reads

    /// Every key the groups touch in `[lower, upper)`, with its newest state (nil: removed), ascending.
    private func touchedKeys(from lower: [UInt8], to upper: [UInt8]) -> [(key: [UInt8], path: DocumentPath?)] {
        guard upper.isEmpty || PendingGroup.precedes(lower, upper) else { return [] }
        if groups.count == 1 { return groups[0].keys(from: lower, to: upper) }
        // Oldest group first: of a key several groups touched, the newest group's state is the one kept.
        var keys = FlatKeys()
        var touched: [(key: [UInt8], path: DocumentPath?)] = []
        for g in groups {
            for t in g.keys(from: lower, to: upper) {
                keys.append(t.key)
                touched.append(t)
            }
        }
        return keys.lastOfEachKey().map { touched[$0] }
    }

    /// Whether `key` is one of `touched`'s keys (ascending, as `touchedKeys` returns them).
    private static func isTouched(_ key: UnsafeRawBufferPointer, _ touched: [(key: [UInt8], path: DocumentPath?)]) -> Bool {
        var lo = 0, hi = touched.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let c = touched[mid].key.withUnsafeBytes { UTF8Order.compareBytes($0, key) }
            if c == 0 { return true }
            if c < 0 { lo = mid + 1 } else { hi = mid }
        }
        return false
    }

    /// The merged index entries `visitIndexEntries` visits (same bounds, order and limit), built: the base's
    /// entries whose keys the groups leave alone, and the keys the groups leave present, from one read of the
    /// base.
    public func indexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                             base: some StoreReads) throws(HearthError) -> [IndexEntry] {
        try indexEntries(from: lower, to: upper, reverse: reverse, limit: limit, base: base,
                         touched: touchedKeys(from: lower, to: upper))
    }

    /// `indexEntries` with the range's touched keys already found.
    private func indexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int, base: some StoreReads,
                              touched: [(key: [UInt8], path: DocumentPath?)]) throws(HearthError) -> [IndexEntry] {
        guard limit > 0 else { return [] }
        if touched.isEmpty { return try base.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit) }
        // Each touched key hides at most one of the base's entries, so `limit` more than there are touched keys
        // always leave the `limit` first of the merge among those read.
        var fromBase: [IndexEntry] = []
        try base.visitIndexEntries(from: lower, to: upper, reverse: reverse,
                                   limit: Self.saturatingSum(limit, touched.count)) { (e) throws(HearthError) in
            if !Self.isTouched(e.key, touched) { fromBase.append(try e.entry()) }
            return true
        }
        var merged = fromBase + touched.compactMap { t in t.path.map { IndexEntry(key: t.key, path: $0) } }
        merged.sort { reverse ? PendingGroup.precedes($1.key, $0.key) : PendingGroup.precedes($0.key, $1.key) }
        return Array(merged.prefix(limit))
    }

    /// `StoreReads.scanIndex` merged: each entry joined with its newest document; entries whose document is
    /// missing are skipped and do not count toward `limit`.
    public func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                          base: some PendingBase) throws(HearthError) -> [IndexHit] {
        guard limit > 0 else { return [] }
        // The common case: the groups touch no key of the range. The base's entries are then the entries; a
        // document a group changed (its keys unchanged) is replaced by its newer version, and an entry whose
        // document the base lacks is a hit when a group holds that document. Only an entry left without a
        // document, or a document a group deleted, sends the scan the long way (the page would come up short).
        if touchedKeys(from: lower, to: upper).isEmpty {
            var hits: [IndexHit] = []
            var short = false
            for row in try base.scanIndexRows(from: lower, to: upper, reverse: reverse, limit: limit) {
                if let newer = document(row.path) {
                    if let doc = newer { hits.append(IndexHit(key: row.key, document: doc)) } else { short = true }
                } else if let doc = row.document {
                    hits.append(IndexHit(key: row.key, document: doc))
                } else {
                    short = true
                }
            }
            if !short { return hits }
        }
        var hits: [IndexHit] = []
        var lo = lower, hi = upper
        while true {
            let want = limit - hits.count
            let entries = try indexEntries(from: lo, to: hi, reverse: reverse, limit: want, base: base)
            for e in entries {
                if let doc = try get(e.path, base: base) { hits.append(IndexHit(key: e.key, document: doc)) }
            }
            // A short page means the range is exhausted; entries whose documents are missing leave room for more.
            guard hits.count < limit, entries.count == want, let last = entries.last else { break }
            // Below the empty key there is nothing (and an empty upper bound would mean none at all).
            if reverse && last.key.isEmpty { break }
            if reverse { hi = last.key } else { lo = last.key + [0] }
        }
        return hits
    }

    /// `StoreReads.visitIndexEntries` merged; straight through to the base when the groups touch no key of
    /// the range (the usual case for a narrow query).
    public func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int, base: some StoreReads,
                                  _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        let touched = touchedKeys(from: lower, to: upper)
        if touched.isEmpty {
            return try base.visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit, visit)
        }
        for e in try indexEntries(from: lower, to: upper, reverse: reverse, limit: limit, base: base, touched: touched) {
            guard try e.withView(visit) else { return }
        }
    }

    /// `StoreReads.countIndex` merged: the base's count, corrected key by key for the keys the groups touch.
    public func countIndex(from lower: [UInt8], to upper: [UInt8], base: some StoreReads) throws(HearthError) -> Int {
        var count = try base.countIndex(from: lower, to: upper)
        for t in touchedKeys(from: lower, to: upper) {
            let inBase = try base.countIndex(from: t.key, to: t.key + [0]) > 0
            count += (t.path != nil ? 1 : 0) - (inBase ? 1 : 0)
        }
        return count
    }

    private static func saturatingSum(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int.max : sum
    }

    // MARK: Document enumeration

    /// Merges the base's documents (in `order`) with the pending versions of the documents in `scope` after
    /// `after`: pending ones replace or remove the base's. `baseRead(limit)` reads the base's first `limit`.
    private func mergedDocuments(scope: (DocumentPath) -> Bool, after: (DocumentPath) -> Bool, limit: Int,
                                 order: @escaping (DocumentPath, DocumentPath) -> Bool,
                                 baseRead: (Int) throws(HearthError) -> [StoredDocument]) throws(HearthError) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        var touched: [DocumentPath: StoredDocument?] = [:]
        for g in groups.reversed() {
            for (p, d) in g.documents where touched.index(forKey: p) == nil && scope(p) && after(p) { touched[p] = .some(d) }
        }
        // Each pending document hides at most one of the base's, so `limit` more than there are pending ones
        // always leave the `limit` first of the merge among those read.
        let fromBase = try baseRead(Self.saturatingSum(limit, touched.count)).filter { touched.index(forKey: $0.path) == nil }
        var merged = fromBase + touched.values.compactMap { $0 }
        merged.sort { order($0.path, $1.path) }
        return Array(merged.prefix(limit))
    }

    public func list(collection: CollectionPath, afterID: String?, limit: Int, base: some PendingBase) throws(HearthError) -> [StoredDocument] {
        let idAfter: (String) -> Bool = { id in afterID.map { Array($0.utf8).lexicographicallyPrecedes(Array(id.utf8)) } ?? true }
        return try mergedDocuments(scope: { $0.collection == collection }, after: { idAfter($0.id) }, limit: limit,
                                   order: { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) },
                                   baseRead: { (n) throws(HearthError) in
                                       try base.list(collection: collection, afterID: afterID, limit: n)
                                   })
    }

    public func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int, base: some PendingBase) throws(HearthError) -> [StoredDocument] {
        try mergedDocuments(scope: scope.contains, after: { p in after.map { DocumentScope.precedes($0, p) } ?? true }, limit: limit,
                            order: DocumentScope.precedes,
                            baseRead: { (n) throws(HearthError) in try base.documents(in: scope, after: after, limit: n) })
    }

    // MARK: The change log

    /// `DocumentStore.changes` merged, for a base at `baseSeq` (these groups all past it): the base's commits,
    /// then the pending ones, without their index changes and catalogs.
    public func changes(after: UInt64, limit: Int, baseSeq: UInt64, base: some PendingBase) throws(HearthError) -> [CommitRecord]? {
        guard var out = try base.changes(after: after, limit: limit) else { return nil }
        guard limit > 0, out.count < limit else { return out }
        let from = max(after, out.last?.seq ?? baseSeq, baseSeq)
        for g in groups where g.lastSeq > from {
            for r in g.records where r.seq > from {
                guard out.count < limit else { return out }
                out.append(CommitRecord(seq: r.seq, commitTime: r.commitTime, mutations: r.mutations))
            }
        }
        return out
    }
}
