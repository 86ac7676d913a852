import HearthModel
import HearthStorage

/// Computes every index key a document version has: automatic single-field entries for every field (maps
/// included, at every depth; arrays by value and, per distinct element, array-contains), its collection and
/// collection-group membership, and one entry per declared composite index that applies (per element for
/// an array-contains field; none when a field is missing). Pure.
enum IndexMaintainer {
    /// Firestore's limit on index entries per document.
    static let maxEntriesPerDocument = 40_000

    static func keys(_ path: DocumentPath, _ fields: MapValue, composites: [IndexDefinition]) -> [[UInt8]] {
        let collection = path.collection
        var docKey: [UInt8] = []
        IndexKey.encodeDocumentKey(path, into: &docKey)
        var keys: [[UInt8]] = []

        keys.reserveCapacity(fields.count + 2)
        var k = IndexLayout.collectionPrefix(collection)
        k.append(contentsOf: docKey)
        keys.append(k)
        k = IndexLayout.groupPrefix(path.collectionID)
        k.append(contentsOf: docKey)
        keys.append(k)

        // Every single-field key starts with the kind and the collection: encoded once per document.
        var encodedCollection: [UInt8] = []
        IndexKey.encode(.string(collection.description), into: &encodedCollection)
        func visit(_ map: MapValue, _ prefix: [String]) {
            for f in map {
                let segs = prefix + [f.key]
                let fieldName = Value.string(FieldPath(segs).description)
                var k: [UInt8] = [IndexLayout.singleField]
                k.reserveCapacity(encodedCollection.count + 64 + docKey.count)
                k.append(contentsOf: encodedCollection)
                IndexKey.encode(fieldName, into: &k)
                IndexKey.encode(f.value, into: &k)
                k.append(contentsOf: docKey)
                keys.append(k)
                switch f.value {
                case .array(let elements):
                    var seen = Set<[UInt8]>()
                    var base: [UInt8] = [IndexLayout.arrayContains]
                    base.append(contentsOf: encodedCollection)
                    IndexKey.encode(fieldName, into: &base)
                    for e in elements {
                        let ek = IndexKey.key(e)
                        if seen.insert(ek).inserted { keys.append(base + ek + docKey) }
                    }
                case .map(let inner):
                    visit(inner, segs)
                default:
                    break
                }
            }
        }
        visit(fields, [])

        for def in composites where def.collectionID == path.collectionID {
            keys.append(contentsOf: compositeKeys(def, path, fields))
        }
        if keys.count > maxEntriesPerDocument { keys.removeLast(keys.count - maxEntriesPerDocument) }
        return keys
    }

    static func compositeKeys(_ def: IndexDefinition, _ path: DocumentPath, _ fields: MapValue) -> [[UInt8]] {
        var partials: [[UInt8]] = [IndexLayout.compositePrefix(def, path.collection)]
        for f in def.fields {
            guard let v = fields.value(at: f.path) else { return [] }
            switch f.mode {
            case .ascending, .descending:
                for i in partials.indices { IndexKey.encode(v, descending: f.mode == .descending, into: &partials[i]) }
            case .arrayContains:
                guard case .array(let elements) = v else { return [] }
                var seen = Set<[UInt8]>()
                var next: [[UInt8]] = []
                for e in elements {
                    let ek = IndexKey.key(e)
                    guard seen.insert(ek).inserted else { continue }
                    for p in partials { next.append(p + ek) }
                }
                partials = next
            }
        }
        var docKey: [UInt8] = []
        IndexKey.encodeDocumentKey(path, descending: def.nameDescending, into: &docKey)
        return partials.map { $0 + docKey }
    }

    /// The entries to remove and add when a document changes from `before` to `after` (nil: absent): the
    /// two key lists sorted and merged, so unchanged entries cost a comparison, not a hash.
    static func changes(_ path: DocumentPath, before: MapValue?, after: MapValue?, composites: [IndexDefinition],
                        into changes: inout IndexChanges) {
        var old = before.map { keys(path, $0, composites: composites) } ?? []
        var new = after.map { keys(path, $0, composites: composites) } ?? []
        if old.isEmpty {
            for k in new { changes.added.append(IndexEntry(key: k, path: path)) }
            return
        }
        if new.isEmpty {
            for k in old { changes.removed.append(IndexEntry(key: k, path: path)) }
            return
        }
        func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { QueryPlan.Range.compare(a, b) < 0 }
        old.sort(by: less)
        new.sort(by: less)
        var i = 0, j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && less(old[i], new[j])) {
                if i == 0 || old[i] != old[i - 1] { changes.removed.append(IndexEntry(key: old[i], path: path)) }
                i += 1
            } else if i == old.count || less(new[j], old[i]) {
                if j == 0 || new[j] != new[j - 1] { changes.added.append(IndexEntry(key: new[j], path: path)) }
                j += 1
            } else {
                i += 1
                j += 1
            }
        }
    }
}
