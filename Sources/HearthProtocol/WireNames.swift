/// The `$` names of the wire format: typed values and write sentinels.
enum WireName: Equatable {
    case timestamp, bytes, ref, geopoint, double
    case serverTimestamp, increment, maximum, minimum, arrayUnion, arrayRemove, delete, documentId

    /// The name of a single-key `$` object, or nil when it is not one we know.
    static func parse(_ b: UnsafeRawBufferPointer) -> WireName? {
        guard b.count >= 4, b[0] == 36 else { return nil }
        switch b.count {
        case 4: return equal(b, "$ref") ? .ref : nil
        case 6: return equal(b, "$bytes") ? .bytes : nil
        case 7: return equal(b, "$double") ? .double : (equal(b, "$delete") ? .delete : nil)
        case 8: return equal(b, "$maximum") ? .maximum : (equal(b, "$minimum") ? .minimum : nil)
        case 9: return equal(b, "$geopoint") ? .geopoint : nil
        case 10:
            if equal(b, "$timestamp") { return .timestamp }
            if equal(b, "$increment") { return .increment }
            return nil
        case 11:
            if equal(b, "$arrayUnion") { return .arrayUnion }
            if equal(b, "$documentId") { return .documentId }
            return nil
        case 12: return equal(b, "$arrayRemove") ? .arrayRemove : nil
        case 16: return equal(b, "$serverTimestamp") ? .serverTimestamp : nil
        default: return nil
        }
    }

    /// The name as written on the wire.
    var label: String {
        switch self {
        case .timestamp: return "$timestamp"
        case .bytes: return "$bytes"
        case .ref: return "$ref"
        case .geopoint: return "$geopoint"
        case .double: return "$double"
        case .serverTimestamp: return "$serverTimestamp"
        case .increment: return "$increment"
        case .maximum: return "$maximum"
        case .minimum: return "$minimum"
        case .arrayUnion: return "$arrayUnion"
        case .arrayRemove: return "$arrayRemove"
        case .delete: return "$delete"
        case .documentId: return "$documentId"
        }
    }

    var isTransform: Bool {
        switch self {
        case .serverTimestamp, .increment, .maximum, .minimum, .arrayUnion, .arrayRemove: return true
        default: return false
        }
    }

    var isSentinel: Bool { isTransform || self == .delete || self == .documentId }

    @inline(__always)
    static func equal(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0..<b.count where b[i] != p[i] { return false }
        return true
    }
}

extension JSONRef {
    /// For an object with exactly one member whose key starts with `$`: that key's bytes and value.
    @inlinable
    var dollarMember: Member? {
        guard isObject, count == 1 else { return nil }
        var it = members
        guard let m = it.next(), m.keyBytes.first == 36 else { return nil }
        return m
    }
}
