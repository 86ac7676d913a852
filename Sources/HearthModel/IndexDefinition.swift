/// A declared composite index (single-field indexes are automatic and need no definition). Like
/// Firestore's, it applies to every collection with ID `collectionID`: with `.collection` scope each
/// collection (each parent) has its own entries; with `.collectionGroup` scope entries span all of them.
public struct IndexDefinition: Sendable, Equatable {
    public enum Scope: String, Sendable { case collection, collectionGroup }
    public enum Mode: String, Sendable { case ascending = "asc", descending = "desc", arrayContains = "array-contains" }
    public enum State: String, Sendable { case building, ready }

    public struct Field: Sendable, Equatable {
        public var path: FieldPath
        public var mode: Mode
        public init(_ path: FieldPath, _ mode: Mode) { self.path = path; self.mode = mode }
    }

    public var id: Int64
    public var collectionID: String
    public var scope: Scope
    public var fields: [Field]
    public var state: State

    public init(id: Int64, collectionID: String, scope: Scope, fields: [Field], state: State) {
        self.id = id
        self.collectionID = collectionID
        self.scope = scope
        self.fields = fields
        self.state = state
    }

    /// Most fields an index holds (Firestore's limit).
    public static let maxFields = 100

    /// Checks the shape: at least one field (two for collection scope, where one field is automatic), no
    /// field twice (but a field may be both the array-contains field and an ordered one: `tags
    /// array-contains` with `orderBy tags`), at most one array-contains field, no `__name__` (implicit).
    public func validate() throws(HearthError) {
        if let problem = ResourcePath.problem(withID: collectionID) { throw .invalid("index collection \"\(collectionID)\": \(problem)") }
        if fields.isEmpty { throw .invalid("an index needs at least one field") }
        if scope == .collection && fields.count < 2 {
            throw .invalid("single-field indexes are automatic for collection scope; declare one only with scope collectionGroup")
        }
        if fields.count > Self.maxFields { throw .invalid("an index has at most \(Self.maxFields) fields") }
        var seen: [(FieldPath, Bool)] = []
        for f in fields {
            let contains = f.mode == .arrayContains
            if seen.contains(where: { $0.0 == f.path && $0.1 == contains }) {
                throw .invalid("index field \(f.path) appears twice\(contains ? "" : " ordered")")
            }
            if contains && seen.contains(where: { $0.0 == f.path }) {
                throw .invalid("index field \(f.path): its array-contains entry must come before its ordered one")
            }
            seen.append((f.path, contains))
            if f.path.isDocumentID { throw .invalid("__name__ is implicit in every index; do not list it") }
        }
        if fields.filter({ $0.mode == .arrayContains }).count > 1 { throw .invalid("an index has at most one array-contains field") }
    }

    /// Same collection, scope and fields (ids and states aside).
    public func sameShape(as other: IndexDefinition) -> Bool {
        collectionID == other.collectionID && scope == other.scope && fields == other.fields
    }

    /// `call_records (customerId asc, callDate desc)`, as explain and error messages show it.
    public var summary: String {
        let list = fields.map { "\($0.path) \($0.mode.rawValue)" }.joined(separator: ", ")
        return "\(collectionID)\(scope == .collectionGroup ? " [collection group]" : "") (\(list))"
    }
}

/// The engine's index catalog: every declared composite index (building or ready), the id the next one gets
/// (ids are never reused, so entries left by a dropped index can never be mistaken for a new one's), and
/// the dropped indexes whose entries are still being removed. Kept in the store with the commits that
/// change it (docs/storage.md, "Index catalog").
public struct IndexCatalog: Sendable, Equatable {
    public var indexes: [IndexDefinition]
    public var nextID: Int64
    /// Dropped indexes whose entries are not all removed yet (their removal resumes after a restart).
    public var dropping: [Int64]
    /// TTL policies, at most one per collection group.
    public var ttl: [TTLPolicy]

    public init(indexes: [IndexDefinition] = [], nextID: Int64 = 1, dropping: [Int64] = [], ttl: [TTLPolicy] = []) {
        self.indexes = indexes
        self.nextID = nextID
        self.dropping = dropping
        self.ttl = ttl
    }
}

/// What happened to a declared index (`Engine.onIndexesChanged`).
public enum IndexEvent: String, Sendable {
    /// Declared; it is being built.
    case declared
    /// Its backfill is durable; queries use it.
    case ready
    /// Dropped; its entries are being removed.
    case dropped
    /// A change of it (its declaration, its drop) did not become durable and was taken back
    /// (`Engine.rollBackCatalog`); the definition is as the store holds it, or gone.
    case takenBack
}
