import HearthModel

/// A `path` value: absolute (`/databases/(default)/documents/users/bob`) or, for `{rest=**}` bindings,
/// relative to the documents root (`users/bob`).
struct RulePath: Equatable, Sendable {
    var segments: [String]
    static let documentsRoot = ["databases", "(default)", "documents"]

    init(_ segments: [String]) { self.segments = segments }
    init(document: DocumentPath) { segments = RulePath.documentsRoot + document.path.segments }

    var description: String { "/" + segments.joined(separator: "/") }

    static func == (a: RulePath, b: RulePath) -> Bool {
        a.segments.count == b.segments.count && zip(a.segments, b.segments).allSatisfy { UTF8Order.equal($0, $1) }
    }
}

/// A document as rules see it (`resource`, `request.resource`, a `get()` result).
struct RuleResource: Sendable {
    var path: DocumentPath?
    var data: MapValue
}

/// A map value: a document's map converted lazily, or one built by the rules (sorted by key).
enum RuleMap: Sendable {
    case document(MapValue)
    case built([(key: String, value: RuleValue)])

    static func build(_ entries: [(String, RuleValue)]) -> RuleMap {
        var out: [(key: String, value: RuleValue)] = []
        for (k, v) in entries {
            if let i = out.firstIndex(where: { UTF8Order.equal($0.key, k) }) { out[i].value = v } else { out.append((k, v)) }
        }
        out.sort { UTF8Order.less($0.key, $1.key) }
        return .built(out)
    }

    subscript(key: String) -> RuleValue? {
        switch self {
        case .document(let m): return m[key].map(RuleValue.init)
        case .built(let entries):
            for e in entries where UTF8Order.equal(e.key, key) { return e.value }
            return nil
        }
    }

    var count: Int {
        switch self {
        case .document(let m): return m.count
        case .built(let e): return e.count
        }
    }

    var keys: [String] {
        switch self {
        case .document(let m): return m.fields.map(\.key)
        case .built(let e): return e.map(\.key)
        }
    }

    var entries: [(key: String, value: RuleValue)] {
        switch self {
        case .document(let m): return m.fields.map { ($0.key, RuleValue($0.value)) }
        case .built(let e): return e
        }
    }
}

/// A set: unique elements in insertion order.
struct RuleSet: Sendable {
    private(set) var items: [RuleValue] = []
    private var members = RuleMembership([])
    init(_ values: [RuleValue]) { for v in values { insert(v) } }
    func contains(_ v: RuleValue) -> Bool { members.contains(v) }
    mutating func insert(_ v: RuleValue) { if members.insert(v) { items.append(v) } }
}

/// Membership by `RuleValue.equal` in time proportional to the values, not their square (a rule's
/// `affectedKeys().hasOnly([...])` over a write of 20,000 fields held the loop for 3 s; `hasAny` over a list of
/// 60,000 ints, 15 s; `toSet()` of 16,000 maps, 29 s): values through a hash of a key that is equal exactly
/// when `RuleValue.equal` holds (`Key`: strings by their UTF-8 bytes, numbers by value, an int and the float of
/// its value alike, lists by element, maps by their entries in key order); the rest (sets, resources) by
/// comparison.
struct RuleMembership: Sendable {
    private var keys: Set<Key> = []
    private var others: [RuleValue] = []

    /// A value's identity under `RuleValue.equal`. A float with an integral value an Int64 holds is keyed as
    /// that int (they are equal); other floats by their bits (0.0 and -0.0 are integral, so both are the int
    /// 0). NaN equals nothing and has no key, nor has a list or map holding one.
    private enum Key: Hashable {
        case null
        case bool(Bool)
        case int(Int64)
        case float(UInt64)
        case string([UInt8])
        case bytes([UInt8])
        case timestamp(Timestamp)
        case duration(Int64)
        case latlng(GeoPoint)
        case path([[UInt8]])
        case list([Key])
        /// Entries sorted by their keys' UTF-8 bytes (maps equal whatever their order).
        case map([Entry])

        struct Entry: Hashable {
            let key: [UInt8]
            let value: Key
        }

        /// nil for NaN (a member of nothing), for a list or map holding one, and for values compared whole
        /// (sets, resources, ...).
        init?(_ v: RuleValue) {
            switch v {
            case .null: self = .null
            case .bool(let b): self = .bool(b)
            case .int(let i): self = .int(i)
            case .float(let d):
                if d.isNaN { return nil }
                if let i = Int64(exactly: d) { self = .int(i) } else { self = .float(d.bitPattern) }
            case .string(let s): self = .string(Array(s.utf8))
            case .bytes(let b): self = .bytes(b)
            case .timestamp(let t): self = .timestamp(t)
            case .duration(let n): self = .duration(n)
            case .latlng(let g): self = .latlng(g)
            case .path(let p): self = .path(p.segments.map { Array($0.utf8) })
            case .list(let items):
                var keys: [Key] = []
                keys.reserveCapacity(items.count)
                for item in items {
                    guard let k = Key(item) else { return nil }
                    keys.append(k)
                }
                self = .list(keys)
            case .map(let m):
                var entries: [Entry] = []
                entries.reserveCapacity(m.count)
                for e in m.entries {
                    guard let k = Key(e.value) else { return nil }
                    entries.append(Entry(key: Array(e.key.utf8), value: k))
                }
                entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
                self = .map(entries)
            default: return nil
            }
        }
    }

    init(_ values: [RuleValue]) { for v in values { insert(v) } }

    func contains(_ v: RuleValue) -> Bool {
        if let k = Key(v) { return keys.contains(k) }
        if Self.holdsNaN(v) { return false }
        return others.contains { RuleValue.equal($0, v) }
    }

    /// Adds `v`; false when an equal value was a member already.
    @discardableResult
    mutating func insert(_ v: RuleValue) -> Bool {
        if let k = Key(v) { return keys.insert(k).inserted }
        if Self.holdsNaN(v) { return true }    // equal to no member, and no later value equals it
        guard !others.contains(where: { RuleValue.equal($0, v) }) else { return false }
        others.append(v)
        return true
    }

    /// NaN, or a list or map holding one at any depth: equal to nothing, itself included.
    private static func holdsNaN(_ v: RuleValue) -> Bool {
        switch v {
        case .float(let d): return d.isNaN
        case .list(let items): return items.contains(where: holdsNaN)
        case .map(let m): return m.entries.contains { holdsNaN($0.value) }
        default: return false
        }
    }
}

/// The result of `map.diff(other)`: `affectedKeys()` and friends compare the two maps by key.
final class RuleMapDiff: Sendable {
    let left: RuleMap   // the receiver (e.g. request.resource.data)
    let right: RuleMap  // the argument (e.g. resource.data)
    init(_ left: RuleMap, _ right: RuleMap) {
        self.left = left
        self.right = right
    }

    var addedKeys: RuleSet { RuleSet(left.keys.filter { right[$0] == nil }.map(RuleValue.string)) }
    var removedKeys: RuleSet { RuleSet(right.keys.filter { left[$0] == nil }.map(RuleValue.string)) }
    var changedKeys: RuleSet {
        RuleSet(left.entries.filter { e in right[e.key].map { !RuleValue.equal($0, e.value) } ?? false }.map { .string($0.key) })
    }
    var unchangedKeys: RuleSet {
        RuleSet(left.entries.filter { e in right[e.key].map { RuleValue.equal($0, e.value) } ?? false }.map { .string($0.key) })
    }
    var affectedKeys: RuleSet {
        var s = addedKeys
        for k in removedKeys.items { s.insert(k) }
        for k in changedKeys.items { s.insert(k) }
        return s
    }
}

/// A value a `list` rule cannot know from the query alone; using it makes the rule undecidable unless the
/// query pins it (see `QueryJudge`).
enum RuleSymbol: Sendable {
    /// `resource` of a list request: every document the query could return.
    case resource
    /// `resource.data.<segments>` the query does not pin.
    case data([String])
    /// The document ID (`resource.id`, or the last path variable) the query does not pin.
    case documentID
    /// A `{name=**}` binding that spans segments a query does not fix.
    case wildcard(String)
    /// Something else a query does not determine (the message names it).
    case unknown(String)
}

/// A runtime value of the rules language.
enum RuleValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    case timestamp(Timestamp)
    /// Nanoseconds.
    case duration(Int64)
    case latlng(GeoPoint)
    case path(RulePath)
    case list([RuleValue])
    case map(RuleMap)
    case set(RuleSet)
    case mapDiff(RuleMapDiff)
    case resource(RuleResource)
    /// The `request` object (its fields are read from the evaluation context).
    case request
    /// `request.query` of a list request.
    case query
    case symbolic(RuleSymbol)
    /// An unevaluated `let` slot.
    case unset

    init(_ v: Value) {
        switch v {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .float(d)
        case .timestamp(let t): self = .timestamp(t)
        case .string(let s): self = .string(s)
        case .bytes(let b): self = .bytes(b)
        case .reference(let p): self = .path(RulePath(document: p))
        case .geoPoint(let g): self = .latlng(g)
        case .array(let a): self = .list(a.map(RuleValue.init))
        case .map(let m): self = .map(.document(m))
        }
    }

    /// The type name rules use in `is` checks and error messages.
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "string"
        case .bytes: return "bytes"
        case .timestamp: return "timestamp"
        case .duration: return "duration"
        case .latlng: return "latlng"
        case .path: return "path"
        case .list: return "list"
        case .map: return "map"
        case .set: return "set"
        case .mapDiff: return "map_diff"
        case .resource: return "resource"
        case .request: return "request"
        case .query: return "query"
        case .symbolic: return "unknown"
        case .unset: return "unset"
        }
    }

    /// Rules equality: ints and floats compare by value, other types only equal themselves; lists by element,
    /// maps and sets ignoring order. Different types are unequal (never an error).
    static func equal(_ a: RuleValue, _ b: RuleValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.float(let x), .float(let y)): return x == y
        case (.int(let x), .float(let y)): return ValueOrder.compareIntDouble(x, y) == 0 && !y.isNaN
        case (.float(let x), .int(let y)): return ValueOrder.compareIntDouble(y, x) == 0 && !x.isNaN
        case (.string(let x), .string(let y)): return UTF8Order.equal(x, y)
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.timestamp(let x), .timestamp(let y)): return x == y
        case (.duration(let x), .duration(let y)): return x == y
        case (.latlng(let x), .latlng(let y)): return x == y
        case (.path(let x), .path(let y)): return x == y
        case (.list(let x), .list(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.map(let x), .map(let y)):
            if case .document(let mx) = x, case .document(let my) = y, mx == my { return true }
            guard x.count == y.count else { return false }
            for e in x.entries {
                guard let other = y[e.key], equal(e.value, other) else { return false }
            }
            return true
        case (.set(let x), .set(let y)):
            return x.items.count == y.items.count && x.items.allSatisfy { y.contains($0) }
        case (.resource(let x), .resource(let y)):
            return x.path == y.path && x.data == y.data
        default: return false
        }
    }

    /// Rules ordering: numbers, strings (by code point), bytes, bools, timestamps, durations, paths; nil when
    /// the two values cannot be ordered (an evaluation error).
    static func compare(_ a: RuleValue, _ b: RuleValue) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.float(let x), .float(let y)):
            if x.isNaN || y.isNaN { return nil }
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.int(let x), .float(let y)): return y.isNaN ? nil : ValueOrder.compareIntDouble(x, y)
        case (.float(let x), .int(let y)): return x.isNaN ? nil : -ValueOrder.compareIntDouble(y, x)
        case (.string(let x), .string(let y)): return UTF8Order.compare(x, y).signum()
        case (.bytes(let x), .bytes(let y)): return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.timestamp(let x), .timestamp(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.duration(let x), .duration(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.path(let x), .path(let y)):
            return ResourcePath.compare(ResourcePath(segments: x.segments), ResourcePath(segments: y.segments))
        default: return nil
        }
    }

    /// A short rendering for error messages.
    var shortDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .int(let i): return String(i)
        case .float(let d): return String(d)
        case .string(let s): return "'\(s.count > 40 ? String(s.prefix(40)) + "..." : s)'"
        case .path(let p): return p.description
        case .timestamp(let t): return "timestamp(\(t))"
        case .duration(let n): return "duration(\(n)ns)"
        default: return typeName
        }
    }
}
