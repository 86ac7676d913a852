import Foundation

/// A path to a field whose segments are taken literally (`FieldPath(["a.b"])` is one field named `a.b`),
/// like Firestore's `FieldPath`. Strings given where a field path is expected are dotted paths instead:
/// `"a.b"` is field `b` inside map `a`.
public struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    public let segments: [String]

    /// A path from literal segments; an empty list or an empty segment is refused by the server when used.
    public init(_ fieldNames: [String]) { segments = fieldNames }

    /// The document key pseudo-field (`__name__`): filter or order by document ID.
    public static func documentID() -> FieldPath { FieldPath(["__name__"]) }

    var isDocumentID: Bool { segments == ["__name__"] }

    /// The protocol's dotted form: simple identifiers bare, other segments in backticks with `\` escaping
    /// backticks and backslashes.
    public var description: String { dotted }

    var dotted: String {
        segments.map { s in
            if FieldPath.isSimple(s) { return s }
            var out = "`"
            for c in s {
                if c == "`" || c == "\\" { out.append("\\") }
                out.append(c)
            }
            return out + "`"
        }.joined(separator: ".")
    }

    static func isSimple(_ s: String) -> Bool {
        guard let first = s.utf8.first, first == 95 || (first | 0x20 >= 97 && first | 0x20 <= 122) else { return false }
        return s.utf8.allSatisfy { $0 == 95 || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || ($0 >= 48 && $0 <= 57) }
    }

    /// Splits a dotted path (with backtick quoting) into segments; nil when malformed.
    static func segments(ofDotted text: String) -> [String]? {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var it = text.makeIterator()
        while let c = it.next() {
            if quoted {
                if c == "\\" {
                    guard let n = it.next() else { return nil }
                    current.append(n)
                } else if c == "`" {
                    quoted = false
                } else {
                    current.append(c)
                }
            } else if c == "`" {
                guard current.isEmpty, !wasQuoted else { return nil }
                quoted = true
                wasQuoted = true
            } else if c == "." {
                guard !current.isEmpty else { return nil }
                segments.append(current)
                current = ""
                wasQuoted = false
            } else {
                guard !wasQuoted else { return nil }
                current.append(c)
            }
        }
        guard !quoted, !current.isEmpty else { return nil }
        segments.append(current)
        return segments
    }

    /// The dotted wire form of a field given as a `String` (already dotted) or a `FieldPath`.
    static func wireForm(of field: Any) throws -> String {
        if let s = field as? String { return s }
        if let p = field as? FieldPath { return p.dotted }
        throw HearthError.invalid("a field must be a String or a FieldPath, not \(type(of: field))")
    }
}
