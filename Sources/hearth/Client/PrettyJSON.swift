import HearthProtocol

/// Renders a parsed JSON value for people: objects and arrays indented by two spaces, typed single-key
/// values (`{"$timestamp":"..."}`) and short arrays of scalars kept on one line. Numbers are written the
/// way the daemon writes them (shortest round-trip doubles), strings re-escaped, so the output is valid JSON.
enum PrettyJSON {
    /// Arrays of scalars up to this many characters stay on one line.
    static let inlineWidth = 72

    static func format(_ ref: JSONRef, indent: Int = 0) -> String {
        var out: [UInt8] = []
        write(ref, indent: indent, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The value on one line with no spaces (JSON as the daemon would write it).
    static func compact(_ ref: JSONRef) -> String {
        var out: [UInt8] = []
        writeCompact(ref, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func write(_ ref: JSONRef, indent: Int, into out: inout [UInt8]) {
        switch ref.kind {
        case .object:
            if ref.count == 0 || isTyped(ref) { writeCompact(ref, into: &out); return }
            out.append(UInt8(ascii: "{"))
            var first = true
            for m in ref.members {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                newline(indent + 2, &out)
                quote(m.keyBytes, into: &out)
                out.append(contentsOf: ": ".utf8)
                write(m.value, indent: indent + 2, into: &out)
            }
            newline(indent, &out)
            out.append(UInt8(ascii: "}"))
        case .array:
            if ref.count == 0 { out.append(contentsOf: "[]".utf8); return }
            if ref.elements.allSatisfy({ isScalar($0) || isTyped($0) }) {
                var line: [UInt8] = []
                writeCompact(ref, spaced: true, into: &line)
                if line.count <= inlineWidth { out.append(contentsOf: line); return }
            }
            out.append(UInt8(ascii: "["))
            var first = true
            for e in ref.elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                newline(indent + 2, &out)
                write(e, indent: indent + 2, into: &out)
            }
            newline(indent, &out)
            out.append(UInt8(ascii: "]"))
        default:
            writeCompact(ref, into: &out)
        }
    }

    private static func writeCompact(_ ref: JSONRef, spaced: Bool = false, into out: inout [UInt8]) {
        switch ref.kind {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool: out.append(contentsOf: (ref.bool! ? "true" : "false").utf8)
        case .int: out.append(contentsOf: String(ref.int64!).utf8)
        case .double:
            var w = JSONWriter(capacity: 32)
            w.double(ref.double!)
            out.append(contentsOf: w.bytes)
        case .string: quote(ref.stringBytes!, into: &out)
        case .array:
            out.append(UInt8(ascii: "["))
            var first = true
            for e in ref.elements {
                if !first { out.append(contentsOf: (spaced ? ", " : ",").utf8) }
                first = false
                writeCompact(e, spaced: spaced, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object:
            out.append(UInt8(ascii: "{"))
            var first = true
            for m in ref.members {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                quote(m.keyBytes, into: &out)
                out.append(UInt8(ascii: ":"))
                writeCompact(m.value, spaced: spaced, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func isScalar(_ ref: JSONRef) -> Bool { !ref.isObject && !ref.isArray }

    /// A single-key object whose key starts with `$`: a typed wire value such as `{"$timestamp":"..."}`.
    private static func isTyped(_ ref: JSONRef) -> Bool {
        guard ref.isObject, ref.count == 1, let m = ref.members.first(where: { _ in true }) else { return false }
        return m.keyBytes.first == UInt8(ascii: "$")
    }

    private static func newline(_ indent: Int, _ out: inout [UInt8]) {
        out.append(10)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent))
    }

    /// Appends `"` + the JSON-escaped bytes + `"`.
    static func quote(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.append(34)
        for c in bytes {
            switch c {
            case 34: out.append(contentsOf: #"\""#.utf8)
            case 92: out.append(contentsOf: #"\\"#.utf8)
            case 10: out.append(contentsOf: #"\n"#.utf8)
            case 13: out.append(contentsOf: #"\r"#.utf8)
            case 9: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hex[Int(c >> 4)])
                out.append(hex[Int(c & 15)])
            default: out.append(c)
            }
        }
        out.append(34)
    }
}
