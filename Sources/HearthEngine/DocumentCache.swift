#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// Recently read durable documents, so a hot document is served without a storage read, by the loop thread
/// and by reader threads alike (every access takes the lock of the entry's shard).
///
/// It can never be stale because the engine sees every write: `Engine.finish` refreshes each cached document
/// a durable batch changed (or drops it when deleted) and advances the cache's published seq, in one step
/// under the lock, before the batch's commits are acknowledged. So an entry is always the document's version
/// at `published`.
///
/// - The loop thread (`get`, `insert`) reads at the published seq. A read that misses goes to the store, which
///   may already hold a batch still being published; caching that version is safe when its seq is at most the
///   published one, because the batch's publication refreshes it if the batch changed it.
/// - A reader thread reads at its snapshot's seq S (`document(_:at:)`, `read(_:at:_:)`): an entry is the
///   version at S when S ≤ published (no publication the reader has not seen is pending in its snapshot) and
///   the entry's own seq is at most S (nothing changed it between S and published). Anything else is a miss,
///   read from the snapshot, and offered back (`offer`), which caches it only if S is the published seq.
///
/// **Renderings.** An entry may also hold a rendering of its version (`DocumentRendering`: bytes its user
/// derives from the document alone, kept around the document's data rather than with a copy of it; the
/// server keeps the document's wire form there). `read` hands a reader the rendering's parts inside the lock,
/// to copy, so a hit neither retains the shared document nor encodes it again. A rendering
/// belongs to one version: `publish` drops it with the version it rendered, and `attach` adds one only to
/// the version it was made from.
///
/// **Keys.** An entry is found by its path's `Key` (the segments' bytes joined by `/`, and a hash of them),
/// built outside the lock; inside, the lookup compares a hash and then bytes. Two paths whose hashes are equal cannot both be cached: the later one replaces the earlier one (a
/// cache may always decline to hold something).
///
/// **Decoded fields.** A version the loop published from a commit keeps the fields the commit built
/// (`publish`'s `fields`), so the next write of a hot document starts from them instead of decoding the
/// stored bytes again (`getForWrite`, loop thread only; readers never touch them). They belong to that version
/// alone: any other version put in its place comes without them. Counted at `fieldsCost`, an estimate of the
/// decoded tree's heap.
///
/// Bounded by `capacityBytes` (document bytes, key, rendering, decoded fields and a fixed overhead per entry); when full, a
/// random entry is evicted (O(1), and for a skewed workload close to LRU's hit rate). A document larger than
/// an eighth of a shard's share is not cached (512 KiB with the default 64 MiB), so a few huge ones cannot
/// flush the rest.
///
/// The entries are split into shards by the key's hash (16 from 1 MiB of capacity, else one), each with its
/// own lock, published seq and share of the capacity, so reader threads rarely wait for each other;
/// everything above holds per shard (`publish` refreshes and advances each shard in one step under its lock).
/// The seed of `DocumentCache.Key.hash`, random per process.
private let keySeed = UInt64.random(in: 0 ... .max)

public final class DocumentCache: Sendable {
    /// Estimated bytes per entry besides the document's data, its key and its rendering.
    static let entryOverhead = 96

    /// A document path as the cache finds it: its segments' UTF-8 joined by `/`, and a hash of those bytes.
    /// The bytes name one path: a valid path's segments are non-empty and hold no `/`, and `assign(collection:
    /// id:)` refuses an ID holding one, so no two paths (nor a damaged index entry and a path) share a key.
    /// `assign` reuses the buffer, so a reader probing many paths with one key allocates nothing.
    public struct Key: Sendable {
        public private(set) var hash = 0
        private(set) var bytes: [UInt8] = []

        public init() {}

        public init(_ path: DocumentPath) { assign(path) }

        /// Makes this the key of `path`.
        public mutating func assign(_ path: DocumentPath) {
            bytes.removeAll(keepingCapacity: true)
            for (i, segment) in path.path.segments.enumerated() {
                if i > 0 { bytes.append(47) }
                bytes.append(contentsOf: segment.utf8)
            }
            rehash()
        }

        /// Makes this the key of the document `id` in the collection at path `collection` (UTF-8, `a/b/c`),
        /// as an index entry holds them: the same key as `assign(_:)` of that document's path. False (the key
        /// is then unusable) when `id` holds a `/`: no document has such an ID.
        public mutating func assign(collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer) -> Bool {
            guard !id.contains(47) else { return false }
            bytes.removeAll(keepingCapacity: true)
            bytes.append(contentsOf: collection)
            bytes.append(47)
            bytes.append(contentsOf: id)
            rehash()
            return true
        }

        private mutating func rehash() {
            hash = bytes.withUnsafeBytes { Self.hash($0) }
        }

        /// A 64-bit multiply-xorshift hash of `p`, seeded per process: probing compares hashes first, and a
        /// collision only costs a cached entry (the later path replaces it).
        @inline(__always)
        static func hash(_ p: UnsafeRawBufferPointer) -> Int {
            let m: UInt64 = 0x9E37_79B9_7F4A_7C15
            var h = keySeed ^ UInt64(p.count)
            var i = 0
            while i + 8 <= p.count {
                h = (h ^ p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* m
                h ^= h >> 29
                i += 8
            }
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < p.count {
                tail |= UInt64(p[i]) << shift
                shift += 8
                i += 1
            }
            h = (h ^ tail) &* m
            h ^= h >> 32
            return Int(truncatingIfNeeded: h)
        }

        /// A key with the given bytes and hash (tests: keys whose hashes collide).
        init(bytes: [UInt8], hash: Int) {
            self.bytes = bytes
            self.hash = hash
        }

        @inline(__always)
        func matches(_ other: Key) -> Bool {
            hash == other.hash && bytes.withUnsafeBytes { a in
                other.bytes.withUnsafeBytes { b in a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0) }
            }
        }
    }

    /// What `read` found.
    public enum Lookup {
        /// The version at the seq, whose rendering `read` handed to its closure.
        case rendered
        /// The version at the seq, rendered in this many bytes: more than the caller said it had room for
        /// (make room outside the lock, then read again).
        case needsRoom(Int)
        /// The version at the seq, not yet rendered (render it, then `attach` the rendering).
        case unrendered(StoredDocument)
        /// Not cached, or not as of the seq.
        case miss
    }

    struct Entry {
        var key: Key
        var doc: StoredDocument
        var rendering: DocumentRendering?
        /// `doc`'s fields, decoded (see the type's comment); nil when not kept.
        var fields: MapValue?
        /// The bytes counted for `fields` (`fieldsCost`); 0 when not kept.
        var fieldsBytes = 0
    }

    private struct State {
        /// Entry index by key hash.
        var slots: [Int: Int32] = [:]
        var entries: [Entry] = []
        var bytes = 0
        var rng = SystemRandomNumberGenerator()
        var hits = 0
        var misses = 0
        /// The engine's published seq, as far as the entries are concerned.
        var published: UInt64

        /// The index of the entry for `key`, if cached.
        @inline(__always)
        func find(_ key: Key) -> Int? {
            guard let i = slots[key.hash] else { return nil }
            let index = Int(i)
            return entries[index].key.matches(key) ? index : nil
        }
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

    @inline(__always)
    private func shard(_ key: Key) -> Locked<State> { shards[key.hash & shardMask] }

    private func total(_ f: (State) -> Int) -> Int { shards.reduce(0) { sum, shard in sum + shard.withLock { f($0) } } }
    var count: Int { total { $0.entries.count } }
    var bytes: Int { total { $0.bytes } }
    var hits: Int { total { $0.hits } }
    var misses: Int { total { $0.misses } }

    /// The published version of `path` if cached (loop thread).
    func get(_ path: DocumentPath) -> StoredDocument? { getForWrite(path)?.doc }

    /// The published version of `path` if cached, with its decoded fields when the cache keeps them (loop
    /// thread: a write's before image), counted as a hit or a miss.
    func getForWrite(_ path: DocumentPath) -> (doc: StoredDocument, fields: MapValue?)? {
        let key = Key(path)
        return shard(key).withLock { s in
            guard let i = s.find(key) else { s.misses += 1; return nil }
            s.hits += 1
            return (s.entries[i].doc, s.entries[i].fields)
        }
    }

    /// The published version of `key`'s document if cached, with its rendering if it has one, counting nothing
    /// (loop thread; see `noteHits`).
    func peekRendered(_ key: Key) -> (doc: StoredDocument, rendering: DocumentRendering?)? {
        shard(key).withLock { s in s.find(key).map { (s.entries[$0].doc, s.entries[$0].rendering) } }
    }

    /// Counts `n` hits of `peekRendered` that answered reads.
    func noteHits(_ n: Int) { shards[0].withLock { $0.hits += n } }

    /// Caches a document read from the store whose seq is at most the published one (loop thread).
    func insert(_ doc: StoredDocument) {
        guard capacityBytes > 0 else { return }
        let key = Key(doc.path)
        shard(key).withLock { s in
            guard doc.seq <= s.published else { return }
            Self.insert(doc, key, rendering: nil, into: &s, capacity: shardCapacity)
        }
    }

    /// The version of `path` at `seq`, if the cache can tell it (any thread; see the type's comment).
    public func document(_ path: DocumentPath, at seq: UInt64) -> StoredDocument? {
        let key = Key(path)
        return shard(key).withLock { s in
            guard seq <= s.published, let i = s.find(key), s.entries[i].doc.seq <= seq else { s.misses += 1; return nil }
            s.hits += 1
            return s.entries[i].doc
        }
    }

    /// `document(_:at:)` for several paths.
    public func documents(_ paths: [DocumentPath], at seq: UInt64) -> [StoredDocument?] {
        paths.map { document($0, at: seq) }
    }

    /// Looks `key` up as of `seq` (any thread, the rule of `document(_:at:)`). On a hit whose version is
    /// rendered in at most `room` bytes, calls `rendered` with the rendering's parts inside the shard's lock: it
    /// must only copy them, into room it already has (what it throws is rethrown, the lock released). A
    /// larger rendering is `.needsRoom`: the caller makes room outside the lock, so the loop, which takes
    /// every shard's lock to publish, never waits for a reader's buffer to grow.
    public func read<E: Error>(_ key: Key, at seq: UInt64, room: Int,
                               _ rendered: (RenderedParts) throws(E) -> Void) throws(E) -> Lookup {
        try shard(key).withLock { (s) throws(E) -> Lookup in
            guard seq <= s.published, let i = s.find(key), s.entries[i].doc.seq <= seq else { s.misses += 1; return .miss }
            guard let rendering = s.entries[i].rendering else { s.hits += 1; return .unrendered(s.entries[i].doc) }
            let size = rendering.renderedCount(around: s.entries[i].doc.data)
            guard size <= room else { return .needsRoom(size) }     // counted when read again
            s.hits += 1
            try rendering.withParts(around: s.entries[i].doc.data, rendered)
            return .rendered
        }
    }

    /// Keeps `rendering`, made from version `seq` of the document at `key`, with that version if it is still
    /// cached (any thread).
    public func attach(_ rendering: DocumentRendering, to key: Key, version seq: UInt64) {
        shard(key).withLock { s in
            guard var i = s.find(key), s.entries[i].doc.seq == seq, s.entries[i].rendering == nil else { return }
            // A rendering serves reads, kept fields only the next write: the fields give way when both do not fit.
            if Self.size(s.entries[i]) + rendering.count > shardCapacity / 8, s.entries[i].fields != nil {
                s.bytes -= s.entries[i].fieldsBytes
                s.entries[i].fields = nil
                s.entries[i].fieldsBytes = 0
            }
            guard Self.size(s.entries[i]) + rendering.count <= shardCapacity / 8 else { return }
            // Room is made as `insert` makes it, by evicting other entries.
            i = Self.makeRoom(keeping: key, at: i, until: shardCapacity - rendering.count, in: &s)
            s.entries[i].rendering = rendering
            s.bytes += rendering.count
        }
    }

    /// A verified document a reader read from its snapshot at `seq`, with its rendering if made: cached when
    /// `seq` is the published seq (it is then the published version). Any thread.
    public func offer(_ doc: StoredDocument, readAt seq: UInt64, rendering: DocumentRendering? = nil) {
        offer(doc, key: Key(doc.path), readAt: seq, rendering: rendering)
    }

    /// `offer` under a key the caller made (tests give keys whose hashes collide).
    func offer(_ doc: StoredDocument, key: Key, readAt seq: UInt64, rendering: DocumentRendering?) {
        guard capacityBytes > 0 else { return }
        shard(key).withLock { s in
            guard seq == s.published, doc.seq <= seq else { return }
            Self.insert(doc, key, rendering: rendering, into: &s, capacity: shardCapacity)
        }
    }

    /// A durable batch is being published: refreshes every cached document it changed (drops deleted ones, and
    /// the renderings of changed ones), then moves the published seq to `seq`, in one step (loop thread).
    /// `fields[r][k]`, when given, are the decoded fields of `records[r].mutations[k].after`, kept with that
    /// version while they fit (`fieldsCost`).
    func publish(_ records: [CommitRecord], through seq: UInt64, fields: [[MapValue?]]? = nil) {
        var changed = Array(repeating: [(Key, StoredDocument?, MapValue?)](), count: shards.count)
        for (r, record) in records.enumerated() {
            for (k, m) in record.mutations.enumerated() {
                let key = Key(m.path)
                let decoded = m.after == nil ? nil : fields.flatMap { $0[r].isEmpty ? nil : $0[r][k] }
                changed[key.hash & shardMask].append((key, m.after, decoded))
            }
        }
        for (i, shard) in shards.enumerated() {
            shard.withLock { s in
                for (key, after, decoded) in changed[i] {
                    guard var e = s.find(key) else { continue }
                    if let after {
                        s.bytes += Self.size(after, key) - Self.size(s.entries[e])
                        s.entries[e].doc = after
                        s.entries[e].rendering = nil
                        s.entries[e].fields = nil
                        s.entries[e].fieldsBytes = 0
                        // A version that grew keeps the shard within its share as `insert` does: one grown past
                        // what is cached at all leaves, and otherwise random others go.
                        if Self.size(after, key) > shardCapacity / 8 {
                            Self.evict(e, from: &s)
                            continue
                        }
                        e = Self.makeRoom(keeping: key, at: e, until: shardCapacity, in: &s)
                        // The decoded fields take room as a rendering does (`attach`): other entries go for them.
                        guard let decoded else { continue }
                        let cost = Self.fieldsCost(decoded)
                        guard Self.size(after, key) + cost <= shardCapacity / 8 else { continue }
                        e = Self.makeRoom(keeping: key, at: e, until: shardCapacity - cost, in: &s)
                        guard s.bytes + cost <= shardCapacity else { continue }
                        s.entries[e].fields = decoded
                        s.entries[e].fieldsBytes = cost
                        s.bytes += cost
                    } else {
                        Self.evict(e, from: &s)
                    }
                }
                s.published = max(s.published, seq)
            }
        }
    }

    /// Forgets every entry and moves the published seq to `seq` (a node that missed commits it can no longer
    /// read: nothing cached can be trusted to be the version at `seq`). Loop thread.
    func reset(published seq: UInt64) {
        for shard in shards {
            shard.withLock { s in
                s.slots.removeAll()
                s.entries.removeAll()
                s.bytes = 0
                s.published = seq
            }
        }
    }

    /// The problems with the shards' internal state, if any (tests): each slot names the entry with its hash,
    /// each entry has its slot, the byte counts add up, and no shard is over its share.
    func inconsistencies() -> [String] {
        var out: [String] = []
        for (n, shard) in shards.enumerated() {
            shard.withLock { s in
                if s.slots.count != s.entries.count { out.append("shard \(n): \(s.slots.count) slots for \(s.entries.count) entries") }
                for (hash, i) in s.slots where Int(i) >= s.entries.count || s.entries[Int(i)].key.hash != hash {
                    out.append("shard \(n): the slot of hash \(hash) names entry \(i)")
                }
                let total = s.entries.reduce(0) { $0 + Self.size($1) }
                if total != s.bytes { out.append("shard \(n): \(s.bytes) bytes counted, \(total) held") }
                if s.bytes > shardCapacity { out.append("shard \(n): \(s.bytes) bytes, over its \(shardCapacity)") }
            }
        }
        return out
    }

    private static func insert(_ doc: StoredDocument, _ key: Key, rendering: DocumentRendering?, into s: inout State, capacity: Int) {
        let size = Self.size(doc, key) + (rendering?.count ?? 0)
        guard size <= capacity / 8 else { return }   // a few huge documents must not flush everything
        if let old = s.slots[key.hash].map({ Int($0) }) {
            if s.entries[old].key.matches(key) {
                // Never replace a newer version with an older one.
                guard s.entries[old].doc.seq <= doc.seq else { return }
                if s.entries[old].doc.seq == doc.seq, rendering == nil { return }   // the same version, maybe rendered
                // The same version keeps its decoded fields; another one comes without them.
                let same = s.entries[old].doc.seq == doc.seq
                let fields = same ? s.entries[old].fields : nil, fieldsBytes = same ? s.entries[old].fieldsBytes : 0
                s.bytes += size + fieldsBytes - Self.size(s.entries[old])
                s.entries[old].doc = doc
                s.entries[old].rendering = rendering
                s.entries[old].fields = fields
                s.entries[old].fieldsBytes = fieldsBytes
                // A larger version or a rendering added: random others go while the shard is over its share.
                _ = makeRoom(keeping: key, at: old, until: capacity, in: &s)
                return
            }
            evict(old, from: &s)                       // another path with the same hash: the newcomer wins
        }
        while s.bytes + size > capacity, !s.entries.isEmpty { evict(Int.random(in: 0..<s.entries.count, using: &s.rng), from: &s) }
        s.slots[key.hash] = Int32(s.entries.count)
        s.entries.append(Entry(key: key, doc: doc, rendering: rendering))
        s.bytes += size
    }

    /// Evicts random entries other than `key`'s (at `index`) while the shard holds more than `limit` bytes;
    /// returns where `key`'s entry is then (an eviction moves the last entry into the hole).
    private static func makeRoom(keeping key: Key, at index: Int, until limit: Int, in s: inout State) -> Int {
        var i = index
        while s.bytes > limit, s.entries.count > 1 {
            var victim = Int.random(in: 0..<(s.entries.count - 1), using: &s.rng)
            if victim >= i { victim += 1 }
            evict(victim, from: &s)
            i = s.find(key)!
        }
        return i
    }

    private static func evict(_ index: Int, from s: inout State) {
        s.bytes -= size(s.entries[index])
        s.slots.removeValue(forKey: s.entries[index].key.hash)
        let last = s.entries.removeLast()
        if index < s.entries.count {
            s.entries[index] = last
            s.slots[last.key.hash] = Int32(index)
        }
    }

    private static func size(_ doc: StoredDocument, _ key: Key) -> Int {
        doc.data.count + key.bytes.count + entryOverhead
    }

    private static func size(_ e: Entry) -> Int {
        size(e.doc, e.key) + (e.rendering?.count ?? 0) + e.fieldsBytes
    }

    /// An estimate of the heap a decoded document takes: its field arrays (a key and a value, 48 bytes each,
    /// plus a 32-byte header per map or array), and the bytes of every string, key, blob or path too long
    /// to be stored inline.
    static func fieldsCost(_ fields: MapValue) -> Int {
        func text(_ s: String) -> Int { s.utf8.count > 15 ? s.utf8.count + 32 : 0 }
        func value(_ v: Value) -> Int {
            switch v {
            case .string(let s): return text(s)
            case .bytes(let b): return b.count + 32
            case .reference(let p): return p.description.utf8.count + 64
            case .array(let a): return 32 + a.reduce(0) { $0 + 48 + value($1) }
            case .map(let m): return map(m)
            default: return 0
            }
        }
        func map(_ m: MapValue) -> Int { 32 + m.reduce(0) { $0 + 48 + text($1.key) + value($1.value) } }
        return map(fields)
    }
}
