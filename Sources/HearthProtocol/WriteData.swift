import HearthModel

/// A write's decoded `data`: what goes into `Write.operation` and `Write.transforms` (the caller adds the
/// kind, path and precondition).
public struct WriteData: Sendable, Equatable {
    /// The values to store (sentinels removed, `$documentId` replaced).
    public var fields: MapValue
    /// nil: the document becomes `fields` (set, create). Otherwise the paths taken from `fields` (deleted when
    /// absent there), sorted; transform targets are never in it.
    public var mask: [FieldPath]?
    /// Transforms in field path order (whatever the key order of the JSON).
    public var transforms: [FieldTransform]

    public init(fields: MapValue, mask: [FieldPath]?, transforms: [FieldTransform]) {
        self.fields = fields
        self.mask = mask
        self.transforms = transforms
    }

    public var operation: Write.Operation { .update(fields: fields, mask: mask) }
}
