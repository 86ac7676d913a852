import HearthModel
import HearthStorage

/// Recently read durable documents, so a hot document is served without a storage read, by the loop thread
/// and by reader threads alike (every access takes the cache's lock).
///
/// It can never be stale because the engine sees every write: `Engine.finish` refreshes each cached document
/// a durable batch changed (or drops it when deleted) and advances the cache's published seq, in one step
/// under the lock, before the batch's commits are acknowledged. So an entry is always the document's version
/// at `published`.
///
/// - The loop thread (`get`, `insert`) reads at the published seq. A read that misses goes to the store, which
///   may already hold a batch still being published; caching that version is safe when its seq is at most the
///   published one, because the batch's publication refreshes it if the batch changed it.
/// - A reader thread reads at its snapshot's seq S (`document(_:at:)`): an entry is the version at S when
///   S ≤ published (no publication the reader has not seen is pending in its snapshot) and the entry's own seq
///   is at most S (nothing changed it between S and published). Anything else is a miss, read from the
///   snapshot, and offered back (`offer`), which caches it only if S is the published seq.
///
/// Bounded by `capacityBytes` (document bytes plus a fixed overhead per entry); when full, a random entry is
/// evicted (O(1), and for a skewed workload close to LRU's hit rate). A document larger than an eighth of a
/// shard's share is not cached (512 KiB with the default 64 MiB), so a few huge ones cannot flush the rest.
///
/// The entries are split into shards by the path's hash (16 from 1 MiB of capacity, else one), each with its
/// own lock, published seq and share of the capacity, so reader threads rarely wait for each other;
/// everything above holds per shard (`publish` refreshes and advances each shard in one step under its lock).
public final class DocumentCache: Sendable {
    /// Estimated bytes per entry besides the document's data and path.
    static let entryOverhead = 96

    /// A path with its hash computed once, outside the lock: probing compares hashes before paths, so a
    /// lookup neither rehashes the path's segments nor touches the segments of the entries it passes.
    private struct Key: Hashable {
        let hash: Int
        let path: DocumentPath
        init(_ path: DocumentPath) {
            self.path = path
            hash = path.hashValue
        }
        static func == (a: Key, b: Key) -> Bool { a.hash == b.hash && a.path == b.path }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    private struct State {
        var entries: [Key: (doc: StoredDocument, slot: Int)] = [:]
        var keys: [Key] = []
        var bytes = 0
        var rng = SystemRandomNumberGenerator()
        var hits = 0
        var misses = 0
        /// The engine's published seq, as far as the entries are concerned.
        var published: UInt64
    }

    let capacityBytes: Int
    /// Each shard's capacity.
    private let shardCapacity: Int
    private let shards: [Locked<State>]
    /// `shards.count - 1` (the count is a power of two).
    private let shardMask: Int

    init(capacityBytes: Int, published: UInt64) {
        self.capacityBytes = capacityBytes
        let count = capacityBytes >= 1 << 20 ? 16 : 1
        shardMask = count - 1
        shardCapacity = capacityBytes / count
        shards = (0..<count).map { _ in Locked(State(published: published), spinning: true) }
    }

    private func shard(_ key: Key) -> Locked<State> { shards[key.hash & shardMask] }

    private func total(_ f: (State) -> Int) -> Int { shards.reduce(0) { sum, shard in sum + shard.withLock { f($0) } } }
    var count: Int { total { $0.entries.count } }
    var bytes: Int { total { $0.bytes } }
    var hits: Int { total { $0.hits } }
    var misses: Int { total { $0.misses } }

    /// The published version of `path` if cached (loop thread).
    func get(_ path: DocumentPath) -> StoredDocument? {
        let key = Key(path)
        return shard(key).withLock { s in
            guard let e = s.entries[key] else { s.misses += 1; return nil }
            s.hits += 1
            return e.doc
        }
    }

    /// The published version of `path` if cached, counting nothing (loop thread; see `noteHits`).
    func peek(_ path: DocumentPath) -> StoredDocument? {
        let key = Key(path)
        return shard(key).withLock { s in s.entries[key]?.doc }
    }

    /// Counts `n` hits of `peek` that answered reads.
    func noteHits(_ n: Int) { shards[0].withLock { $0.hits += n } }

    /// Caches a document read from the store whose seq is at most the published one (loop thread).
    func insert(_ doc: StoredDocument) {
        guard capacityBytes > 0 else { return }
        let key = Key(doc.path)
        shard(key).withLock { s in
            guard doc.seq <= s.published else { return }
            Self.insert(doc, key, into: &s, capacity: shardCapacity)
        }
    }

    /// The version of `path` at `seq`, if the cache can tell it (any thread; see the type's comment).
    public func document(_ path: DocumentPath, at seq: UInt64) -> StoredDocument? {
        let key = Key(path)
        return shard(key).withLock { s in
            guard seq <= s.published, let e = s.entries[key], e.doc.seq <= seq else { s.misses += 1; return nil }
            s.hits += 1
            return e.doc
        }
    }

    /// `document(_:at:)` for several paths.
    public func documents(_ paths: [DocumentPath], at seq: UInt64) -> [StoredDocument?] {
        paths.map { document($0, at: seq) }
    }

    /// A verified document a reader read from its snapshot at `seq`: cached when `seq` is the published seq
    /// (it is then the published version). Any thread.
    public func offer(_ doc: StoredDocument, readAt seq: UInt64) {
        guard capacityBytes > 0 else { return }
        let key = Key(doc.path)
        shard(key).withLock { s in
            guard seq == s.published, doc.seq <= seq else { return }
            Self.insert(doc, key, into: &s, capacity: shardCapacity)
        }
    }

    /// A durable batch is being published: refreshes every cached document it changed (drops deleted ones),
    /// then moves the published seq to `seq`, in one step (loop thread).
    func publish(_ records: [CommitRecord], through seq: UInt64) {
        var changed = Array(repeating: [(Key, StoredDocument?)](), count: shards.count)
        for record in records {
            for m in record.mutations {
                let key = Key(m.path)
                changed[key.hash & shardMask].append((key, m.after))
            }
        }
        for (i, shard) in shards.enumerated() {
            shard.withLock { s in
                for (key, after) in changed[i] {
                    guard let e = s.entries[key] else { continue }
                    if let after {
                        s.bytes += Self.size(after) - Self.size(e.doc)
                        s.entries[key] = (after, e.slot)
                    } else {
                        Self.evict(e.slot, from: &s)
                    }
                }
                s.published = max(s.published, seq)
            }
        }
    }

    private static func insert(_ doc: StoredDocument, _ key: Key, into s: inout State, capacity: Int) {
        let size = Self.size(doc)
        guard size <= capacity / 8 else { return }   // a few huge documents must not flush everything
        if let old = s.entries[key] {
            // Never replace a newer version with an older one.
            guard old.doc.seq <= doc.seq else { return }
            s.bytes += size - Self.size(old.doc)
            s.entries[key] = (doc, old.slot)
        } else {
            while s.bytes + size > capacity, !s.keys.isEmpty { evict(Int.random(in: 0..<s.keys.count, using: &s.rng), from: &s) }
            s.entries[key] = (doc, s.keys.count)
            s.keys.append(key)
            s.bytes += size
        }
    }

    private static func evict(_ slot: Int, from s: inout State) {
        let path = s.keys[slot]
        if let e = s.entries.removeValue(forKey: path) { s.bytes -= Self.size(e.doc) }
        let last = s.keys.removeLast()
        if slot < s.keys.count {
            s.keys[slot] = last
            s.entries[last]?.slot = slot
        }
    }

    private static func size(_ doc: StoredDocument) -> Int {
        doc.data.count + doc.path.path.segments.reduce(0) { $0 + $1.utf8.count } + entryOverhead
    }
}
