/// A stored document: its path, fields and the commit times that created and last changed it.
public struct Document: Sendable, Equatable {
    public var path: DocumentPath
    public var fields: MapValue
    public var createTime: Timestamp
    public var updateTime: Timestamp

    public init(path: DocumentPath, fields: MapValue, createTime: Timestamp, updateTime: Timestamp) {
        self.path = path
        self.fields = fields
        self.createTime = createTime
        self.updateTime = updateTime
    }
}

/// Limits of the data model (Firestore's, except the commit size), checked when values arrive.
public enum Limits {
    /// Largest document, counted as Firestore counts storage size.
    public static let maxDocumentBytes = 1_048_576
    /// Deepest nesting of maps and arrays in a document (a top-level field is depth 1).
    public static let maxDepth = 20
    /// Longest field name (a map key at any depth) and longest field path, in UTF-8 bytes.
    public static let maxFieldNameBytes = 1_500
    /// Most writes in one commit. Firestore allows 500; Hearth allows 10,000 so that a fan-out (a post
    /// written into every follower's feed) stays one atomic commit for authors with thousands of followers.
    /// A commit is applied on the loop thread, so this also bounds how long one commit can hold it: other
    /// connections waited up to 6-16 ms behind a commit of 1,000 small writes and 0.1-0.17 s behind one of
    /// 10,000 (docs/benchmarks.md, "Large commits").
    public static let maxWritesPerCommit = 10_000
}

extension Value {
    /// Firestore's storage size of a value: strings and bytes by length (+1 for strings), numbers and
    /// timestamps 8, geopoints 16, booleans and null 1, references by path, maps by keys (+1) and values.
    public var storageSize: Int {
        switch self {
        case .null, .bool: return 1
        case .int, .double, .timestamp: return 8
        case .string(let s): return s.utf8.count + 1
        case .bytes(let b): return b.count
        case .reference(let p): return p.path.segments.reduce(16) { $0 + $1.utf8.count + 1 }
        case .geoPoint: return 16
        case .array(let a): return a.reduce(0) { $0 + $1.storageSize }
        case .map(let m): return m.storageSize
        }
    }
}

extension MapValue {
    public var storageSize: Int { fields.reduce(0) { $0 + $1.key.utf8.count + 1 + $1.value.storageSize } }
}

extension Document {
    /// The document's storage size: its name plus its fields plus 32 bytes, as Firestore counts it.
    public static func storageSize(path: DocumentPath, fields: MapValue) -> Int {
        path.path.segments.reduce(16) { $0 + $1.utf8.count + 1 } + fields.storageSize + 32
    }
}
