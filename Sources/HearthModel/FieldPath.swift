/// A path to a field inside a document: `a.b.c`, with backtick-quoted segments for names that are not simple
/// identifiers (`` `first name`.x ``, `` `a.b` ``). Inside backticks, `\` escapes the next character.
/// Firestore's reserved characters `~ * / [ ]` may appear in a segment only inside backticks.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let segments: [String]

    public init(_ segments: [String]) {
        precondition(!segments.isEmpty, "a field path has at least one segment")
        self.segments = segments
    }

    /// The document key pseudo-field.
    public static let documentID = FieldPath(["__name__"])
    public var isDocumentID: Bool { segments.count == 1 && segments[0] == "__name__" }

    /// Parses the dotted form (as `update` keys, `mergeFields`, filters and orders are written), of at most
    /// `maxBytes` UTF-8 bytes (Firestore's limit for a field path; the index catalog, stored before the limit,
    /// is read without one).
    public static func parse(_ text: String, maxBytes: Int = Limits.maxFieldNameBytes) throws(HearthError) -> FieldPath {
        let n = text.utf8.count
        if n > maxBytes {
            throw .invalid("field path \"\(String(text.prefix(32)))...\" is \(n) bytes, above the limit of \(maxBytes)")
        }
        if let segments = plainSegments(text) { return FieldPath(segments) }
        return try parseGeneral(text)
    }

    /// The segments of a path written the usual way, identifier characters (`A-Z a-z 0-9 _`) and dots with no
    /// empty segment, which `parseGeneral` would split at its dots as they are; else nil. A single segment is
    /// `text` itself (no new string).
    static func plainSegments(_ text: String) -> [String]? {
        func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> [String]? {
            guard !bytes.isEmpty else { return nil }
            var dots = 0
            var previous: UInt8 = 46
            for b in bytes {
                if b == 46 {
                    if previous == 46 { return nil }   // an empty segment: the general parse names it
                    dots += 1
                } else if !isIdentifierByte(b) {
                    return nil
                }
                previous = b
            }
            if previous == 46 { return nil }
            if dots == 0 { return [text] }
            return bytes.split(separator: 46).map { String(decoding: UnsafeBufferPointer(rebasing: $0), as: UTF8.self) }
        }
        var text = text
        return text.withUTF8 { plain($0) }
    }

    /// Parses any dotted form: backtick-quoted segments, escapes, and the errors that name what is wrong.
    static func parseGeneral(_ text: String) throws(HearthError) -> FieldPath {
        var segments: [String] = []
        var current: [UInt8] = []
        var quoted = false
        var wasQuoted = false
        var it = Array(text.utf8)[...]
        func finish() throws(HearthError) {
            if current.isEmpty && !wasQuoted {
                throw .invalid("field path \"\(text)\" has an empty segment")
            }
            segments.append(String(decoding: current, as: UTF8.self))
            current.removeAll()
            wasQuoted = false
        }
        while let c = it.popFirst() {
            if quoted {
                if c == 92 /* \ */ {
                    guard let next = it.popFirst() else { throw .invalid("field path \"\(text)\" ends inside an escape") }
                    current.append(next)
                } else if c == 96 /* ` */ {
                    quoted = false
                } else {
                    current.append(c)
                }
            } else if c == 96 {
                guard current.isEmpty && !wasQuoted else { throw .invalid("field path \"\(text)\" has a backtick inside a segment") }
                quoted = true
                wasQuoted = true
            } else if c == 46 /* . */ {
                try finish()
            } else {
                guard !wasQuoted else { throw .invalid("field path \"\(text)\" has text after a closing backtick") }
                if isReserved(c) {
                    var segment = current + [c]
                    while let next = it.popFirst(), next != 46 { segment.append(next) }
                    let quoted = FieldPath([String(decoding: segment, as: UTF8.self)]).description
                    throw .invalid("field path \"\(text)\" has '\(Character(Unicode.Scalar(c)))' outside backticks: "
                                   + "the characters ~ * / [ ] must be quoted, as in \(quoted)")
                }
                current.append(c)
            }
        }
        if quoted { throw .invalid("field path \"\(text)\" has an unclosed backtick") }
        try finish()
        if wasQuoted, let last = segments.last, last.isEmpty { throw .invalid("field path \"\(text)\" has an empty segment") }
        for s in segments where s.isEmpty { throw .invalid("field path \"\(text)\" has an empty segment") }
        return FieldPath(segments)
    }

    /// The canonical dotted form: simple identifiers bare, anything else in backticks.
    public var description: String {
        if segments.count == 1 { return FieldPath.description(ofSegment: segments[0]) }   // most fields: no new string
        return segments.map(FieldPath.description(ofSegment:)).joined(separator: ".")
    }

    /// One segment's canonical form: the segment itself when it is a simple identifier, else in backticks.
    public static func description(ofSegment s: String) -> String {
        guard !isSimple(s) else { return s }
        // Escape byte by byte: "\\" or "`" followed by a combining mark is one Character.
        var out: [UInt8] = [96]
        for b in s.utf8 {
            if b == 92 || b == 96 { out.append(92) }
            out.append(b)
        }
        out.append(96)
        return String(decoding: out, as: UTF8.self)
    }

    /// Firestore's reserved characters: `~ * / [ ]` (allowed only inside backticks).
    static func isReserved(_ c: UInt8) -> Bool {
        c == 126 || c == 42 || c == 47 || c == 91 || c == 93
    }

    /// `A-Z a-z 0-9 _`: the bytes of a simple identifier.
    @inline(__always)
    static func isIdentifierByte(_ b: UInt8) -> Bool {
        b == 95 || (b | 0x20 >= 97 && b | 0x20 <= 122) || (b >= 48 && b <= 57)
    }

    /// True when `s` is a simple identifier, a segment written without backticks.
    public static func isSimple(_ s: String) -> Bool {
        func simple(_ bytes: some Collection<UInt8>) -> Bool {
            guard let first = bytes.first, isIdentifierByte(first), first > 57 else { return false }   // not a digit first
            return bytes.allSatisfy(isIdentifierByte)
        }
        return s.utf8.withContiguousStorageIfAvailable { simple($0) } ?? simple(s.utf8)
    }

    public func appending(_ segment: String) -> FieldPath { FieldPath(segments + [segment]) }

    /// True when `self` is a prefix of `other` or equal to it.
    public func isPrefix(of other: FieldPath) -> Bool {
        segments.count <= other.segments.count && zip(segments, other.segments).allSatisfy { UTF8Order.equal($0, $1) }
    }

    public static func < (a: FieldPath, b: FieldPath) -> Bool {
        let n = min(a.segments.count, b.segments.count)
        for i in 0..<n {
            let c = UTF8Order.compare(a.segments[i], b.segments[i])
            if c != 0 { return c < 0 }
        }
        return a.segments.count < b.segments.count
    }

    public static func == (a: FieldPath, b: FieldPath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { UTF8Order.equal($0, $1) }
    }

    public func hash(into h: inout Hasher) {
        for s in segments { for b in s.utf8 { h.combine(b) }; h.combine(0xFF as UInt8) }
    }
}
