import CSimdJSON
import HearthModel

/// A reusable simdjson parser. `parse` returns the root of the document as a `JSONRef`; every ref into a
/// document stays valid only until the next `parse` on this parser and while the parser is alive. Refs do
/// not retain the parser: keep it in a stored property, or use `withExtendedLifetime(parser)` around a
/// local one. Not thread-safe: use one parser per thread (or per connection on the loop thread).
///
/// Errors are `INVALID_ARGUMENT` with the byte offset of the problem: `invalid JSON at byte 17: <reason>`,
/// `invalid UTF-8 at byte 3`. Integers beyond `Int64` parse as doubles.
///
/// Every parse checks that no object, at any depth, repeats a key (compared by bytes after unescaping):
/// by default a repeated key is an error (`duplicate key "a" in data.x`); a parser made with
/// `rejectsDuplicateKeys: false` returns the document and reports the key in `duplicateKey`, for a caller
/// that wants to read something (a request's `id`) before answering with the error.
public final class JSONParser {
    private let handle: OpaquePointer
    // @exclusivity(unchecked): read and written on every parse. A parser is used by one thread at a time (a
    // reader's parser passes between reader threads under a lock: `ReaderParsers`), and only its own methods
    // touch `result`, none of them calling out to code that could reach it while they do.
    @exclusivity(unchecked) private var result = hearth_json_result()
    private let rejectsDuplicateKeys: Bool

    /// Readable slack bytes `parse(padded:)` needs after the input.
    public static let padding: Int = Int(hearth_json_padding())

    /// - Parameter retainedCapacity: documents up to this size keep the parser's buffers between parses;
    ///   after a larger one, the next smaller parse releases them.
    /// - Parameter rejectsDuplicateKeys: throw when an object repeats a key (else see `duplicateKey`).
    public init(retainedCapacity: Int = 64 * 1024, rejectsDuplicateKeys: Bool = true) {
        guard let h = hearth_json_parser_create(retainedCapacity) else { fatalError("out of memory creating a JSON parser") }
        handle = h
        self.rejectsDuplicateKeys = rejectsDuplicateKeys
    }

    deinit { hearth_json_parser_destroy(handle) }

    /// Parses `bytes` (copied into a padded buffer first; any buffer is fine).
    public func parse(_ bytes: UnsafeRawBufferPointer) throws(HearthError) -> JSONRef {
        run(bytes, padded: false)
        return try root()
    }

    /// Parses without copying: the caller guarantees `JSONParser.padding` readable bytes after the input.
    public func parse(padded bytes: UnsafeRawBufferPointer) throws(HearthError) -> JSONRef {
        run(bytes, padded: true)
        return try root()
    }

    public func parse(_ bytes: [UInt8]) throws(HearthError) -> JSONRef {
        bytes.withUnsafeBytes { run($0, padded: false) }
        return try root()
    }

    public func parse(_ text: String) throws(HearthError) -> JSONRef {
        var text = text
        text.withUTF8 { run(UnsafeRawBufferPointer($0), padded: false) }
        return try root()
    }

    private func run(_ bytes: UnsafeRawBufferPointer, padded: Bool) {
        let p = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        if padded {
            hearth_json_parse_padded(handle, p, bytes.count, &result)
        } else {
            hearth_json_parse(handle, p, bytes.count, &result)
        }
    }

    private func root() throws(HearthError) -> JSONRef {
        switch result.status {
        case HEARTH_JSON_OK:
            if rejectsDuplicateKeys, let duplicate = duplicateKey { throw duplicate.error }
            return JSONRef(tape: result.tape, strings: result.string_buf, index: 1)
        case HEARTH_JSON_SYNTAX:
            throw .invalid("invalid JSON at byte \(result.error_offset): \(reason)")
        case HEARTH_JSON_UTF8:
            throw .invalid("invalid UTF-8 at byte \(result.error_offset)")
        case HEARTH_JSON_RESOURCE:
            throw HearthError(.resourceExhausted, "cannot parse JSON: \(reason)")
        default:
            throw .invalid("invalid JSON: \(reason)")
        }
    }

    /// After a successful parse: the first key an object repeats (outer objects first, then document order)
    /// and where that object is; nil when every object's keys are unique.
    public var duplicateKey: DuplicateKey? {
        guard result.status == HEARTH_JSON_OK, result.duplicate_key != 0 else { return nil }
        let root = JSONRef(tape: result.tape, strings: result.string_buf, index: 1)
        return root.duplicateKey(at: Int(result.duplicate_key))
    }

    private var reason: String { result.error_reason.map { String(cString: $0) } ?? "unknown error" }
}
