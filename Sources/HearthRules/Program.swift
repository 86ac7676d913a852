import Foundation
import HearthModel

/// A regular expression compiled once (NSRegularExpression is immutable and safe to share between threads).
final class CompiledRegex: @unchecked Sendable {
    let regex: NSRegularExpression
    init(_ pattern: String) throws {
        regex = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: [])
    }

    /// Full match, as the rules' `string.matches` (RE2 syntax mostly coincides with ICU's).
    func fullMatch(_ s: String) -> Bool {
        regex.firstMatch(in: s, options: [], range: NSRange(s.startIndex..., in: s)) != nil
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
