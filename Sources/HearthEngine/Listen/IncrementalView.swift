import HearthModel
import HearthStorage

/// Applies one commit to an unbounded query result in place and returns Firestore's docChanges: removed (in
/// their old order), added (in query order), then modified (in their new order), each index as a client
/// applying the changes one by one sees it.
///
/// Cost: binary searches per touched document, one sweep of the result for all the removals and one for all
/// the additions (the indices each would have had one at a time are counted, not replayed). Up to
/// `batchedModifications` modifications are placed one by one (one that keeps its place replaces its row, one
/// that moves shifts the rows between its two places); more are placed by counting, in one sweep
/// (`applyModified`). (Removing and inserting row by row made a commit of 5,000 writes cost 5,000 sweeps of a
/// 100,000-row result per listener: 38 s on the loop with 40 listeners.)
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
        out.reserveCapacity(removed.count + added.count + modified.count)
        // Removed, in their old order: the r-th removal's index, one at a time, is its place now less r.
        if !removed.isEmpty {
            removed.sort { q.compare($0.1.stored.path, $0.2, $1.1.stored.path, $1.2) < 0 }
            var places: [Int] = []
            places.reserveCapacity(removed.count)
            for (_, doc, fields) in removed {
                guard let i = find(doc.stored.path, fields), i != places.last else { continue }
                out.append(ViewChange(kind: .removed, document: doc, oldIndex: i - places.count, newIndex: -1))
                places.append(i)
            }
            rows.removeSorted(places)
        }
        // Added, in query order: the r-th addition's index, one at a time, is its place among the rows less
        // the additions, plus r.
        if !added.isEmpty {
            added.sort { q.compare($0.stored.path, $0.fields, $1.stored.path, $1.fields) < 0 }
            var places: [Int] = []
            places.reserveCapacity(added.count)
            for (r, doc) in added.enumerated() {
                let j = lowerBound(doc.stored.path, doc.fields)
                places.append(j)
                out.append(ViewChange(kind: .added, document: doc, oldIndex: -1, newIndex: j + r))
            }
            rows.insertSorted(added, at: places)
        }
        // Modified, in the new documents' query order.
        modified.sort { q.compare($0.new.stored.path, $0.new.fields, $1.new.stored.path, $1.new.fields) < 0 }
        if modified.count > batchedModifications {
            applyModified(modified, to: &rows, query: q, into: &out)
            return out
        }
        for (oldFields, doc) in modified {
            guard let i = find(doc.stored.path, oldFields) else { continue }
            // It keeps its place when it still sorts after the row before it and before the row after it.
            let afterPrevious = i == 0 || q.compare(rows[i - 1].stored.path, rows[i - 1].fields, doc.stored.path, doc.fields) < 0
            let beforeNext = i + 1 == rows.count || q.compare(doc.stored.path, doc.fields, rows[i + 1].stored.path, rows[i + 1].fields) < 0
            let previous = rows[i]
            if afterPrevious && beforeNext {
                rows[i] = doc
                out.append(ViewChange(kind: .modified, document: doc, oldIndex: i, newIndex: i, previous: previous))
                continue
            }
            rows.remove(at: i)
            let j = lowerBound(doc.stored.path, doc.fields)
            rows.insert(doc, at: j)
            out.append(ViewChange(kind: .modified, document: doc, oldIndex: i, newIndex: j, previous: previous))
        }
        return out
    }

    /// More modifications than this in one commit are placed by counting (`applyModified`), fewer one by one.
    static let batchedModifications = 8

    /// Applies `modified` (sorted by their new place) as one by one, each removed from where it is then and
    /// inserted where it goes, but in one sweep: the index each would have had is counted. When the t-th is
    /// placed, the rows are the unmodified ones and those still to be placed, at their old places (counted by
    /// a Fenwick tree over the rows as they were), and the t - 1 already placed, at their new places (which
    /// all sort before the t-th's new place, and are found among themselves by binary search).
    private static func applyModified(_ modified: [(old: MapValue, new: ResultDocument)], to rows: inout [ResultDocument],
                                      query q: ValidQuery, into out: inout [ViewChange]) {
        var present = PresenceCounts(count: rows.count)
        var placedNew: [ResultDocument] = []   // the modified documents placed so far, in query order
        var oldPlaces: [Int] = []
        placedNew.reserveCapacity(modified.count)
        oldPlaces.reserveCapacity(modified.count)
        for (oldFields, doc) in modified {
            let p = rows.lowerBound(doc.stored.path, oldFields, query: q)
            guard p < rows.count && rows[p].stored.path == doc.stored.path else { continue }
            // Its place now: the rows still at their old places before it, and the placed ones sorting before
            // its old version.
            let placedBefore = placedNew.lowerBound(doc.stored.path, oldFields, query: q)
            let oldIndex = present.before(p) + placedBefore
            present.remove(p)
            // Where it goes: the rows still at their old places sorting before its new version, and every
            // placed one.
            let q0 = rows.lowerBound(doc.stored.path, doc.fields, query: q)
            let newIndex = present.before(q0) + placedNew.count
            out.append(ViewChange(kind: .modified, document: doc, oldIndex: oldIndex, newIndex: newIndex, previous: rows[p]))
            placedNew.append(doc)
            oldPlaces.append(p)
        }
        oldPlaces.sort()
        rows.removeSorted(oldPlaces)
        rows.insertSorted(placedNew, at: placedNew.map { rows.lowerBound($0.stored.path, $0.fields, query: q) })
    }
}

/// Which of `count` places are still occupied, and how many before a place: a Fenwick tree of ones.
struct PresenceCounts {
    private var tree: [Int]

    init(count: Int) {
        tree = [Int](repeating: 0, count: count + 1)
        for i in 1...max(1, count) where i <= count {
            tree[i] += 1
            let parent = i + (i & -i)
            if parent <= count { tree[parent] += tree[i] }
        }
    }

    /// Occupied places below `place`.
    func before(_ place: Int) -> Int {
        var i = place, total = 0
        while i > 0 {
            total += tree[i]
            i -= i & -i
        }
        return total
    }

    /// Frees `place` (occupied).
    mutating func remove(_ place: Int) {
        var i = place + 1
        while i < tree.count {
            tree[i] -= 1
            i += i & -i
        }
    }
}

extension Array {
    /// Removes the elements at `places` (ascending, distinct) in one sweep.
    mutating func removeSorted(_ places: [Int]) {
        guard !places.isEmpty else { return }
        var write = places[0]
        var next = 0
        for read in places[0]..<count {
            if next < places.count && places[next] == read {
                next += 1
                continue
            }
            swapAt(write, read)
            write += 1
        }
        removeLast(count - write)
    }

    /// Inserts `elements[r]` before the element now at `places[r]` (ascending; equal places keep the
    /// elements' order) in one sweep.
    mutating func insertSorted(_ elements: [Element], at places: [Int]) {
        guard !elements.isEmpty else { return }
        var merged: [Element] = []
        merged.reserveCapacity(count + elements.count)
        var r = 0
        for (i, row) in enumerated() {
            while r < elements.count && places[r] == i {
                merged.append(elements[r])
                r += 1
            }
            merged.append(row)
        }
        while r < elements.count {
            merged.append(elements[r])
            r += 1
        }
        self = merged
    }
}
