import Foundation

/// A strict recursive-descent JSON parser over UTF-8 bytes that keeps integers (no fraction or exponent,
/// fits Int64) apart from doubles, as the Hearth protocol does.
struct JSONParser {
    struct Failure: Error, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses the whole input as one value (surrounding whitespace allowed).
    mutating func parseDocument() throws -> JSON {
        let v = try parseValue()
        skipSpace()
        guard i == bytes.count else { throw fail("trailing characters") }
        return v
    }

    private func fail(_ reason: String) -> Failure { Failure(offset: i, reason: reason) }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 32 || bytes[i] == 9 || bytes[i] == 10 || bytes[i] == 13 { i += 1 }
    }

    private mutating func parseValue() throws -> JSON {
        skipSpace()
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try parseNumber()
        }
    }

    private mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else { throw fail("unexpected character") }
        i += w.count
    }

    private mutating func nest() throws {
        depth += 1
        guard depth <= 512 else { throw fail("nesting too deep") }
    }

    private mutating func parseObject() throws -> JSON {
        try nest()
        defer { depth -= 1 }
        i += 1
        var out: [String: JSON] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            out[key] = try parseValue()
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(out) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws -> JSON {
        try nest()
        defer { depth -= 1 }
        i += 1
        var out: [JSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
        while true {
            out.append(try parseValue())
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(out) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func parseString() throws -> String {
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != 92 {
            guard bytes[i] >= 0x20 else { throw fail("control character in string") }
            i += 1
        }
        guard i < bytes.count else { throw fail("unterminated string") }
        if bytes[i] == UInt8(ascii: "\"") {
            i += 1
            return String(decoding: bytes[start..<i - 1], as: UTF8.self)
        }
        var buf = Array(bytes[start..<i])
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") { i += 1; return String(decoding: buf, as: UTF8.self) }
            guard c >= 0x20 else { throw fail("control character in string") }
            if c != 92 { buf.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): buf.append(34)
            case 92: buf.append(92)
            case UInt8(ascii: "/"): buf.append(47)
            case UInt8(ascii: "b"): buf.append(8)
            case UInt8(ascii: "f"): buf.append(12)
            case UInt8(ascii: "n"): buf.append(10)
            case UInt8(ascii: "r"): buf.append(13)
            case UInt8(ascii: "t"): buf.append(9)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar), i + 1 < bytes.count, bytes[i] == 92, bytes[i + 1] == UInt8(ascii: "u") {
                    i += 2
                    let low = try hex4()
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        buf += Array(String(UnicodeScalar(0xFFFD)!).utf8)
                        scalar = low
                    }
                }
                let u = UnicodeScalar(scalar) ?? UnicodeScalar(0xFFFD)!
                buf += Array(String(u).utf8)
            default: throw fail("bad escape")
            }
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 65...70: d = UInt32(c - 55)
            case 97...102: d = UInt32(c - 87)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func parseNumber() throws -> JSON {
        let start = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        let intStart = i
        while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
        guard i > intStart else { throw fail("unexpected character") }
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            let fracStart = i
            while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
            guard i > fracStart else { throw fail("digits expected after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let expStart = i
            while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
            guard i > expStart else { throw fail("digits expected in exponent") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if integral, let v = Int64(text) { return .int(v) }
        guard let d = Double(text) else { throw fail("bad number") }
        return .double(d)
    }
}
