import HearthModel

/// What a consistency check (`hearth check`, HearthCheck) needs from the engine's index layout: the keys the
/// engine maintains for a document version, exactly as commits write them, and how to tell the index a key
/// belongs to. Pure.
public enum IndexAudit {
    /// Every index entry key a document version has (automatic single-field, array-contains, collection and
    /// collection-group entries, and one per applicable declared composite index in `composites`), as
    /// `IndexMaintainer` computes them for a commit.
    public static func keys(_ path: DocumentPath, _ fields: MapValue, composites: [IndexDefinition]) -> [[UInt8]] {
        IndexMaintainer.keys(path, fields, composites: composites)
    }

    /// The bytes every entry key of composite index `id` starts with.
    public static func compositePrefix(_ id: Int64) -> [UInt8] {
        var prefix: [UInt8] = [IndexLayout.composite]
        IndexKey.encode(.int(id), into: &prefix)
        return prefix
    }

    /// A short name of the kind of index a key belongs to ("single-field", "array-contains", "collection",
    /// "composite", "collection group"), for reports.
    public static func kind(ofKey key: [UInt8]) -> String {
        switch key.first {
        case IndexLayout.singleField: return "single-field"
        case IndexLayout.arrayContains: return "array-contains"
        case IndexLayout.collection: return "collection"
        case IndexLayout.composite: return "composite"
        case IndexLayout.group: return "collection group"
        default: return "unknown"
        }
    }
}
