import HearthModel

/// Applies one commit to a limit window (a query's first `limit` documents in query order, or with
/// `limitToLast` its last ones) without reading the store whenever that is exact, with work proportional to
/// the documents the commit touched plus the window's size.
///
/// Why it is exact: when the window is full, its boundary row B (the last, or with `limitToLast` the
/// first) cuts the query order, and the window held every matching document on its side of B. After the
/// commit, the matching documents on that side of B's old sort key are the untouched window rows plus the
/// touched documents that now match and sort there. If there are at least `limit` of them, the window is
/// the nearest `limit` of them. If there are fewer (a document left a full window and nothing took its
/// place), the replacement lies beyond B, and only the store knows it: `apply` returns nil and the caller
/// re-reads the query. A window that was not full held every matching document, so it never needs that.
enum WindowView {
    /// Updates `rows` and returns Firestore's docChanges, or returns nil with `rows` untouched when the
    /// window must be re-read. With `minimum`, `rows` are a known part of a larger window (`q`'s limit counts
    /// them): a full one that loses rows keeps the others, still exact as far as they go, unless fewer than
    /// `minimum` remain.
    static func apply(_ mutations: [DecodedMutation], to rows: inout [ResultDocument], query q: ValidQuery,
                      minimum: Int? = nil) -> [ViewChange]? {
        let fromEnd = q.limitToLast != nil
        guard let n = q.limitToLast ?? q.limit else { preconditionFailure("WindowView needs a limit") }
        if let changes = enterOne(mutations, into: &rows, query: q, limit: n, fromEnd: fromEnd) { return changes }
        let old = rows
        let full = old.count >= n
        let boundary: ResultDocument? = full ? (fromEnd ? old.first : old.last) : nil
        func onWindowSide(_ d: ResultDocument) -> Bool {
            guard let b = boundary else { return true }
            let c = q.compare(d.stored.path, d.fields, b.stored.path, b.fields)
            return fromEnd ? c >= 0 : c <= 0
        }
        func find(_ path: DocumentPath, _ fields: MapValue) -> Int? {
            let lo = old.lowerBound(path, fields, query: q)
            return lo < old.count && old[lo].stored.path == path ? lo : nil
        }

        // What the commit does to the window: rows leaving (or moving), documents entering (or moved).
        var leaving = [Bool](repeating: false, count: old.count)
        var entering: [(doc: ResultDocument, oldIndex: Int)] = []   // oldIndex -1: not in the old window
        for m in mutations where q.contains(m.path) {
            let i = m.before.flatMap { find(m.path, $0) }
            let now = m.after.flatMap { q.matchesWithinCursors(m.path, $0.fields) && onWindowSide($0) ? $0 : nil }
            switch (i, now) {
            case (nil, nil): break
            case (let i?, nil): leaving[i] = true
            case (nil, let d?): entering.append((d, -1))
            case (let i?, let d?):
                if old[i].stored.updateTime != d.stored.updateTime || old[i].fields != d.fields {
                    leaving[i] = true
                    entering.append((d, i))
                }
            }
        }
        if entering.isEmpty && !leaving.contains(true) { return [] }

        // Every matching document on the window's side of the boundary, in query order, as references:
        // r >= 0 is old[r], r < 0 is entering[-r - 1] (integers, so nothing is copied until the end).
        entering.sort { q.compare($0.doc.stored.path, $0.doc.fields, $1.doc.stored.path, $1.doc.fields) < 0 }
        var merged: [Int] = []
        merged.reserveCapacity(old.count + entering.count)
        var a = 0, e = 0
        while a < old.count || e < entering.count {
            if a < old.count && leaving[a] { a += 1; continue }
            if e == entering.count || (a < old.count && q.compare(old[a].stored.path, old[a].fields,
                                                                 entering[e].doc.stored.path, entering[e].doc.fields) < 0) {
                merged.append(a)
                a += 1
            } else {
                merged.append(-e - 1)
                e += 1
            }
        }
        if full && merged.count < n {
            guard let minimum, merged.count >= minimum else { return nil }
        }
        let kept = merged.count <= n ? merged[...] : (fromEnd ? merged[(merged.count - n)...] : merged[..<n])

        var keptOld = [Bool](repeating: false, count: old.count)
        var added: [ResultDocument] = []
        var modified: [(oldIndex: Int, doc: ResultDocument)] = []
        var next: [ResultDocument] = []
        next.reserveCapacity(kept.count)
        for r in kept {
            if r >= 0 {
                keptOld[r] = true
                next.append(old[r])
                continue
            }
            let entry = entering[-r - 1]
            next.append(entry.doc)
            if entry.oldIndex < 0 {
                added.append(entry.doc)
            } else {
                keptOld[entry.oldIndex] = true
                modified.append((entry.oldIndex, entry.doc))
            }
        }
        var removed: [Int] = []
        for i in old.indices where !keptOld[i] { removed.append(i) }
        rows = next
        return QueryView.ordered(old: old, removed: removed, added: added, modified: modified, query: q)
    }

    /// The common case of a feed's window: of the commit's documents exactly one concerns the query, it was
    /// not in the window, and it now sorts into it. The general merge above then comes down to inserting it
    /// and, in a full window, the boundary row leaving; done here in place (no row copied), with the same
    /// changes in the same order (the removal first, its index in the old rows; then the addition, its index
    /// in the new). Nil when it is not that case.
    private static func enterOne(_ mutations: [DecodedMutation], into rows: inout [ResultDocument], query q: ValidQuery,
                                 limit n: Int, fromEnd: Bool) -> [ViewChange]? {
        var single: DecodedMutation?
        for m in mutations where q.contains(m.path) {
            guard single == nil else { return nil }
            single = m
        }
        guard let m = single, let d = m.after, rows.count <= n, q.matchesWithinCursors(m.path, d.fields) else { return nil }
        if let before = m.before {
            let p = rows.lowerBound(m.path, before, query: q)
            if p < rows.count && rows[p].stored.path == m.path { return nil }   // it was in the window
        }
        let j = rows.lowerBound(d.stored.path, d.fields, query: q)
        guard rows.count == n else {
            rows.insert(d, at: j)
            return [ViewChange(kind: .added, document: d, oldIndex: -1, newIndex: j)]
        }
        // A full window: the document enters only on the window's side of the boundary row, which leaves.
        if fromEnd {
            guard j >= 1 else { return nil }
            let gone = rows.removeFirst()
            rows.insert(d, at: j - 1)
            return [ViewChange(kind: .removed, document: gone, oldIndex: 0, newIndex: -1),
                    ViewChange(kind: .added, document: d, oldIndex: -1, newIndex: j - 1)]
        }
        guard j <= n - 1 else { return nil }
        let gone = rows.removeLast()
        rows.insert(d, at: j)
        return [ViewChange(kind: .removed, document: gone, oldIndex: n - 1, newIndex: -1),
                ViewChange(kind: .added, document: d, oldIndex: -1, newIndex: j)]
    }
}
