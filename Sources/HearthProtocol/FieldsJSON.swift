#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// Stored form of a document's fields: the canonical wire JSON object (keys in `MapValue` order, typed
/// values as in `ValueCodec`), so stored bytes can be spliced verbatim into responses with
/// `JSONWriter.raw`. The server adapts this to HearthStorage's `DocumentCodec`.
public struct FieldsJSON: Sendable {
    public init() {}

    public func encodeFields(_ m: MapValue) -> [UInt8] {
        ThreadWriter.withWriter { w in
            w.fields(m)
            return w.bytes
        }
    }

    /// Appends the encoding of `m` to `writer` (as one JSON value).
    public func encodeFields(_ m: MapValue, into writer: inout JSONWriter) {
        writer.fields(m)
    }

    /// Checks, without decoding, that stored bytes can be spliced verbatim into a response line: one JSON
    /// object in valid UTF-8 (simdjson validates both) with no raw CR or LF (JSON allows them only as
    /// whitespace, which the canonical encoding never writes, and a raw LF would end the NDJSON line).
    public func verifyStored(_ bytes: [UInt8]) throws(HearthError) {
        try checkNoLineBreak(bytes)
        let root = try ThreadParser.current.parse(bytes)
        guard root.kind == .object else { throw .invalid("stored fields are a JSON \(root.kind.name), not an object") }
    }

    /// Throws when `bytes` hold a raw CR or LF (two `memchr`s: this runs on every document read from the store).
    public func checkNoLineBreak(_ bytes: [UInt8]) throws(HearthError) {
        let at = bytes.withUnsafeBytes { raw -> Int? in
            guard let base = raw.baseAddress else { return nil }
            if let p = memchr(base, 10, raw.count) { return base.distance(to: UnsafeRawPointer(p)) }
            if let p = memchr(base, 13, raw.count) { return base.distance(to: UnsafeRawPointer(p)) }
            return nil
        }
        if let at { throw .invalid("a raw line break at byte \(at)") }
    }

    /// Decodes stored fields with this thread's parser.
    public func decodeFields(_ bytes: [UInt8]) throws(HearthError) -> MapValue {
        try decodeFields(bytes, parser: ThreadParser.current)
    }

    /// Decodes stored fields with `parser` (whose earlier refs become invalid).
    public func decodeFields(_ bytes: [UInt8], parser: JSONParser) throws(HearthError) -> MapValue {
        let root = try parser.parse(bytes)
        // Stored fields: a key longer than requests may now send was valid when it was written.
        return try ValueCodec.decodeFields(root, path: "fields", options: ValueCodec.Options(maxKeyBytes: .max))
    }
}
