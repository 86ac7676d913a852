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
    /// The bytes of the commit-log frame that made the group durable (0 for a store without one); for a
    /// coalesced group, the sum of its groups' frames.
    public let logBytes: Int
    /// 0 for a group as a store acknowledged it; one more than its groups' highest for a coalesced group
    /// (`init(coalescing:)`).
    public let tier: Int
    /// The groups as the store acknowledged them that this one holds (1 unless coalesced).
    public let acknowledgedGroups: Int
    /// The requests the commits carried (`CommitRecord.request`), by ID, the oldest commit's for an ID
    /// carried twice; empty for most groups.
    let requests: [String: CommittedRequest]
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
    public convenience init(_ records: [CommitRecord], logBytes: Int = 0) {
        self.init(records, logBytes: logBytes, tier: 0, acknowledgedGroups: 1)
    }

    /// One group holding the commits of `groups` (adjacent, ascending, at least one): every read of a
    /// `PendingCommits` gives the same answer with it in their place, since each of its maps keeps the newest
    /// commit's version as the groups' reads do newest group first. Its index keys are built at once when one
    /// of the groups had built theirs (index reads are being served), else by the first read that needs them.
    public convenience init(coalescing groups: [PendingGroup]) {
        precondition(!groups.isEmpty, "a coalesced group holds at least one group")
        for (a, b) in zip(groups, groups.dropFirst()) {
            precondition(a.lastSeq < b.firstSeq, "coalesced groups must be ascending")
        }
        self.init(groups.flatMap(\.records), logBytes: groups.reduce(0) { $0 + $1.logBytes },
                  tier: groups.reduce(0) { max($0, $1.tier) } + 1, acknowledgedGroups: groups.reduce(0) { $0 + $1.acknowledgedGroups })
        if groups.contains(where: { $0.indexState.withLock { $0 != nil } }) { _ = indexKeys }
    }

    private init(_ records: [CommitRecord], logBytes: Int, tier: Int, acknowledgedGroups: Int) {
        self.logBytes = logBytes
        self.tier = tier
        self.acknowledgedGroups = acknowledgedGroups
        precondition(!records.isEmpty, "a pending group holds at least one commit")
        self.records = records
        firstSeq = records.first!.seq
        lastSeq = records.last!.seq
        var documents: [DocumentPath: StoredDocument?] = [:]
        var requests: [String: CommittedRequest] = [:]
        var catalog: [UInt8]?
        var bytes: Int64 = 0
        var writes = 0
        for r in records {
            writes += r.mutations.count
            for m in r.mutations { documents[m.path] = .some(m.after) }
            if let c = r.indexCatalog { catalog = c }
            if let req = r.request, requests[req.id] == nil { requests[req.id] = CommittedRequest(seq: r.seq, answer: req.answer) }
            bytes += r.imageBytes
        }
        self.documents = documents
        self.requests = requests
        pathHashes = Set(documents.keys.map(\.hashValue))
        self.catalog = catalog
        imageBytes = bytes
        writeCount = writes
    }

    /// The net index changes: per commit, removals first, then additions, so a key removed and added by one
    /// commit ends up added, and a later commit's change wins.
    var indexKeys: IndexState {
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
    /// The groups' totals, kept as groups come and go (a store's bounds check them at every append).
    public private(set) var commitCount = 0
    public private(set) var imageBytes: Int64 = 0
    public private(set) var writeCount = 0
    public private(set) var logBytes = 0

    public init(_ groups: [PendingGroup] = []) {
        for g in groups { append(g) }
    }

    public var isEmpty: Bool { groups.isEmpty }
    /// The newest pending seq.
    public var lastSeq: UInt64? { groups.last?.lastSeq }

    public mutating func append(_ group: PendingGroup) {
        groups.append(group)
        count(group, +1)
    }

    /// Drops the groups through `seq` (applied).
    public mutating func removeThrough(_ seq: UInt64) {
        let applied = groups.prefix { $0.lastSeq <= seq }.count
        for g in groups[..<applied] { count(g, -1) }
        groups.removeFirst(applied)
    }

    /// Replaces the adjacent groups at `range` with `coalesced`, which must hold exactly their commits
    /// (`PendingGroup(coalescing:)`).
    public mutating func coalesce(_ range: Range<Int>, into coalesced: PendingGroup) {
        precondition(!range.isEmpty && groups[range.lowerBound].firstSeq == coalesced.firstSeq
                     && groups[range.upperBound - 1].lastSeq == coalesced.lastSeq
                     && groups[range].reduce(0, { $0 + $1.records.count }) == coalesced.records.count,
                     "a coalesced group must hold exactly the groups it replaces")
        groups.replaceSubrange(range, with: [coalesced])
    }

    private mutating func count(_ g: PendingGroup, _ sign: Int) {
        commitCount += sign * g.records.count
        imageBytes += Int64(sign) * g.imageBytes
        writeCount += sign * g.writeCount
        logBytes += sign * g.logBytes
    }

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
        for g in groups { if let found = g.requests[id] { return found } }
        return nil
    }

    /// The newest index catalog the groups carry, if any.
    public var indexCatalog: [UInt8]? {
        for g in groups.reversed() { if let c = g.catalog { return c } }
        return nil
    }

    // MARK: Index reads

    /// The keys the groups touch in `[lower, upper)`, in order (reverse: descending).
    private func touched(from lower: [UInt8], to upper: [UInt8], reverse: Bool) -> PendingKeyCursor {
        PendingKeyCursor(groups, from: lower, to: upper, reverse: reverse)
    }

    /// The merged index entries `visitIndexEntries` visits (same bounds, order and limit), built.
    public func indexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                             base: some StoreReads) throws(HearthError) -> [IndexEntry] {
        try indexEntries(from: lower, to: upper, reverse: reverse, limit: limit, base: base,
                         touched: touched(from: lower, to: upper, reverse: reverse))
    }

    /// `indexEntries` with the range's touched keys already found.
    private func indexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int, base: some StoreReads,
                              touched: PendingKeyCursor) throws(HearthError) -> [IndexEntry] {
        if touched.isEmpty { return try base.scanIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit) }
        var out: [IndexEntry] = []
        try visitMerged(from: lower, to: upper, reverse: reverse, limit: limit, base: base, touched: touched) { (e) throws(HearthError) in
            out.append(try e.entry())
            return true
        }
        return out
    }

    /// The one merge of the groups' index changes with the base's entries: in order, the base's entries whose
    /// keys the groups leave alone and the keys the groups leave present (with the document the newest group
    /// gives them), until `limit` are visited or `visit` returns false. The base is read only as far as the
    /// page reaches, and the touched keys are taken from `touched` one at a time (`PendingKeyCursor`), so a
    /// page costs what it visits and what it skips, not the range's size. Each touched key hides at most one
    /// of the base's entries, so the base is never asked for more than `limit` plus the touched keys.
    /// `visit` runs while the base's scan steps: it may `get` through the base, never start another scan.
    private func visitMerged(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int, base: some StoreReads,
                             touched: PendingKeyCursor, _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        guard limit > 0 else { return }
        var touched = touched
        var left = limit
        var going = true
        // Visits a touched key's state, if it is present.
        func visitTouched(_ t: (key: [UInt8], path: DocumentPath?)) throws(HearthError) {
            guard let path = t.path else { return }
            left -= 1
            if try !IndexEntry(key: t.key, path: path).withView(visit) { going = false }
        }
        // Visits the touched keys before `key` in the scan's order (all of them when nil).
        func visitTouched(before key: UnsafeRawBufferPointer?) throws(HearthError) {
            while going, left > 0 {
                if let key { guard let c = touched.compareNext(to: key), c < 0 else { return } }
                guard let t = touched.next() else { return }
                try visitTouched(t)
            }
        }
        try base.visitIndexEntries(from: lower, to: upper, reverse: reverse,
                                   limit: Self.saturatingSum(limit, touched.bound)) { (e) throws(HearthError) in
            try visitTouched(before: e.key)
            guard going, left > 0 else { return false }
            if touched.compareNext(to: e.key) == 0 {
                // A key the groups touched: their state replaces the base's entry.
                try visitTouched(touched.next()!)
            } else {
                left -= 1
                if try !visit(e) { going = false }
            }
            return going && left > 0
        }
        try visitTouched(before: nil)
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
        let firstTouched = touched(from: lower, to: upper, reverse: reverse)
        if firstTouched.isEmpty {
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
        var pageTouched: PendingKeyCursor? = firstTouched
        while true {
            let want = limit - hits.count
            let entries = try indexEntries(from: lo, to: hi, reverse: reverse, limit: want, base: base,
                                           touched: pageTouched ?? touched(from: lo, to: hi, reverse: reverse))
            pageTouched = nil
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
        let touched = touched(from: lower, to: upper, reverse: reverse)
        if touched.isEmpty {
            return try base.visitIndexEntries(from: lower, to: upper, reverse: reverse, limit: limit, visit)
        }
        try visitMerged(from: lower, to: upper, reverse: reverse, limit: limit, base: base, touched: touched, visit)
    }

    /// `StoreReads.countIndex` merged: the base's count, corrected for the keys the groups touch (each counts
    /// when the groups leave it present, and the base's count holds those the base has). Which of them the
    /// base has is found by one point read each, or, when the base holds at most `walkFactor` entries per
    /// touched key in the range, by one walk of those entries beside the touched keys (a step of a walk costs
    /// a fraction of a point read). The walk counts beside the cursor rather than through `visitMerged`, which
    /// builds a view of every entry: counting through it took twice as long (52-62 ms against 28-45 ms for
    /// 100,000 documents during a bulk load).
    public func countIndex(from lower: [UInt8], to upper: [UInt8], base: some StoreReads) throws(HearthError) -> Int {
        let inRange = try base.countIndex(from: lower, to: upper)
        var touched = touched(from: lower, to: upper, reverse: false)
        if touched.isEmpty { return inRange }
        var present = 0, inBase = 0
        if inRange <= Self.walkFactor * touched.bound {
            try base.visitIndexEntries(from: lower, to: upper, reverse: false, limit: inRange) { e in
                // The touched keys up to this entry's, each compared once.
                while let c = touched.compareNext(to: e.key), c <= 0 {
                    if touched.next()!.path != nil { present += 1 }
                    if c == 0 { inBase += 1; break }
                }
                return !touched.isEmpty
            }
            // What is left comes after every entry the base holds in the range.
            while let t = touched.next() { if t.path != nil { present += 1 } }
        } else {
            while let t = touched.next() {
                if t.path != nil { present += 1 }
                if try base.countIndex(from: t.key, to: t.key + [0]) > 0 { inBase += 1 }
            }
        }
        return inRange + present - inBase
    }

    /// See `countIndex`.
    static let walkFactor = 4

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
