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

        let removed = old.filter { relevant($0) && newByPath[$0.stored.path] == nil }
        let added = new.filter { relevant($0) && oldByPath[$0.stored.path] == nil }
        let modified = new.filter { r in
            guard relevant(r), let o = oldByPath[r.stored.path] else { return false }
            return o.stored.updateTime != r.stored.updateTime || o.fields != r.fields
        }
        return ordered(old: old, removed: removed, added: added, modified: modified, query: q)
    }

    /// Firestore's docChanges from `old`, given what changed: `removed` (old versions, in old order),
    /// `added` and `modified` (new versions, in query order). Indices are computed one change at a time.
    static func ordered(old: [ResultDocument], removed: [ResultDocument], added: [ResultDocument],
                        modified: [ResultDocument], query q: ValidQuery) -> [ViewChange] {
        if removed.isEmpty && added.isEmpty && modified.isEmpty { return [] }
        // The index tracker: the old list, changed one step at a time.
        var tracker = old
        func position(of path: DocumentPath) -> Int { tracker.firstIndex { $0.stored.path == path }! }
        func insertionPoint(_ r: ResultDocument) -> Int {
            var lo = 0, hi = tracker.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if q.compare(tracker[mid].stored.path, tracker[mid].fields, r.stored.path, r.fields) < 0 { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        var out: [ViewChange] = []
        out.reserveCapacity(removed.count + added.count + modified.count)
        for r in removed {
            let i = position(of: r.stored.path)
            tracker.remove(at: i)
            out.append(ViewChange(kind: .removed, document: r, oldIndex: i, newIndex: -1))
        }
        for r in added {
            let j = insertionPoint(r)
            tracker.insert(r, at: j)
            out.append(ViewChange(kind: .added, document: r, oldIndex: -1, newIndex: j))
        }
        for r in modified {
            let i = position(of: r.stored.path)
            tracker.remove(at: i)
            let j = insertionPoint(r)
            tracker.insert(r, at: j)
            out.append(ViewChange(kind: .modified, document: r, oldIndex: i, newIndex: j))
        }
        return out
    }
}
