/// A zero-copy reference to one value inside a document parsed by `JSONParser` (a position on simdjson's
/// tape). A `JSONRef` is only valid until the next `parse` on the parser that produced it, and while that
/// parser is alive: it holds raw pointers into the parser's buffers. Never store one beyond that.
public struct JSONRef {
    @usableFromInline let tape: UnsafePointer<UInt64>
    @usableFromInline let strings: UnsafePointer<UInt8>
    @usableFromInline let index: Int

    @inlinable
    init(tape: UnsafePointer<UInt64>, strings: UnsafePointer<UInt8>, index: Int) {
        self.tape = tape
        self.strings = strings
        self.index = index
    }

    /// The JSON type of the value. Integers that fit `Int64` are `.int`; every other number is `.double`.
    public enum Kind: Sendable, Equatable {
        case null, bool, int, double, string, array, object

        /// The name used in error messages: "null", "boolean", "integer", "double", "string", "array", "object".
        public var name: String {
            switch self {
            case .null: return "null"
            case .bool: return "boolean"
            case .int: return "integer"
            case .double: return "double"
            case .string: return "string"
            case .array: return "array"
            case .object: return "object"
            }
        }

        /// "a string", "an object", ... for error messages.
        public var article: String {
            switch self {
            case .int, .array, .object: return "an \(name)"
            default: return "a \(name)"
            }
        }
    }

    @inlinable var word: UInt64 { tape[index] }
    @inlinable var tag: UInt8 { UInt8(truncatingIfNeeded: word >> 56) }
    @inlinable var payload: UInt64 { word & 0x00FF_FFFF_FFFF_FFFF }

    @inlinable
    public var kind: Kind {
        switch tag {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "l"): return .int
        case UInt8(ascii: "u"), UInt8(ascii: "d"): return .double
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        default: return .null
        }
    }

    @inlinable public var isNull: Bool { tag == UInt8(ascii: "n") }
    @inlinable public var isObject: Bool { tag == UInt8(ascii: "{") }
    @inlinable public var isArray: Bool { tag == UInt8(ascii: "[") }
    @inlinable public var isString: Bool { tag == UInt8(ascii: "\"") }

    /// The value of an `.int`, else nil.
    @inlinable
    public var int64: Int64? {
        tag == UInt8(ascii: "l") ? Int64(bitPattern: tape[index + 1]) : nil
    }

    /// The value of a `.double` (including integers beyond `Int64`), else nil.
    @inlinable
    public var double: Double? {
        switch tag {
        case UInt8(ascii: "d"): return Double(bitPattern: tape[index + 1])
        case UInt8(ascii: "u"): return Double(tape[index + 1])
        default: return nil
        }
    }

    /// The value of an integer literal above `Int64.max` that fits `UInt64` (its kind is `.double`), else nil.
    @inlinable
    public var unsignedInteger: UInt64? {
        tag == UInt8(ascii: "u") ? tape[index + 1] : nil
    }

    /// The value of any number as a `Double` (an `.int` converted), else nil.
    @inlinable
    public var number: Double? {
        if let i = int64 { return Double(i) }
        return double
    }

    @inlinable
    public var bool: Bool? {
        switch tag {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: return nil
        }
    }

    /// The unescaped UTF-8 bytes of a `.string` (valid until the next parse), else nil.
    @inlinable
    public var stringBytes: UnsafeRawBufferPointer? {
        guard isString else { return nil }
        let p = UnsafeRawPointer(strings + Int(payload))
        let n = Int(p.loadUnaligned(as: UInt32.self).littleEndian)
        return UnsafeRawBufferPointer(start: p + 4, count: n)
    }

    /// Calls `body` with the bytes of a `.string`; nil when the value is not a string.
    @inlinable
    public func withStringBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R? {
        guard let b = stringBytes else { return nil }
        return try body(b)
    }

    /// A new `String` with the contents of a `.string`, else nil.
    @inlinable
    public var string: String? {
        guard let b = stringBytes else { return nil }
        return String(decoding: b, as: UTF8.self)
    }

    /// True when this is a string equal, byte for byte, to `text`.
    @inlinable
    public func stringEquals(_ text: String) -> Bool {
        guard let b = stringBytes else { return false }
        return JSONRef.bytes(b, equal: text)
    }

    /// The tape index just past this value (and past all its contents).
    @inlinable
    var end: Int {
        switch tag {
        case UInt8(ascii: "{"), UInt8(ascii: "["): return Int(truncatingIfNeeded: word & 0xFFFF_FFFF)
        case UInt8(ascii: "l"), UInt8(ascii: "u"), UInt8(ascii: "d"): return index + 2
        default: return index + 1
        }
    }

    @inlinable
    static func bytes(_ b: UnsafeRawBufferPointer, equal text: String) -> Bool {
        var text = text
        return text.withUTF8 { t in
            guard t.count == b.count else { return false }
            var i = 0
            while i < t.count {
                if t[i] != b[i] { return false }
                i += 1
            }
            return true
        }
    }
}
