import Foundation

/// A JSON value as it travels on the wire. Integers and doubles stay distinct (`3` is `.int`, `3.0` is
/// `.double`), which Foundation's JSONSerialization cannot guarantee; typed Hearth values (`$timestamp`,
/// `$ref`, ...) are plain objects at this level and are interpreted by `WireCodec`.
enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    var objectValue: [String: JSON]? { if case .object(let o) = self { return o }; return nil }
    var arrayValue: [JSON]? { if case .array(let a) = self { return a }; return nil }
    var isNull: Bool { if case .null = self { return true }; return false }

    /// An integer, also from an integral double (sizes and indices may arrive either way).
    var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: return Int64(d)
        default: return nil
        }
    }

    /// The serialized form (one line: no newline characters are ever produced).
    var serialized: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        JSONWriter.write(self, into: &out)
        return out
    }

    /// Parses one JSON text.
    static func parse(_ bytes: some Collection<UInt8>) throws -> JSON {
        var parser = JSONParser(Array(bytes))
        return try parser.parseDocument()
    }
}

extension JSON: Equatable {
    /// Structural equality; doubles compare by bit pattern so that NaN equals NaN (documents holding NaN
    /// must compare equal to themselves when listeners diff states).
    static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern || x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)): return x == y
        default: return false
        }
    }
}

/// Writes JSON text. Non-finite doubles, which JSON cannot spell, are written in Hearth's `$double` form.
enum JSONWriter {
    static func write(_ value: JSON, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .int(let i): out += Array(String(i).utf8)
        case .double(let d): writeDouble(d, into: &out)
        case .string(let s): writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(v, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            var first = true
            for key in o.keys.sorted() {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(o[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Finite doubles use Swift's shortest round-tripping form, which always has a `.` or an exponent
    /// (`3.0`, `1e-07`), so the server reads them back as doubles, never as integers.
    static func writeDouble(_ d: Double, into out: inout [UInt8]) {
        if d.isNaN {
            out += Array(#"{"$double":"NaN"}"#.utf8)
        } else if d.isInfinite {
            out += Array((d > 0 ? #"{"$double":"Infinity"}"# : #"{"$double":"-Infinity"}"#).utf8)
        } else {
            var text = d.description
            if !text.contains(".") && !text.contains("e") { text += ".0" }
            out += Array(text.utf8)
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [92, 34]
            case 92: out += [92, 92]
            case 10: out += [92, UInt8(ascii: "n")]
            case 13: out += [92, UInt8(ascii: "r")]
            case 9: out += [92, UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
