import HearthModel

/// The byte layout of every index key Hearth writes. Each key is `kind byte` + scope + values + document key,
/// built from `IndexKey`'s order-preserving encodings, so one sorted table holds every index:
///
/// | kind | index | key |
/// |---|---|---|
/// | 0x01 | single field, ascending (descending = reverse scan) | collection path, field path, value, doc key |
/// | 0x02 | single field, array-contains | collection path, field path, element, doc key |
/// | 0x03 | collection membership (`__name__` order) | collection path, doc key |
/// | 0x04 | declared composite | index id, [collection path], each field's value (desc inverted), doc key |
/// | 0x05 | collection-group membership | collection ID, doc key |
enum IndexLayout {
    static let singleField: UInt8 = 0x01
    static let arrayContains: UInt8 = 0x02
    static let collection: UInt8 = 0x03
    static let composite: UInt8 = 0x04
    static let group: UInt8 = 0x05

    static func singleFieldPrefix(_ collection: CollectionPath, _ field: FieldPath) -> [UInt8] {
        fieldPrefix(kind: singleField, encodedCollection: encodedName(collection), fieldName: field.description)
    }

    static func arrayContainsPrefix(_ collection: CollectionPath, _ field: FieldPath) -> [UInt8] {
        fieldPrefix(kind: arrayContains, encodedCollection: encodedName(collection), fieldName: field.description)
    }

    /// A single-field or array-contains key up to its value: the kind, the collection's name (encoded as a
    /// string value) and the field path's canonical form; with room for `extra` more bytes.
    static func fieldPrefix(kind: UInt8, encodedCollection: [UInt8], fieldName: String, reserving extra: Int = 0) -> [UInt8] {
        var k = key(kind: kind, capacity: 1 + encodedCollection.count + fieldName.utf8.count + 4 + extra)
        k.append(contentsOf: encodedCollection)
        IndexKey.encode(.string(fieldName), into: &k)
        return k
    }

    /// A collection's name encoded as a string value, as every key scoped to it holds it.
    static func encodedName(_ collection: CollectionPath) -> [UInt8] {
        var name: [UInt8] = []
        IndexKey.encode(.string(collection.description), into: &name)
        return name
    }

    static func collectionPrefix(_ collection: CollectionPath) -> [UInt8] {
        collectionPrefix(encodedName: encodedName(collection))
    }

    /// The same from the collection's name already encoded as a string value, with room for `extra` more bytes.
    static func collectionPrefix(encodedName: [UInt8], reserving extra: Int = 0) -> [UInt8] {
        var k = key(kind: IndexLayout.collection, capacity: 1 + encodedName.count + extra)
        k.append(contentsOf: encodedName)
        return k
    }

    /// With room for `extra` more bytes (a document key).
    static func groupPrefix(_ collectionID: String, reserving extra: Int = 0) -> [UInt8] {
        var k = key(kind: group, capacity: collectionID.utf8.count + 4 + extra)
        IndexKey.encode(.string(collectionID), into: &k)
        return k
    }

    /// A key's first byte in a buffer allocated once for `capacity` bytes (an array literal reserved later is
    /// allocated twice).
    static func key(kind: UInt8, capacity: Int) -> [UInt8] {
        var k: [UInt8] = []
        k.reserveCapacity(capacity)
        k.append(kind)
        return k
    }

    /// The start of a composite index's keys for one collection (collection scope) or for all (group scope).
    static func compositePrefix(_ def: IndexDefinition, _ collection: CollectionPath) -> [UInt8] {
        var k: [UInt8] = [composite]
        IndexKey.encode(.int(def.id), into: &k)
        if def.scope == .collection { IndexKey.encode(.string(collection.description), into: &k) }
        return k
    }

    /// The ascending document keys of the documents strictly below `parent` (at any depth), as a range.
    /// Each such key starts with `parent`'s own key without its end (0x00 0x01, the path terminator) and
    /// goes on with a segment's bytes (escaped: a first byte above zero, or 0x00 0xFF), where `parent`'s key
    /// goes on with 0x00 0x01, which sorts before all of them. `upper` is exclusive; nil: no bound.
    static func documentKeysBelow(_ parent: DocumentPath) -> (lower: [UInt8], upper: [UInt8]?) {
        var key: [UInt8] = []
        IndexKey.encodeDocumentKey(parent, into: &key)
        let under = Array(key.dropLast(2))
        return (under + [0x00, 0x02], IndexKey.prefixSuccessor(under))
    }
}

extension IndexDefinition {
    /// The docKey direction in this index's entries: the direction of its last ordered field.
    var nameDescending: Bool { fields.last(where: { $0.mode != .arrayContains })?.mode == .descending }
}
