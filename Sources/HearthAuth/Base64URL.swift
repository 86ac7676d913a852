/// Base64url without padding (RFC 4648 §5, as JWS uses it, RFC 7515 §2). Decoding is strict: only the
/// URL-safe alphabet, no `=`, no whitespace, no length of the form 4k+1, and the unused low bits of the last
/// symbol are zero, so each byte string has exactly one accepted encoding (a signature cannot be re-spelled).
public enum Base64URL {
    /// The value of one symbol, or nil.
    @inline(__always)
    static func symbol(_ c: UInt8) -> UInt32? {
        switch c {
        case 65...90: return UInt32(c - 65)
        case 97...122: return UInt32(c - 71)
        case 48...57: return UInt32(c + 4)
        case 45: return 62  // -
        case 95: return 63  // _
        default: return nil
        }
    }

    /// The decoded bytes, or nil when `text` is not canonical unpadded base64url.
    public static func decode<S: Collection>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        let n = text.count
        if n % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(n * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            guard let v = symbol(c) else { return nil }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        // 2 or 4 bits left over must be zero (canonical form).
        guard acc == 0 else { return nil }
        return out
    }

    /// `decode` over a string's UTF-8 bytes.
    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }

    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The unpadded base64url text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], alphabet[Int(v & 63)]]
            i += 3
        }
        if bytes.count - i == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)]]
        } else if bytes.count - i == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
