import HearthModel

/// The wire forms of `Value`s. JSON null, booleans, strings, arrays and objects are null, bool, string, array
/// and map; a number without fraction or exponent that fits `Int64` is an integer, any other a double.
/// Other types are single-key objects: `{"$timestamp":"2026-11-29T12:00:00.123456Z"}`, `{"$bytes":"<base64>"}`,
/// `{"$ref":"customers/c1"}`, `{"$geopoint":[lat,lng]}`, `{"$double":"NaN"|"Infinity"|"-Infinity"|<number>}`.
///
/// Decoding validates (each failure INVALID_ARGUMENT naming the path, like `data.a.b: ...`): nesting at most
/// `maxDepth` (a top-level field is depth 1), no array directly inside an array (unless allowed), map keys
/// non-empty, at most `maxKeyBytes` (1,500 bytes, as Firestore's field names), not `__...__` and unique by
/// UTF-8 bytes. A map key may not start with `$`: a single-key `$`
/// object is a typed value (unknown names are rejected) and a `$` key beside other keys is an error.
/// Write sentinels (`$serverTimestamp`, `$delete`, ...) are rejected here; `WriteDataDecoder` handles them.
public enum ValueCodec {
    public struct Options: Sendable {
        /// Allow `[[1], [2]]` (query operands like `in` lists); document data never allows it.
        public var allowNestedArrays: Bool
        /// Deepest allowed nesting; a top-level field (or a lone decoded value) is depth 1.
        public var maxDepth: Int
        /// Longest map key, in UTF-8 bytes. Stored documents are decoded without a bound: one written before
        /// the bound existed must still be read.
        public var maxKeyBytes: Int

        public init(allowNestedArrays: Bool = false, maxDepth: Int = Limits.maxDepth,
                    maxKeyBytes: Int = Limits.maxFieldNameBytes) {
            self.allowNestedArrays = allowNestedArrays
            self.maxDepth = maxDepth
            self.maxKeyBytes = maxKeyBytes
        }
    }

    /// Why `name` cannot be a map key (a field name), or nil: empty, longer than 1,500 bytes, of the form
    /// `__...__`, or starting with `$`.
    public static func fieldNameProblem(_ name: String) -> String? { MapKeys.problem(name) }

    /// Decodes one value (at depth 1). `path` names it in error messages.
    public static func decodeValue(_ ref: JSONRef, path: @autoclosure () -> String = "value", options: Options = Options()) throws(HearthError) -> Value {
        let d = ValueDecoder(allowNestedArrays: options.allowNestedArrays, maxDepth: options.maxDepth, maxKeyBytes: options.maxKeyBytes)
        do {
            return try d.value(ref, depth: 1)
        } catch {
            throw error.hearthError(root: path())
        }
    }

    /// Decodes an object's members as document fields (each at depth 1). `path` names the object in errors.
    public static func decodeFields(_ ref: JSONRef, path: String = "data", options: Options = Options()) throws(HearthError) -> MapValue {
        guard ref.isObject else { throw .invalid("\(path) must be an object, not \(ref.kind.name)") }
        let d = ValueDecoder(allowNestedArrays: options.allowNestedArrays, maxDepth: options.maxDepth, maxKeyBytes: options.maxKeyBytes)
        do {
            return try d.map(ref, memberDepth: 1, inArray: false)
        } catch {
            throw error.hearthError(root: path)
        }
    }

    /// Writes the wire form of `value`.
    public static func encode(_ value: Value, into writer: inout JSONWriter) {
        writer.value(value)
    }

    /// Writes `fields` as one JSON object (keys in `MapValue` order).
    public static func encodeFields(_ fields: MapValue, into writer: inout JSONWriter) {
        writer.fields(fields)
    }
}
