import HearthModel

/// Applies one write to a document's current state: checks the precondition, computes the new fields and
/// runs the transforms. Pure: no storage, no clock (the commit time is given).
public enum WriteApplier {
    /// The state of a document as a write sees it: nil when absent.
    public struct State: Sendable {
        public var fields: MapValue
        public var createTime: Timestamp
        public var updateTime: Timestamp
        public init(fields: MapValue, createTime: Timestamp, updateTime: Timestamp) {
            self.fields = fields
            self.createTime = createTime
            self.updateTime = updateTime
        }
    }

    public struct Outcome: Sendable {
        /// The document after the write (nil: deleted or still absent).
        public var after: State?
        /// Whether the document's content changed (so it needs storing and its updateTime advanced).
        public var changed: Bool
        public var result: WriteResult
    }

    /// Checks `write.precondition` against `current`. Errors name the document; the caller prefixes the
    /// write's index.
    public static func check(_ write: Write, against current: State?) throws(HearthError) {
        switch write.precondition {
        case .none:
            break
        case .exists(true):
            if current == nil {
                let what = write.kind == .update ? "no document to update" : "document does not exist"
                throw HearthError(.notFound, "\(what): \(write.path)")
            }
        case .exists(false):
            if current != nil { throw HearthError(.alreadyExists, "document already exists: \(write.path)") }
        case .updateTime(let t):
            guard let current else {
                throw HearthError(.failedPrecondition, "document \(write.path) does not exist (precondition updateTime \(t))")
            }
            if current.updateTime != t {
                throw HearthError(.failedPrecondition,
                                  "document \(write.path) was updated at \(current.updateTime), not \(t) (precondition updateTime)")
            }
        }
    }

    /// Applies `write` to `current` at `commitTime`. Throws a precondition failure, or INVALID_ARGUMENT
    /// when the result would exceed the document size limit.
    public static func apply(_ write: Write, to current: State?, commitTime: Timestamp) throws(HearthError) -> Outcome {
        try check(write, against: current)
        switch write.operation {
        case .verify:
            return Outcome(after: current, changed: false,
                           result: WriteResult(path: write.path, updateTime: current?.updateTime ?? commitTime))
        case .delete:
            return Outcome(after: nil, changed: current != nil,
                           result: WriteResult(path: write.path, updateTime: commitTime))
        case .update(let data, let mask):
            var fields: MapValue
            if let mask {
                fields = current?.fields ?? MapValue()
                // Top-level fields in one merge (an update may name thousands); nested ones one by one (each
                // changes one top-level map, and masks never overlap).
                var topLevel: [(key: String, value: Value?)] = []
                for path in mask {
                    if path.segments.count == 1 {
                        topLevel.append((path.segments[0], data[path.segments[0]]))
                    } else if let v = data.value(at: path) {
                        fields.set(v, at: path)
                    } else {
                        fields.remove(at: path)
                    }
                }
                fields.apply(topLevel: topLevel)
            } else {
                fields = data
            }
            let transformResults = write.transforms.isEmpty
                ? [] : FieldTransformer.apply(write.transforms, to: &fields, commitTime: commitTime)
            let size = Document.storageSize(path: write.path, fields: fields)
            if size > Limits.maxDocumentBytes {
                throw .invalid("document \(write.path) would be \(size) bytes, above the limit of \(Limits.maxDocumentBytes)")
            }
            if let current, current.fields == fields {
                return Outcome(after: current, changed: false,
                               result: WriteResult(path: write.path, updateTime: current.updateTime, transformResults: transformResults))
            }
            let after = State(fields: fields, createTime: current?.createTime ?? commitTime, updateTime: commitTime)
            return Outcome(after: after, changed: true,
                           result: WriteResult(path: write.path, updateTime: commitTime, transformResults: transformResults))
        }
    }
}
