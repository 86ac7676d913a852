import HearthModel
import HearthStorage

/// One entry of a snapshot's changes, as Firestore's docChanges: applying the changes in order to the
/// previous result (removed: delete at `oldIndex`; added: insert at `newIndex`; modified: delete at
/// `oldIndex`, insert at `newIndex`) gives the new result exactly.
public struct ViewChange: Sendable {
    public enum Kind: String, Sendable { case added, removed, modified }
    public var kind: Kind
    public var document: ResultDocument
    public var oldIndex: Int
    public var newIndex: Int
    /// `modified`: the version the previous result held (for `rowsBefore`; not sent).
    public var previous: ResultDocument? = nil

    /// The result before `changes` (one snapshot's) from the result after them, both in `q`'s order: the rows
    /// added or modified dropped, the removed rows and the modified rows' previous versions merged back in at
    /// their places. A listener that falls behind part way through a publication keeps this, what its client
    /// holds. O(rows + changes × log changes).
    static func rowsBefore(_ changes: [ViewChange], after rows: [ResultDocument], query q: ValidQuery) -> [ResultDocument] {
        var replaced = Set<DocumentPath>(minimumCapacity: changes.count)
        var restored: [ResultDocument] = []
        restored.reserveCapacity(changes.count)
        for c in changes {
            switch c.kind {
            case .added: replaced.insert(c.document.stored.path)
            case .removed: restored.append(c.document)
            case .modified:
                replaced.insert(c.document.stored.path)
                restored.append(c.previous ?? c.document)
            }
        }
        restored.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
        var out: [ResultDocument] = []
        out.reserveCapacity(rows.count + restored.count)
        var j = 0
        for r in rows where !replaced.contains(r.stored.path) {
            while j < restored.count && q.compare(restored[j].stored.path, restored[j].fields, r.stored.path, r.fields) < 0 {
                out.append(restored[j])
                j += 1
            }
            out.append(r)
        }
        out.append(contentsOf: restored[j...])
        return out
    }
}

extension Array where Element == ResultDocument {
    /// How many of these rows (in `q`'s order) sort before the document at `path` with `fields`: where it
    /// is, or would go. The ends are tried first: a feed's new document goes in at one of them (the newest
    /// post atop a window by time), found with one or two comparisons instead of a whole binary search.
    func lowerBound(_ path: DocumentPath, _ fields: MapValue, query q: ValidQuery) -> Int {
        guard let first = self.first else { return 0 }
        if q.compare(first.stored.path, first.fields, path, fields) >= 0 { return 0 }
        let last = self[count - 1]
        if q.compare(last.stored.path, last.fields, path, fields) < 0 { return count }
        // rows[0] sorts before the document and rows[count - 1] does not.
        var lo = 1, hi = count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if q.compare(self[mid].stored.path, self[mid].fields, path, fields) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

/// A query listener's result: documents in query order.
struct QueryView {
    var rows: [ResultDocument] = []

    func index(of path: DocumentPath) -> Int? { rows.firstIndex { $0.stored.path == path } }

    /// Firestore's docChanges from `old` to `new`: removed, then added, then modified, each group in query
    /// order (removed by their old position), with indices computed one change at a time. `touched`, when
    /// given, lists the only documents that can differ (the paths a commit changed), so the work follows the
    /// change rather than the size of the result.
    static func changes(from old: [ResultDocument], to new: [ResultDocument], query q: ValidQuery,
                        touched: Set<DocumentPath>? = nil) -> [ViewChange] {
        func relevant(_ r: ResultDocument) -> Bool { touched?.contains(r.stored.path) ?? true }
        var oldByPath: [DocumentPath: ResultDocument] = [:]
        for r in old where relevant(r) { oldByPath[r.stored.path] = r }
        var newByPath: [DocumentPath: ResultDocument] = [:]
        for r in new where relevant(r) { newByPath[r.stored.path] = r }

        var oldIndex: [DocumentPath: Int] = [:]
        for (i, r) in old.enumerated() where relevant(r) { oldIndex[r.stored.path] = i }
        var removed: [Int] = []
        for (i, r) in old.enumerated() where relevant(r) && newByPath[r.stored.path] == nil { removed.append(i) }
        let added = new.filter { relevant($0) && oldByPath[$0.stored.path] == nil }
        var modified: [(oldIndex: Int, doc: ResultDocument)] = []
        for r in new where relevant(r) {
            guard let o = oldByPath[r.stored.path], o.stored.updateTime != r.stored.updateTime || o.fields != r.fields else { continue }
            modified.append((oldIndex[r.stored.path]!, r))
        }
        return ordered(old: old, removed: removed, added: added, modified: modified, query: q)
    }

    /// Firestore's docChanges from `old`, given what changed: `removed` (indices into `old`, ascending),
    /// `added` (new documents, in query order) and `modified` (the old index and the new version, in the new
    /// versions' query order). Indices are computed one change at a time on a list of references (Ints), so
    /// the work moves integers, not documents.
    static func ordered(old: [ResultDocument], removed: [Int], added: [ResultDocument],
                        modified: [(oldIndex: Int, doc: ResultDocument)], query q: ValidQuery) -> [ViewChange] {
        if removed.isEmpty && added.isEmpty && modified.isEmpty { return [] }
        // The index tracker: the old list as references (r < old.count: old[r]; then added, then modified's
        // new versions), changed one step at a time.
        let n = old.count, a = added.count
        var tracker = Array(0..<n)
        func compare(_ r: Int, _ d: ResultDocument) -> Int {
            if r < n { return q.compare(old[r].stored.path, old[r].fields, d.stored.path, d.fields) }
            if r < n + a { return q.compare(added[r - n].stored.path, added[r - n].fields, d.stored.path, d.fields) }
            let m = modified[r - n - a].doc
            return q.compare(m.stored.path, m.fields, d.stored.path, d.fields)
        }
        func insertionPoint(_ d: ResultDocument) -> Int {
            var lo = 0, hi = tracker.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if compare(tracker[mid], d) < 0 { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        var out: [ViewChange] = []
        out.reserveCapacity(removed.count + added.count + modified.count)
        for i in removed {
            let p = tracker.firstIndex(of: i)!
            tracker.remove(at: p)
            out.append(ViewChange(kind: .removed, document: old[i], oldIndex: p, newIndex: -1))
        }
        for (k, d) in added.enumerated() {
            let j = insertionPoint(d)
            tracker.insert(n + k, at: j)
            out.append(ViewChange(kind: .added, document: d, oldIndex: -1, newIndex: j))
        }
        for (k, m) in modified.enumerated() {
            let i = tracker.firstIndex(of: m.oldIndex)!
            tracker.remove(at: i)
            let j = insertionPoint(m.doc)
            tracker.insert(n + a + k, at: j)
            out.append(ViewChange(kind: .modified, document: m.doc, oldIndex: i, newIndex: j, previous: old[m.oldIndex]))
        }
        return out
    }
}
