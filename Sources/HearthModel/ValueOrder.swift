/// Firestore's total order over values, used by queries, cursors, `maximum`/`minimum` and array transforms.
///
/// - Types sort null < bool < number < timestamp < string < bytes < reference < geopoint < array < map.
/// - Integers and doubles interleave by exact numeric value (42 == 42.0); NaN sorts below every other number
///   and equals itself; -0.0 == 0.0.
/// - Strings by UTF-8 bytes; references segment by segment; arrays element-wise then by length; maps by
///   their key-sorted entries (key, then value), then by size.
public enum ValueOrder {
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ta = a.typeOrder, tb = b.typeOrder
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.int(let x), .int(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.int(let x), .double(let y)): return compareIntDouble(x, y)
        case (.double(let x), .int(let y)): return -compareIntDouble(y, x)
        case (.timestamp(let x), .timestamp(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): return UTF8Order.compare(x, y)
        case (.bytes(let x), .bytes(let y)):
            return x.withUnsafeBytes { px in y.withUnsafeBytes { py in UTF8Order.compareBytes(px, py) } }
        case (.reference(let x), .reference(let y)): return ResourcePath.compare(x.path, y.path)
        case (.geoPoint(let x), .geoPoint(let y)):
            let c = compareDoubles(x.latitude, y.latitude)
            return c != 0 ? c : compareDoubles(x.longitude, y.longitude)
        case (.array(let x), .array(let y)):
            for (u, v) in zip(x, y) {
                let c = compare(u, v)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.map(let x), .map(let y)):
            for (u, v) in zip(x.fields, y.fields) {
                let k = UTF8Order.compare(u.key, v.key)
                if k != 0 { return k }
                let c = compare(u.value, v.value)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            return 0
        }
    }

    @inlinable
    public static func equal(_ a: Value, _ b: Value) -> Bool { compare(a, b) == 0 }
    @inlinable
    public static func less(_ a: Value, _ b: Value) -> Bool { compare(a, b) < 0 }

    /// NaN lowest and equal to itself; -0.0 == 0.0.
    public static func compareDoubles(_ x: Double, _ y: Double) -> Int {
        if x.isNaN { return y.isNaN ? 0 : -1 }
        if y.isNaN { return 1 }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// Exact comparison of an integer with a double (no rounding through Double).
    public static func compareIntDouble(_ i: Int64, _ d: Double) -> Int {
        if d.isNaN { return 1 }
        if d >= 9_223_372_036_854_775_808.0 { return -1 }   // 2^63: above every Int64
        if d < -9_223_372_036_854_775_808.0 { return 1 }
        let t = d.rounded(.towardZero)
        let ti = Int64(t)          // exact: |t| < 2^63 and t is integral
        if i != ti { return i < ti ? -1 : 1 }
        let frac = d - t
        return frac == 0 ? 0 : (frac > 0 ? -1 : 1)
    }
}
