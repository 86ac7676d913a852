import Foundation
import CRE2
import HearthModel

/// A regular expression compiled once, in RE2's syntax (Firestore's rules use RE2), matched in time linear in
/// the text: a backtracking engine let an e-mail pattern take 0.5 s on an 8 KB crafted string, on the loop.
/// RE2 objects are immutable once compiled and safe to share between threads.
final class CompiledRegex: @unchecked Sendable {
    private let re: OpaquePointer

    /// Throws `RegexError` with RE2's reason when `pattern` is not valid RE2 syntax.
    init(_ pattern: String) throws(RegexError) {
        var error = [CChar](repeating: 0, count: 256)
        let compiled = pattern.utf8CString.withUnsafeBufferPointer { p in
            hearth_re2_new(p.baseAddress, p.count - 1, &error, error.count)
        }
        guard let compiled else { throw RegexError(error) }
        re = compiled
    }

    deinit { hearth_re2_free(re) }

    /// The whole of `s` matches (the rules' `string.matches`).
    func fullMatch(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { hearth_re2_full_match(re, $0.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, $0.count) == 1 }
    }

    /// `s` cut at every non-empty match (the rules' `string.split`).
    func split(_ s: String) -> [String] {
        var s = s
        return s.withUTF8 { bytes -> [String] in
            let base = bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
            var parts: [String] = []
            var pieceStart = 0, from = 0
            var start = 0, end = 0
            while from <= bytes.count, hearth_re2_find(re, base, bytes.count, from, &start, &end) == 1 {
                if end == start {
                    // An empty match cuts nothing: go on after the character there.
                    guard start < bytes.count else { break }
                    from = start + 1
                    while from < bytes.count && bytes[from] & 0xC0 == 0x80 { from += 1 }
                    continue
                }
                parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[pieceStart..<start]), as: UTF8.self))
                pieceStart = end
                from = end
            }
            parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[pieceStart...]), as: UTF8.self))
            return parts
        }
    }

    /// `s` with every match replaced by `rewrite` (`\1` names a group; the rules' `string.replace`).
    func replaceAll(_ s: String, with rewrite: String) throws(RegexError) -> String {
        var s = s, rewrite = rewrite
        var error = [CChar](repeating: 0, count: 256)
        var length = 0
        let out: UnsafeMutablePointer<CChar>? = s.withUTF8 { text in
            rewrite.withUTF8 { rw in
                hearth_re2_replace_all(re, text.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, text.count,
                                       rw.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, rw.count,
                                       &length, &error, error.count)
            }
        }
        guard let out else { throw RegexError(error) }
        defer { free(out) }
        return String(decoding: UnsafeRawBufferPointer(start: out, count: length), as: UTF8.self)
    }
}

/// Why RE2 refused a pattern or a rewrite.
struct RegexError: Error {
    let reason: String
    /// From RE2's NUL-terminated message.
    init(_ message: [CChar]) {
        reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Fields of `request` a rule may read.
enum RequestField: String, Sendable {
    case auth, resource, time, method, path, query
}

enum BinaryOp: String, Sendable {
    case eq = "==", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">=", `in` = "in"
    case add = "+", sub = "-", mul = "*", div = "/", mod = "%"
}

/// The type names `is` accepts.
enum TypeName: String, Sendable, CaseIterable {
    case string, int, float, number, bool, null, list, map, timestamp, duration, path, latlng, bytes, set

    func matches(_ v: RuleValue) -> Bool {
        switch (self, v) {
        case (.string, .string), (.int, .int), (.float, .float), (.bool, .bool), (.null, .null), (.list, .list),
             (.map, .map), (.timestamp, .timestamp), (.duration, .duration), (.path, .path), (.latlng, .latlng),
             (.bytes, .bytes), (.set, .set):
            return true
        case (.number, .int), (.number, .float): return true
        default: return false
        }
    }
}

/// Global and namespaced functions.
enum Builtin: String, Sendable {
    case get, exists, getAfter, existsAfter, int, float, string, bool, path, debug
    case mathAbs = "math.abs", mathCeil = "math.ceil", mathFloor = "math.floor", mathRound = "math.round"
    case mathSqrt = "math.sqrt", mathPow = "math.pow", mathIsNaN = "math.isNaN", mathIsInfinite = "math.isInfinite"
    case timestampDate = "timestamp.date", timestampValue = "timestamp.value"
    case durationValue = "duration.value", durationTime = "duration.time", durationAbs = "duration.abs"
    case latlngValue = "latlng.value"

    /// Accepted argument counts.
    var arity: ClosedRange<Int> {
        switch self {
        case .get, .exists, .getAfter, .existsAfter, .int, .float, .string, .bool, .path, .debug: return 1...1
        case .mathAbs, .mathCeil, .mathFloor, .mathRound, .mathSqrt, .mathIsNaN, .mathIsInfinite: return 1...1
        case .mathPow: return 2...2
        case .timestampDate: return 3...3
        case .timestampValue, .durationAbs: return 1...1
        case .durationValue, .latlngValue: return 2...2
        case .durationTime: return 4...4
        }
    }
}

/// Methods on values, resolved by name at compile time and dispatched on the receiver's type at run time.
enum Method: String, Sendable, CaseIterable {
    // string
    case size, matches, lower, upper, split, trim, replace, toUtf8
    // list, set
    case hasAll, hasAny, hasOnly, join, concat, removeAll, toSet, difference, intersection, union
    // map
    case keys, values, get, diff
    // map diff
    case affectedKeys, addedKeys, removedKeys, changedKeys, unchangedKeys
    // timestamp, duration
    case toMillis, year, month, day, hours, minutes, seconds, nanos, dayOfWeek, dayOfYear, date, time

    var arity: ClosedRange<Int> {
        switch self {
        case .size, .lower, .upper, .trim, .toUtf8, .toSet, .keys, .values, .affectedKeys, .addedKeys,
             .removedKeys, .changedKeys, .unchangedKeys, .toMillis, .year, .month, .day, .hours, .minutes,
             .seconds, .nanos, .dayOfWeek, .dayOfYear, .date, .time:
            return 0...0
        case .matches, .split, .hasAll, .hasAny, .hasOnly, .concat, .removeAll, .difference, .intersection,
             .union, .diff:
            return 1...1
        case .join: return 0...1
        case .replace, .get: return 2...2
        }
    }
}

/// One segment of a compiled path literal.
enum CompiledPathPiece: Sendable {
    case text(String)
    case expr(CExpr)
}

/// A compiled expression: names resolved to slots, members of `request`/`resource` specialised, methods
/// and functions resolved, literal regular expressions compiled.
indirect enum CExpr: Sendable {
    case constant(RuleValue)
    case slot(Int)
    case lazyLet(Int, CExpr)
    case request
    case resource(SourcePos)
    case requestField(RequestField, SourcePos)
    case authUID(SourcePos)
    case authToken(SourcePos)
    /// `request.auth == null` (true) or `request.auth != null` (false).
    case authIsNull(Bool)
    case resourceData(SourcePos)
    case requestResourceData(SourcePos)
    case member(CExpr, String, SourcePos)
    case index(CExpr, CExpr, SourcePos)
    case slice(CExpr, CExpr?, CExpr?, SourcePos)
    case not(CExpr, SourcePos)
    case negate(CExpr, SourcePos)
    case and(CExpr, CExpr, SourcePos)
    case or(CExpr, CExpr, SourcePos)
    case ternary(CExpr, CExpr, CExpr, SourcePos)
    case binary(BinaryOp, CExpr, CExpr, SourcePos)
    case isType(CExpr, TypeName, SourcePos)
    case list([CExpr])
    case map([(CExpr, CExpr)], SourcePos)
    case path([[CompiledPathPiece]], SourcePos)
    case call(Int, [CExpr], SourcePos)
    case builtin(Builtin, [CExpr], SourcePos)
    case method(CExpr, Method, [CExpr], SourcePos)
    case regexMatch(CExpr, CompiledRegex, SourcePos)
}

struct CompiledFunction: Sendable {
    var name: String
    var paramSlots: [Int]
    var letSlots: [Int]
    var body: CExpr
}

/// One `allow` statement: the methods it covers (bits of `RuleMethod`) and its condition (nil: always).
struct CompiledAllow: Sendable {
    var methods: UInt8
    var condition: CExpr?
    var pos: SourcePos
    /// Index among the program's allow statements.
    var id: Int

    static func bit(_ m: RuleMethod) -> UInt8 {
        switch m {
        case .get: return 1
        case .list: return 2
        case .create: return 4
        case .update: return 8
        case .delete: return 16
        }
    }
}

enum PatternSegment: Sendable {
    case literal(String)
    case variable(Int)
    case rest(Int, String)
}

/// A match block below `/databases/{database}/documents`: its own path segments, allows and nested matches.
/// A class, so walking the tree per request retains one reference per node instead of copying its arrays.
final class MatchNode: Sendable {
    let segments: [PatternSegment]
    /// The full path pattern below the documents root (`/users/{uid}/posts/{post}`), for messages.
    let pattern: String
    let allows: [CompiledAllow]
    let children: [MatchNode]
    /// OR of the allows' method bits in this node and below (skips subtrees that cannot apply).
    let methodsBelow: UInt8

    init(segments: [PatternSegment], pattern: String, allows: [CompiledAllow], children: [MatchNode], methodsBelow: UInt8) {
        self.segments = segments
        self.pattern = pattern
        self.allows = allows
        self.children = children
        self.methodsBelow = methodsBelow
    }
}

/// The compiled rules.
final class Program: Sendable {
    let version: Int
    let roots: [MatchNode]
    /// Slot of each documents-root `{database}` variable (bound to "(default)").
    let databaseSlots: [Int]
    let functions: [CompiledFunction]
    let slotCount: Int
    let allowCount: Int
    /// Methods (`CompiledAllow.bit`) for which some allow condition may read `resource`.
    let resourceMethods: UInt8

    init(version: Int, roots: [MatchNode], databaseSlots: [Int], functions: [CompiledFunction], slotCount: Int, allowCount: Int,
         resourceMethods: UInt8) {
        self.resourceMethods = resourceMethods
        self.version = version
        self.roots = roots
        self.databaseSlots = databaseSlots
        self.functions = functions
        self.slotCount = slotCount
        self.allowCount = allowCount
    }
}
