import HearthModel
import HearthStorage

/// Applies one commit to an unbounded query result in place and returns Firestore's docChanges, with work
/// proportional to the documents the commit touched (binary searches in the sorted result), not to the size
/// of the result.
enum IncrementalView {
    static func apply(_ mutations: [DecodedMutation], to rows: inout [ResultDocument], query q: ValidQuery) -> [ViewChange] {
        func find(_ path: DocumentPath, _ fields: MapValue) -> Int? {
            let i = lowerBound(path, fields)
            return i < rows.count && rows[i].stored.path == path ? i : nil
        }
        func lowerBound(_ path: DocumentPath, _ fields: MapValue) -> Int { rows.lowerBound(path, fields, query: q) }
        var removed: [(Int, ResultDocument, MapValue)] = []
        var added: [ResultDocument] = []
        var modified: [(old: MapValue, new: ResultDocument)] = []
        for m in mutations where q.contains(m.path) {
            let was = m.before.flatMap { b in find(m.path, b).map { (rows[$0], b) } }
            let now = m.after.flatMap { q.matchesWithinCursors(m.path, $0.fields) ? $0 : nil }
            switch (was, now) {
            case (nil, nil): break
            case (let w?, nil): removed.append((0, w.0, w.1))
            case (nil, let n?): added.append(n)
            case (let w?, let n?):
                if w.0.stored.updateTime != n.stored.updateTime || w.0.fields != n.fields { modified.append((w.1, n)) }
            }
        }
        if removed.isEmpty && added.isEmpty && modified.isEmpty { return [] }
        var out: [ViewChange] = []
        // Removed, in their old order.
        removed.sort { q.compare($0.1.stored.path, $0.2, $1.1.stored.path, $1.2) < 0 }
        for (_, doc, fields) in removed {
            guard let i = find(doc.stored.path, fields) else { continue }
            rows.remove(at: i)
            out.append(ViewChange(kind: .removed, document: doc, oldIndex: i, newIndex: -1))
        }
        // Added, in query order.
        added.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
        for doc in added {
            let j = lowerBound(doc.stored.path, doc.fields)
            rows.insert(doc, at: j)
            out.append(ViewChange(kind: .added, document: doc, oldIndex: -1, newIndex: j))
        }
        // Modified, in the new documents' query order.
        modified.sort { q.compare($0.new.stored.path, $0.new.fields, $1.new.stored.path, $1.new.fields) < 0 }
        for (oldFields, doc) in modified {
            guard let i = find(doc.stored.path, oldFields) else { continue }
            rows.remove(at: i)
            let j = lowerBound(doc.stored.path, doc.fields)
            rows.insert(doc, at: j)
            out.append(ViewChange(kind: .modified, document: doc, oldIndex: i, newIndex: j))
        }
        return out
    }
}
