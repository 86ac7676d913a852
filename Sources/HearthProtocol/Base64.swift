/// Standard base64 (RFC 4648 §4, with `=` padding) for `$bytes` values. Decoding is strict: the length is a
/// multiple of 4, padding only at the end, no whitespace, and unused bits of the last symbol are zero, so
/// every accepted string is the canonical encoding of its bytes.
enum Base64 {
    static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Appends the encoding of `input` to `out`.
    static func encode(_ input: [UInt8], into out: ByteStorage) {
        let a = alphabet.utf8Start
        let n = input.count
        out.reserve((n + 2) / 3 * 4)
        var i = 0
        while i + 3 <= n {
            let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.appendReserved(a[Int(v >> 18)])
            out.appendReserved(a[Int(v >> 12 & 63)])
            out.appendReserved(a[Int(v >> 6 & 63)])
            out.appendReserved(a[Int(v & 63)])
            i += 3
        }
        if n - i == 1 {
            let v = UInt32(input[i]) << 16
            out.appendReserved(a[Int(v >> 18)])
            out.appendReserved(a[Int(v >> 12 & 63)])
            out.appendReserved(61)
            out.appendReserved(61)
        } else if n - i == 2 {
            let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.appendReserved(a[Int(v >> 18)])
            out.appendReserved(a[Int(v >> 12 & 63)])
            out.appendReserved(a[Int(v >> 6 & 63)])
            out.appendReserved(61)
        }
    }

    /// The value of one symbol, or nil.
    @inline(__always)
    static func symbol(_ c: UInt8) -> UInt32? {
        switch c {
        case 65...90: return UInt32(c - 65)
        case 97...122: return UInt32(c - 71)
        case 48...57: return UInt32(c + 4)
        case 43: return 62
        case 47: return 63
        default: return nil
        }
    }

    /// The decoded bytes, or nil when `s` is not canonical padded base64.
    static func decode(_ s: UnsafeRawBufferPointer) -> [UInt8]? {
        let n = s.count
        guard n % 4 == 0 else { return nil }
        if n == 0 { return [] }
        var pad = 0
        if s[n - 1] == 61 { pad = s[n - 2] == 61 ? 2 : 1 }
        var out: [UInt8] = []
        out.reserveCapacity(n / 4 * 3 - pad)
        var i = 0
        while i < n {
            let last = i + 4 == n
            guard let a = symbol(s[i]), let b = symbol(s[i + 1]) else { return nil }
            if last && pad == 2 {
                guard b & 15 == 0 else { return nil }
                out.append(UInt8(a << 2 | b >> 4))
                return out
            }
            guard let c = symbol(s[i + 2]) else { return nil }
            if last && pad == 1 {
                guard c & 3 == 0 else { return nil }
                let v = a << 18 | b << 12 | c << 6
                out.append(UInt8(truncatingIfNeeded: v >> 16))
                out.append(UInt8(truncatingIfNeeded: v >> 8))
                return out
            }
            guard let d = symbol(s[i + 3]) else { return nil }
            let v = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(truncatingIfNeeded: v >> 16))
            out.append(UInt8(truncatingIfNeeded: v >> 8))
            out.append(UInt8(truncatingIfNeeded: v))
            i += 4
        }
        return out
    }
}
