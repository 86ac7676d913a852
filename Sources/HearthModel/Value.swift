/// A typed Firestore value. `==` is structural identity (what "the content changed" means for `updateTime`):
/// `3` and `3.0` differ, NaN equals NaN, strings compare by UTF-8 bytes. Query semantics (where 3 == 3.0)
/// use `ValueOrder`.
public enum Value: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case timestamp(Timestamp)
    case string(String)
    case bytes([UInt8])
    /// A reference to a document, held as its path (`customers/c1`).
    case reference(DocumentPath)
    case geoPoint(GeoPoint)
    case array([Value])
    case map(MapValue)
}

extension Value {
    /// Firestore's type order: null < bool < number < timestamp < string < bytes < reference < geopoint < array < map.
    public enum TypeOrder: Int, Sendable, Comparable {
        case null = 0, bool, number, timestamp, string, bytes, reference, geoPoint, array, map
        public static func < (a: TypeOrder, b: TypeOrder) -> Bool { a.rawValue < b.rawValue }
    }

    @inlinable
    public var typeOrder: TypeOrder {
        switch self {
        case .null: return .null
        case .bool: return .bool
        case .int, .double: return .number
        case .timestamp: return .timestamp
        case .string: return .string
        case .bytes: return .bytes
        case .reference: return .reference
        case .geoPoint: return .geoPoint
        case .array: return .array
        case .map: return .map
        }
    }

    /// The name used in error messages: "integer", "string", ...
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double: return "double"
        case .timestamp: return "timestamp"
        case .string: return "string"
        case .bytes: return "bytes"
        case .reference: return "reference"
        case .geoPoint: return "geopoint"
        case .array: return "array"
        case .map: return "map"
        }
    }

    public var isNumber: Bool { typeOrder == .number }
    public var isNaN: Bool { if case .double(let d) = self { return d.isNaN } else { return false } }

    public var mapValue: MapValue? { if case .map(let m) = self { return m } else { return nil } }
    public var arrayValue: [Value]? { if case .array(let a) = self { return a } else { return nil } }
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
}

extension Value: Equatable {
    public static func == (a: Value, b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.timestamp(let x), .timestamp(let y)): return x == y
        case (.string(let x), .string(let y)): return UTF8Order.equal(x, y)
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.reference(let x), .reference(let y)): return x == y
        case (.geoPoint(let x), .geoPoint(let y)):
            return x.latitude.bitPattern == y.latitude.bitPattern && x.longitude.bitPattern == y.longitude.bitPattern
        case (.array(let x), .array(let y)): return x == y
        case (.map(let x), .map(let y)): return x == y
        default: return false
        }
    }
}

extension Value: Hashable {
    public func hash(into h: inout Hasher) {
        h.combine(typeOrder.rawValue)
        switch self {
        case .null: break
        case .bool(let b): h.combine(b)
        case .int(let i): h.combine(0 as UInt8); h.combine(i)
        case .double(let d): h.combine(1 as UInt8); h.combine(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
        case .timestamp(let t): h.combine(t)
        case .string(let s): h.combine(s.utf8.count); for b in s.utf8 { h.combine(b) }
        case .bytes(let b): h.combine(b)
        case .reference(let p): h.combine(p)
        case .geoPoint(let g): h.combine(g.latitude.bitPattern); h.combine(g.longitude.bitPattern)
        case .array(let a): h.combine(a)
        case .map(let m): h.combine(m)
        }
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .map(MapValue(elements.map { MapValue.Field(key: $0.0, value: $0.1) }))
    }
}
