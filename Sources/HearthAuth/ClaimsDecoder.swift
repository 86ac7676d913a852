import HearthModel
import HearthProtocol

/// Turns a token payload's plain JSON into typed values (no `$timestamp`-style wire forms: claims are what
/// the issuer wrote). Integers within Int64 become `.int`, other numbers `.double`.
enum ClaimsDecoder {
    static let maxDepth = 32

    static func map(_ object: JSONRef) throws(TokenError) -> MapValue {
        try decodeMap(object, path: "payload", depth: 0)
    }

    private static func decodeMap(_ object: JSONRef, path: String, depth: Int) throws(TokenError) -> MapValue {
        var fields: [MapValue.Field] = []
        fields.reserveCapacity(object.count)
        for m in object.members {
            let key = m.key
            fields.append(MapValue.Field(key: key, value: try value(m.value, path: path + "." + key, depth: depth + 1)))
        }
        return MapValue(fields)
    }

    private static func value(_ ref: JSONRef, path: String, depth: Int) throws(TokenError) -> Value {
        guard depth <= maxDepth else {
            throw TokenError(.malformed, "token payload nests deeper than \(maxDepth) levels at \(path)")
        }
        switch ref.kind {
        case .null: return .null
        case .bool: return .bool(ref.bool!)
        case .int: return .int(ref.int64!)
        case .double: return .double(ref.double!)
        case .string: return .string(ref.string!)
        case .array:
            var items: [Value] = []
            for (i, e) in ref.elements.enumerated() {
                items.append(try value(e, path: "\(path)[\(i)]", depth: depth + 1))
            }
            return .array(items)
        case .object:
            return .map(try decodeMap(ref, path: path, depth: depth))
        }
    }
}
