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
        let context = FieldKeys(path)
        var keys: [[UInt8]] = []
        keys.reserveCapacity(fields.count + 2)
        var k = IndexLayout.collectionPrefix(encodedName: context.encodedCollection, reserving: context.docKey.count)
        k.append(contentsOf: context.docKey)
        keys.append(k)
        k = IndexLayout.groupPrefix(path.collectionID, reserving: context.docKey.count)
        k.append(contentsOf: context.docKey)
        keys.append(k)
        for f in fields { context.append(field: f.key, f.value, into: &keys) }
        for def in composites where def.collectionID == path.collectionID {
            keys.append(contentsOf: compositeKeys(def, path, fields))
        }
        if keys.count > maxEntriesPerDocument { keys.removeLast(keys.count - maxEntriesPerDocument) }
        return keys
    }

    /// The single-field entries of one document: every key starts with the kind and the collection and
    /// ends with the document's key, both encoded once per document.
    struct FieldKeys {
        let docKey: [UInt8]
        let encodedCollection: [UInt8]

        init(_ path: DocumentPath) {
            // Each encoding is at most the path's bytes plus a few per segment (zero bytes aside).
            let bytes = path.path.segments.reduce(0) { $0 + $1.utf8.count + 2 } + 4
            var d: [UInt8] = []
            d.reserveCapacity(bytes)
            IndexKey.encodeDocumentKey(path, into: &d)
            docKey = d
            var c: [UInt8] = []
            c.reserveCapacity(bytes)
            IndexKey.encodeCollectionName(of: path, into: &c)
            encodedCollection = c
        }

        /// The entries of the field at `segs` holding `value`: its own, per distinct element of an array
        /// (array-contains), and those of a map's fields at every depth. They depend on `segs` and `value`
        /// alone.
        func append(_ segs: [String], _ value: Value, into keys: inout [[UInt8]]) {
            let fieldName = FieldPath(segs).description
            keys.append(ownKey(fieldName, value))
            switch value {
            case .array(let elements):
                var seen = Set<[UInt8]>()
                let base = IndexLayout.fieldPrefix(kind: IndexLayout.arrayContains, encodedCollection: encodedCollection, fieldName: fieldName)
                for e in elements {
                    let ek = IndexKey.key(e)
                    if seen.insert(ek).inserted { keys.append(base + ek + docKey) }
                }
            case .map(let inner):
                for f in inner { append(segs + [f.key], f.value, into: &keys) }
            default:
                break
            }
        }

        /// `append([key], value, into:)` for a top-level field, without building its path when its value is
        /// neither an array nor a map (one entry, named by the key itself when it is a simple identifier).
        func append(field key: String, _ value: Value, into keys: inout [[UInt8]]) {
            switch value {
            case .array, .map: append([key], value, into: &keys)
            default: keys.append(ownKey(FieldPath.description(ofSegment: key), value))
            }
        }

        /// The field's own single-field entry.
        func ownKey(_ fieldName: String, _ value: Value) -> [UInt8] {
            var k = IndexLayout.fieldPrefix(kind: IndexLayout.singleField, encodedCollection: encodedCollection,
                                            fieldName: fieldName, reserving: 48 + docKey.count)
            IndexKey.encode(value, into: &k)
            k.append(contentsOf: docKey)
            return k
        }
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

    /// The entries to remove and add when a document changes from `before` to `after` (nil: absent). When
    /// both exist, only top-level fields whose values differ are keyed (a field's single-field entries
    /// depend on its name and value alone, and its collection entries on the path), plus every composite
    /// entry of both; the two key lists are sorted and merged, so unchanged entries cost a comparison.
    /// The usual update, one top-level field changed from a scalar to a scalar (or added or removed) with no
    /// composite index on the collection, is keyed on its own (`FieldKeys.ownKey`), without the lists and the
    /// sort.
    /// Equal to diffing `keys(before)` against `keys(after)` (IndexMaintainerTests checks it).
    static func changes(_ path: DocumentPath, before: MapValue?, after: MapValue?, composites: [IndexDefinition],
                        into changes: inout IndexChanges) {
        guard let before, let after else {
            if let after { for k in keys(path, after, composites: composites) { changes.added.append(IndexEntry(key: k, path: path)) } }
            if let before { for k in keys(path, before, composites: composites) { changes.removed.append(IndexEntry(key: k, path: path)) } }
            return
        }
        let applying = composites.reduce(0) { $0 + ($1.collectionID == path.collectionID ? 1 : 0) }
        var old: [[UInt8]] = [], new: [[UInt8]] = []
        var context: FieldKeys?
        func keyed(_ segs: String, _ b: Value?, _ a: Value?) {
            if context == nil { context = FieldKeys(path) }
            if let b { context!.append(field: segs, b, into: &old) }
            if let a { context!.append(field: segs, a, into: &new) }
        }
        // Both field lists are sorted by key bytes: walk them together. The first field that differs is held
        // back (by its positions; -1 where absent) until a second one does: alone, it may be keyed on its own.
        let bf = before.fields, af = after.fields
        var heldB = -1, heldA = -1, differing = 0
        func differs(_ b: Int, _ a: Int) {
            differing += 1
            if differing == 1 {
                heldB = b
                heldA = a
                return
            }
            if differing == 2 { keyedAt(heldB, heldA) }
            keyedAt(b, a)
        }
        func keyedAt(_ b: Int, _ a: Int) {
            // `Value?.none`, not `nil`: a bare `nil` here would be the literal `Value.null`.
            keyed(b >= 0 ? bf[b].key : af[a].key, b >= 0 ? bf[b].value : Value?.none, a >= 0 ? af[a].value : Value?.none)
        }
        var i = 0, j = 0
        while i < bf.count || j < af.count {
            // Most writes keep every key: equality is the cheaper test.
            let c = i == bf.count ? 1 : j == af.count ? -1
                : UTF8Order.equal(bf[i].key, af[j].key) ? 0 : UTF8Order.compare(bf[i].key, af[j].key)
            if c < 0 {
                differs(i, -1)
                i += 1
            } else if c > 0 {
                differs(-1, j)
                j += 1
            } else {
                if bf[i].value != af[j].value { differs(i, j) }
                i += 1
                j += 1
            }
        }
        // Past Firestore's per-document limit, `keys` keeps a prefix of the full list, which depends on every
        // field: a document that may come near it is diffed in full.
        let nearLimit = entryBound(before, composites: applying) > maxEntriesPerDocument / 2
            || entryBound(after, composites: applying) > maxEntriesPerDocument / 2
        if applying == 0 && !nearLimit {
            if differing == 0 { return }   // no field changed and no composite applies: no entry changed
            if differing == 1, heldB < 0 || isScalar(bf[heldB].value), heldA < 0 || isScalar(af[heldA].value) {
                let name = FieldPath.description(ofSegment: heldB >= 0 ? bf[heldB].key : af[heldA].key)
                let keys = FieldKeys(path)
                let o: [UInt8]? = heldB >= 0 ? keys.ownKey(name, bf[heldB].value) : nil
                let n: [UInt8]? = heldA >= 0 ? keys.ownKey(name, af[heldA].value) : nil
                if o == n { return }   // two values with one encoding (1 and 1.0)
                if let o { changes.removed.append(IndexEntry(key: o, path: path)) }
                if let n { changes.added.append(IndexEntry(key: n, path: path)) }
                return
            }
        }
        if differing == 1 { keyedAt(heldB, heldA) }
        for def in composites where def.collectionID == path.collectionID {
            old.append(contentsOf: compositeKeys(def, path, before))
            new.append(contentsOf: compositeKeys(def, path, after))
        }
        if nearLimit {
            old = keys(path, before, composites: composites)
            new = keys(path, after, composites: composites)
        }
        merge(old, new, path, into: &changes)
    }

    /// True for a value that is neither an array nor a map: its only entry is its own.
    private static func isScalar(_ v: Value) -> Bool {
        switch v {
        case .array, .map: return false
        default: return true
        }
    }

    /// At least as many entries as `keys` makes for `fields` before its limit: the two collection entries, one
    /// per field at every depth plus one per array element, and per applying composite one per array
    /// element plus one (a composite has at most one array-contains field).
    static func entryBound(_ fields: MapValue, composites: Int) -> Int {
        var elements = 0
        func count(_ m: MapValue) -> Int {
            var n = 0
            for f in m {
                n += 1
                switch f.value {
                case .array(let a): n += a.count; elements += a.count
                case .map(let inner): n += count(inner)
                default: break
                }
            }
            return n
        }
        let n = 2 + count(fields)
        return n + composites * (elements + 1)
    }

    /// Sorts both key lists and records what only one of them holds.
    private static func merge(_ old: [[UInt8]], _ new: [[UInt8]], _ path: DocumentPath, into changes: inout IndexChanges) {
        // At most one key on each side: nothing to sort.
        if old.count <= 1 && new.count <= 1 {
            if let o = old.first, let n = new.first, o == n { return }
            if let o = old.first { changes.removed.append(IndexEntry(key: o, path: path)) }
            if let n = new.first { changes.added.append(IndexEntry(key: n, path: path)) }
            return
        }
        var old = old, new = new
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
