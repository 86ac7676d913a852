import Foundation

/// Applying and computing query-snapshot changes, with the protocol's one-at-a-time index semantics:
/// `removed` deletes at `oldIndex`, `added` inserts at `newIndex`, `modified` removes at `oldIndex` then
/// inserts at `newIndex`; -1 marks an index that does not apply.
enum SnapshotDiff {
    struct Record: Equatable {
        let type: DocumentChangeType
        let document: WireDocument
        let oldIndex: Int
        let newIndex: Int
    }

    /// Applies the server's `changes` to `docs`; false (with `docs` possibly half-changed) when a change
    /// does not fit: an index out of range or a document not where the change says.
    static func apply(_ changes: [JSON], to docs: inout [WireDocument], records: inout [Record]) -> Bool {
        for ch in changes {
            guard let type = ch["type"]?.stringValue, let docJSON = ch["doc"], let doc = WireDocument(docJSON) else { return false }
            let old = Int(ch["oldIndex"]?.intValue ?? -1)
            let new = Int(ch["newIndex"]?.intValue ?? -1)
            switch type {
            case "removed":
                guard docs.indices.contains(old), docs[old].path == doc.path else { return false }
                docs.remove(at: old)
                records.append(Record(type: .removed, document: doc, oldIndex: old, newIndex: -1))
            case "added":
                guard (0...docs.count).contains(new) else { return false }
                docs.insert(doc, at: new)
                records.append(Record(type: .added, document: doc, oldIndex: -1, newIndex: new))
            case "modified":
                guard docs.indices.contains(old), docs[old].path == doc.path else { return false }
                docs.remove(at: old)
                guard (0...docs.count).contains(new) else { return false }
                docs.insert(doc, at: new)
                records.append(Record(type: .modified, document: doc, oldIndex: old, newIndex: new))
            default:
                return false
            }
        }
        return true
    }

    /// The changes that turn `old` into `new` (both in query order), ordered removed, added, modified as
    /// the server orders them, with indices valid one change at a time. A document is `modified` only when
    /// its content changed; documents whose content did not change keep their relative order.
    static func diff(old: [WireDocument], new: [WireDocument]) -> [Record] {
        let newByPath = Dictionary(new.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let oldPaths = Set(old.map(\.path))
        var records: [Record] = []
        var cur: [WireDocument] = []
        cur.reserveCapacity(max(old.count, new.count))
        for d in old {
            if newByPath[d.path] == nil {
                records.append(Record(type: .removed, document: d, oldIndex: cur.count, newIndex: -1))
            } else {
                cur.append(d)
            }
        }
        // Common case (documents only added or removed): each addition goes straight to its final index.
        if cur.allSatisfy({ newByPath[$0.path] == $0 }) && cur.map(\.path) == new.filter({ oldPaths.contains($0.path) }).map(\.path) {
            for (j, d) in new.enumerated() where !oldPaths.contains(d.path) {
                records.append(Record(type: .added, document: d, oldIndex: -1, newIndex: j))
            }
            return records
        }
        // General case (quadratic; resets only). Settled documents are in their final relative order;
        // others are placed right after their nearest settled predecessor in `new`.
        var settled = Set(cur.filter { newByPath[$0.path] == $0 }.map(\.path))
        func insertionIndex(before j: Int) -> Int {
            var k = j - 1
            while k >= 0 {
                if settled.contains(new[k].path), let at = cur.firstIndex(where: { $0.path == new[k].path }) { return at + 1 }
                k -= 1
            }
            return 0
        }
        for (j, d) in new.enumerated() where !oldPaths.contains(d.path) {
            let at = insertionIndex(before: j)
            cur.insert(d, at: at)
            settled.insert(d.path)
            records.append(Record(type: .added, document: d, oldIndex: -1, newIndex: at))
        }
        for (j, d) in new.enumerated() where !settled.contains(d.path) {
            guard let from = cur.firstIndex(where: { $0.path == d.path }) else { continue }
            cur.remove(at: from)
            let to = insertionIndex(before: j)
            cur.insert(d, at: to)
            settled.insert(d.path)
            records.append(Record(type: .modified, document: d, oldIndex: from, newIndex: to))
        }
        if cur != new {
            // Unchanged documents changed their relative order (not expected of a deterministic order):
            // fall back to removing everything and adding the new state.
            return old.map { Record(type: .removed, document: $0, oldIndex: 0, newIndex: -1) }
                + new.enumerated().map { Record(type: .added, document: $0.element, oldIndex: -1, newIndex: $0.offset) }
        }
        return records
    }
}
