import HearthModel

/// Stored form of a document's fields: the canonical wire JSON object (keys in `MapValue` order, typed
/// values as in `ValueCodec`), so stored bytes can be spliced verbatim into responses with
/// `JSONWriter.raw`. The server adapts this to HearthStorage's `DocumentCodec`.
public struct FieldsJSON: Sendable {
    public init() {}

    public func encodeFields(_ m: MapValue) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.fields(m)
        return w.bytes
    }

    /// Appends the encoding of `m` to `writer` (as one JSON value).
    public func encodeFields(_ m: MapValue, into writer: inout JSONWriter) {
        writer.fields(m)
    }

    /// Decodes stored fields with this thread's parser.
    public func decodeFields(_ bytes: [UInt8]) throws(HearthError) -> MapValue {
        try decodeFields(bytes, parser: ThreadParser.current)
    }

    /// Decodes stored fields with `parser` (whose earlier refs become invalid).
    public func decodeFields(_ bytes: [UInt8], parser: JSONParser) throws(HearthError) -> MapValue {
        let root = try parser.parse(bytes)
        return try ValueCodec.decodeFields(root, path: "fields")
    }
}
