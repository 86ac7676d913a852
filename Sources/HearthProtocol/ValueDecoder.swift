import HearthModel

/// Decodes wire JSON into `Value`s, validating as it goes (see `ValueCodec` for the rules). Depth counts
/// the way Firestore does: a top-level document field is at depth 1, and a value's elements or members are
/// one deeper than it.
struct ValueDecoder {
    var allowNestedArrays: Bool
    var maxDepth: Int
    /// Longest map key, in UTF-8 bytes (`ValueCodec.Options.maxKeyBytes`).
    var maxKeyBytes: Int
    /// When set, `{"$documentId":true}` decodes to this string; otherwise it is rejected.
    var documentID: String?

    init(allowNestedArrays: Bool = false, maxDepth: Int = Limits.maxDepth, maxKeyBytes: Int = Limits.maxFieldNameBytes,
         documentID: String? = nil) {
        self.allowNestedArrays = allowNestedArrays
        self.maxDepth = maxDepth
        self.maxKeyBytes = maxKeyBytes
        self.documentID = documentID
    }

    /// Decodes `r`, a value at `depth`. `inArray`: some enclosing container is an array;
    /// `directlyInArray`: the immediate container is.
    func value(_ r: JSONRef, depth: Int, inArray: Bool = false, directlyInArray: Bool = false) throws(DecodeFailure) -> Value {
        switch r.tag {
        case UInt8(ascii: "\""): return .string(r.string!)
        case UInt8(ascii: "l"): return .int(r.int64!)
        case UInt8(ascii: "d"), UInt8(ascii: "u"): return .double(r.double!)
        case UInt8(ascii: "t"): return .bool(true)
        case UInt8(ascii: "f"): return .bool(false)
        case UInt8(ascii: "["): return try array(r, depth: depth, directlyInArray: directlyInArray)
        case UInt8(ascii: "{"):
            if let m = r.dollarMember { return try typed(m, depth: depth, inArray: inArray) }
            return .map(try map(r, memberDepth: depth + 1, inArray: inArray))
        default: return .null
        }
    }

    func array(_ r: JSONRef, depth: Int, directlyInArray: Bool) throws(DecodeFailure) -> Value {
        if directlyInArray && !allowNestedArrays { throw DecodeFailure("an array cannot directly contain another array") }
        let n = r.count
        if n > 0 && depth + 1 > maxDepth { throw tooDeep() }
        var out: [Value] = []
        out.reserveCapacity(n)
        var i = 0
        for e in r.elements {
            do {
                out.append(try value(e, depth: depth + 1, inArray: true, directlyInArray: true))
            } catch {
                throw error.adding(.index(i))
            }
            i += 1
        }
        return .array(out)
    }

    /// Decodes an object's members (each at `memberDepth`) as a map.
    func map(_ r: JSONRef, memberDepth: Int, inArray: Bool) throws(DecodeFailure) -> MapValue {
        if memberDepth > maxDepth && r.count > 0 { throw tooDeep() }
        return try MapKeys.withSortedMembers(r, maxKeyBytes: maxKeyBytes) { (members) throws(DecodeFailure) -> MapValue in
            var fields: [MapValue.Field] = []
            fields.reserveCapacity(members.count)
            for m in members {
                let key = m.key
                do throws(DecodeFailure) {
                    fields.append(MapValue.Field(key: key, value: try value(m.value, depth: memberDepth, inArray: inArray)))
                } catch {
                    throw error.adding(.key(key))
                }
            }
            return MapValue(sorted: fields)
        }
    }

    func tooDeep() -> DecodeFailure {
        DecodeFailure("maps and arrays nest deeper than \(maxDepth) levels")
    }

    /// Decodes a single-key `$` object: a typed value, `$documentId`, or an error for sentinels and unknown names.
    func typed(_ m: JSONRef.Member, depth: Int, inArray: Bool) throws(DecodeFailure) -> Value {
        guard let name = WireName.parse(m.keyBytes) else {
            throw DecodeFailure("unknown type \"\(MapKeys.text(m.keyBytes))\" (map keys cannot start with '$')")
        }
        let op = m.value
        switch name {
        case .timestamp:
            guard let b = op.stringBytes, let t = Timestamp.parse(bytes: b) else {
                throw DecodeFailure("$timestamp needs an RFC 3339 string in 0001-01-01T00:00:00Z...9999-12-31T23:59:59.999999Z, like \"2026-11-29T12:00:00.123456Z\"")
            }
            return .timestamp(t)
        case .bytes:
            guard let b = op.stringBytes, let bytes = Base64.decode(b) else {
                throw DecodeFailure("$bytes needs a standard base64 string with padding")
            }
            return .bytes(bytes)
        case .ref:
            guard let s = op.string else { throw DecodeFailure("$ref needs a document path string") }
            do {
                return .reference(try DocumentPath(parsing: s))
            } catch {
                throw DecodeFailure("$ref: \(error.message)")
            }
        case .geopoint:
            return .geoPoint(try geoPoint(op))
        case .double:
            return .double(try explicitDouble(op))
        case .documentId:
            guard let id = documentID else { throw DecodeFailure("$documentId is not allowed here") }
            guard op.bool == true else { throw DecodeFailure("$documentId needs the value true") }
            return .string(id)
        case .delete:
            throw DecodeFailure(inArray ? "$delete is not allowed inside arrays" : "$delete is not allowed here")
        default:
            throw DecodeFailure(inArray ? "transforms are not allowed inside arrays (found \(MapKeys.text(m.keyBytes)))"
                                        : "\(MapKeys.text(m.keyBytes)) is not allowed here")
        }
    }

    func geoPoint(_ op: JSONRef) throws(DecodeFailure) -> GeoPoint {
        let usage = "$geopoint needs [latitude, longitude] with latitude in [-90, 90] and longitude in [-180, 180]"
        guard op.isArray, op.count == 2 else { throw DecodeFailure(usage) }
        var it = op.elements
        guard let lat = it.next()?.number, let lng = it.next()?.number else { throw DecodeFailure(usage) }
        let g = GeoPoint(latitude: lat, longitude: lng)
        guard g.isValid else { throw DecodeFailure(usage) }
        return g
    }

    func explicitDouble(_ op: JSONRef) throws(DecodeFailure) -> Double {
        if let d = op.number { return d }
        if let b = op.stringBytes {
            if WireName.equal(b, "NaN") { return .nan }
            if WireName.equal(b, "Infinity") { return .infinity }
            if WireName.equal(b, "-Infinity") { return -.infinity }
        }
        throw DecodeFailure("$double needs a number or one of \"NaN\", \"Infinity\", \"-Infinity\"")
    }
}
