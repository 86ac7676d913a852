import Foundation

/// Converts app values (`[String: Any]` trees as Firestore apps write them) to the wire's JSON and back.
///
/// Encoding accepts: nil/`NSNull`, `Bool`, Swift integers (as integers), `Double`/`Float` (as doubles, so
/// `3.0` stays a double), `NSNumber`, `String`, `Date` (rounded to the microsecond, Hearth's precision),
/// `Timestamp`, `Data`, `DocumentReference`, `GeoPoint`, `FieldValue`, arrays and string-keyed dictionaries.
/// Anything else is an `.invalidArgument` error naming the field.
///
/// Decoding yields: `NSNull`, `Bool`, `Int`, `Double`, `String`, `Timestamp`, `Data`, `DocumentReference`,
/// `GeoPoint`, `[Any]` and `[String: Any]`.
enum WireCodec {
    static func encode(_ value: Any, at field: String = "") throws -> JSON {
        if isNil(value) { return .null }
        if type(of: value) is NSNumber.Type, let n = value as? NSNumber { return encodeNumber(n) }
        switch value {
        case is NSNull: return .null
        case let v as Bool: return .bool(v)
        case let v as Int: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as UInt32: return .int(Int64(v))
        case let v as UInt16: return .int(Int64(v))
        case let v as UInt8: return .int(Int64(v))
        case let v as UInt:
            guard let i = Int64(exactly: v) else { throw tooLarge(field) }
            return .int(i)
        case let v as UInt64:
            guard let i = Int64(exactly: v) else { throw tooLarge(field) }
            return .int(i)
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as Date: return timestamp(Timestamp.roundedToMicroseconds(v))
        case let v as Timestamp: return timestamp(v)
        case let v as Data: return .object(["$bytes": .string(v.base64EncodedString())])
        case let v as DocumentReference: return .object(["$ref": .string(v.path)])
        case let v as GeoPoint: return .object(["$geopoint": .array([.double(v.latitude), .double(v.longitude)])])
        case let v as FieldValue:
            if let e = v.deferredError { throw e }
            return v.wire
        case let v as [Any]:
            return .array(try v.enumerated().map { try encode($0.element, at: "\(field)[\($0.offset)]") })
        case let v as [String: Any]:
            return .object(try encodeMap(v, at: field))
        case let v as [AnyHashable: Any]:
            var out: [String: JSON] = [:]
            for (k, e) in v {
                guard let key = k.base as? String else { throw invalid(field, "has a map key that is not a String: \(k)") }
                out[key] = try encode(e, at: join(field, key))
            }
            return .object(out)
        default:
            throw invalid(field, "has a value of unsupported type \(type(of: value))")
        }
    }

    /// Encodes a document's data (string keys taken literally).
    static func encodeMap(_ map: [String: Any], at field: String = "") throws -> [String: JSON] {
        var out: [String: JSON] = [:]
        for (k, v) in map { out[k] = try encode(v, at: join(field, k)) }
        return out
    }

    static func timestamp(_ t: Timestamp) -> JSON { .object(["$timestamp": .string(t.rfc3339)]) }

    /// Decodes a wire value into the app's representation; `db` makes `$ref` values into references.
    static func decode(_ json: JSON, db: Hearth) -> Any {
        switch json {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d): return d
        case .string(let s): return s
        case .array(let a): return a.map { decode($0, db: db) }
        case .object(let o):
            if o.count == 1, let (key, inner) = o.first, key.hasPrefix("$"), let typed = decodeTyped(key, inner, db: db) {
                return typed
            }
            return o.mapValues { decode($0, db: db) }
        }
    }

    static func decodeMap(_ map: [String: JSON], db: Hearth) -> [String: Any] { map.mapValues { decode($0, db: db) } }

    private static func decodeTyped(_ key: String, _ inner: JSON, db: Hearth) -> Any? {
        switch key {
        case "$timestamp": return inner.stringValue.flatMap { Timestamp(rfc3339: $0) }
        case "$bytes": return inner.stringValue.flatMap { Data(base64Encoded: $0) }
        case "$ref": return inner.stringValue.map { DocumentReference(db: db, path: $0) }
        case "$geopoint":
            guard let a = inner.arrayValue, a.count == 2, let lat = number(a[0]), let lng = number(a[1]) else { return nil }
            return GeoPoint(latitude: lat, longitude: lng)
        case "$double":
            if let d = number(inner) { return d }
            switch inner.stringValue {
            case "NaN": return Double.nan
            case "Infinity": return Double.infinity
            case "-Infinity": return -Double.infinity
            default: return nil
            }
        default: return nil
        }
    }

    static func number(_ j: JSON) -> Double? {
        switch j {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    private static func encodeNumber(_ n: NSNumber) -> JSON {
        #if canImport(Darwin)
        if CFGetTypeID(n) == CFBooleanGetTypeID() { return .bool(n.boolValue) }
        #endif
        switch String(cString: n.objCType) {
        case "c", "B": return .bool(n.boolValue)
        case "f", "d": return .double(n.doubleValue)
        case "Q", "L", "I": return n.uint64Value > UInt64(Int64.max) ? .double(n.doubleValue) : .int(n.int64Value)
        default: return .int(n.int64Value)
        }
    }

    private static func isNil(_ value: Any) -> Bool {
        let m = Mirror(reflecting: value)
        return m.displayStyle == .optional && m.children.isEmpty
    }

    private static func join(_ parent: String, _ key: String) -> String { parent.isEmpty ? key : "\(parent).\(key)" }

    private static func invalid(_ field: String, _ what: String) -> HearthError {
        HearthError.invalid(field.isEmpty ? "the value \(what)" : "field \(field) \(what)")
    }

    private static func tooLarge(_ field: String) -> HearthError { invalid(field, "is an unsigned integer above Int64.max") }
}

extension Timestamp {
    /// The date rounded to the nearest microsecond (Hearth's storage precision), so that a `Date` written and
    /// read back is the same instant to within floating-point error rather than truncated.
    static func roundedToMicroseconds(_ date: Date) -> Timestamp {
        let micros = (date.timeIntervalSince1970 * 1e6).rounded()
        let s = (micros / 1e6).rounded(.down)
        return Timestamp(seconds: Int64(s), nanoseconds: Int32((micros - s * 1e6).rounded()) * 1000)
    }
}
