/// Byte ranges of the parts of a JSON text the daemon wrote, so that values are passed on exactly as they
/// were received (an export's documents, an import line's `data`): no decoding, no re-encoding. Assumes
/// well-formed JSON (the daemon's output, or a line `JSONParser` has already accepted).
enum RawJSON {
    /// The members of the object starting at `start` (after whitespace): each key (unescaped only when it
    /// has no escapes, as every key looked up here) and its value's range. Nil when no object starts there.
    static func members(_ b: [UInt8], from start: Int = 0) -> [(key: String, value: Range<Int>)]? {
        var i = skipSpace(b, start)
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var out: [(key: String, value: Range<Int>)] = []
        while true {
            i = skipSpace(b, i)
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: "}") { return out }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            guard b[i] == UInt8(ascii: "\"") else { return nil }
            let keyEnd = skipValue(b, i)
            let key = String(decoding: b[(i + 1)..<(keyEnd - 1)], as: UTF8.self)
            i = skipSpace(b, keyEnd)
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipSpace(b, i + 1)
            let valueEnd = skipValue(b, valueStart)
            out.append((key, valueStart..<valueEnd))
            i = valueEnd
        }
    }

    /// The ranges of the elements of the array occupying `range`.
    static func elements(_ b: [UInt8], in range: Range<Int>) -> [Range<Int>] {
        var i = skipSpace(b, range.lowerBound)
        guard i < range.upperBound, b[i] == UInt8(ascii: "[") else { return [] }
        i += 1
        var out: [Range<Int>] = []
        while i < range.upperBound {
            i = skipSpace(b, i)
            guard i < range.upperBound else { break }
            if b[i] == UInt8(ascii: "]") { break }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            let end = skipValue(b, i)
            out.append(i..<end)
            i = end
        }
        return out
    }

    /// The index just past the value starting at `start`.
    static func skipValue(_ b: [UInt8], _ start: Int) -> Int {
        var i = start
        guard i < b.count else { return i }
        switch b[i] {
        case UInt8(ascii: "\""):
            i += 1
            while i < b.count {
                if b[i] == UInt8(ascii: "\\") { i += 2; continue }
                if b[i] == UInt8(ascii: "\"") { return i + 1 }
                i += 1
            }
            return i
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\""): i = skipValue(b, i); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return i
        default:
            while i < b.count, !",}] \t\r\n".utf8.contains(b[i]) { i += 1 }
            return i
        }
    }

    static func skipSpace(_ b: [UInt8], _ start: Int) -> Int {
        var i = start
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        return i
    }
}
