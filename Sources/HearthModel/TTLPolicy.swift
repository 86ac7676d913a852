/// A TTL policy: documents of a collection group whose `field` holds a timestamp in the past are deleted by
/// the daemon's sweeper, some time after that moment (not exactly at it), with ordinary commits that
/// listeners see. A document whose field is absent or not a timestamp never expires. Kept in the index
/// catalog (docs/operations.md, "TTL").
public struct TTLPolicy: Sendable, Equatable {
    public var collectionGroup: String
    public var field: FieldPath

    public init(collectionGroup: String, field: FieldPath) {
        self.collectionGroup = collectionGroup
        self.field = field
    }

    /// The expiry a document's fields carry under this policy, if any.
    public func expiry(of fields: MapValue) -> Timestamp? {
        if case .timestamp(let t)? = fields.value(at: field) { return t }
        return nil
    }
}
