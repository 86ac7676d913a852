import HearthModel
import HearthStorage

/// Recently read durable documents, so a hot document is served without a storage read. Loop thread only.
///
/// It can never be stale because the engine sees every write: `Engine.finish` refreshes each cached document
/// a durable batch changed (or drops it when deleted) before the batch's commits are acknowledged. A read
/// that misses goes to the store, which may already hold a batch still being published; caching that
/// version is safe because the batch's publication refreshes it with the same version.
///
/// Bounded by `capacityBytes` (document bytes plus a fixed overhead per entry); when full, a random entry is
/// evicted (O(1), and for a skewed workload close to LRU's hit rate).
final class DocumentCache {
    /// Estimated bytes per entry besides the document's data and path.
    static let entryOverhead = 96

    let capacityBytes: Int
    private var entries: [DocumentPath: (doc: StoredDocument, slot: Int)] = [:]
    private var keys: [DocumentPath] = []
    private(set) var bytes = 0
    private var rng = SystemRandomNumberGenerator()
    private(set) var hits = 0
    private(set) var misses = 0

    init(capacityBytes: Int) { self.capacityBytes = capacityBytes }

    var count: Int { entries.count }

    func get(_ path: DocumentPath) -> StoredDocument? {
        guard let e = entries[path] else { misses += 1; return nil }
        hits += 1
        return e.doc
    }

    /// Caches a document read from the store.
    func insert(_ doc: StoredDocument) {
        guard capacityBytes > 0 else { return }
        let size = Self.size(doc)
        guard size <= capacityBytes / 8 else { return }   // a few huge documents must not flush everything
        if let old = entries[doc.path] {
            bytes += size - Self.size(old.doc)
            entries[doc.path] = (doc, old.slot)
        } else {
            while bytes + size > capacityBytes, !keys.isEmpty { evict(Int.random(in: 0..<keys.count, using: &rng)) }
            entries[doc.path] = (doc, keys.count)
            keys.append(doc.path)
            bytes += size
        }
    }

    /// A committed change: refreshes the entry if the document is cached (drops it when deleted).
    func committed(_ path: DocumentPath, _ after: StoredDocument?) {
        guard let e = entries[path] else { return }
        if let after {
            bytes += Self.size(after) - Self.size(e.doc)
            entries[path] = (after, e.slot)
        } else {
            evict(e.slot)
        }
    }

    private func evict(_ slot: Int) {
        let path = keys[slot]
        if let e = entries.removeValue(forKey: path) { bytes -= Self.size(e.doc) }
        let last = keys.removeLast()
        if slot < keys.count {
            keys[slot] = last
            entries[last]?.slot = slot
        }
    }

    private static func size(_ doc: StoredDocument) -> Int {
        doc.data.count + doc.path.path.segments.reduce(0) { $0 + $1.utf8.count } + entryOverhead
    }
}
