import HearthModel

/// Rules for map keys in decoded values, and key-sorted access to an object's members with duplicate detection.
enum MapKeys {
    /// Why `key` cannot be a map key, or nil. Keys are non-empty, at most `maxBytes` long, not of the form
    /// `__...__`, and do not start with `$` (reserved for typed values and sentinels, which must be alone in
    /// their object).
    static func problem(_ key: UnsafeRawBufferPointer, maxBytes: Int = Limits.maxFieldNameBytes) -> String? {
        let n = key.count
        if n == 0 { return "map keys must not be empty" }
        if n > maxBytes {
            return "map key \"\(String(text(key).prefix(32)))...\" is \(n) bytes, above the limit of \(maxBytes) for a field name"
        }
        if key[0] == 36 {
            return "map key \"\(text(key))\" is not allowed: keys starting with '$' name typed values or sentinels, which must be alone in their object"
        }
        if n >= 4 && key[0] == 95 && key[1] == 95 && key[n - 2] == 95 && key[n - 1] == 95 {
            return "map key \"\(text(key))\" is reserved (keys of the form __...__ are not allowed)"
        }
        return nil
    }

    static func problem(_ key: String) -> String? {
        var key = key
        return key.withUTF8 { problem(UnsafeRawBufferPointer($0)) }
    }

    static func text(_ b: UnsafeRawBufferPointer) -> String { String(decoding: b, as: UTF8.self) }

    /// Calls `body` with the members of object `r` sorted by key bytes (in a temporary buffer, no copies of
    /// keys or values), after checking every key with `problem(_:)` and rejecting duplicates. `JSONParser`
    /// already refuses repeated keys at every depth (requests are checked once, there); this check stays
    /// for documents from a lenient parser, because sorted map storage must not hold a key twice.
    static func withSortedMembers<R>(_ r: JSONRef, maxKeyBytes: Int,
                                     _ body: (UnsafeMutableBufferPointer<JSONRef.Member>) throws(DecodeFailure) -> R) throws(DecodeFailure) -> R {
        let n = r.count
        return try withUnsafeTemporaryAllocation(of: JSONRef.Member.self, capacity: n) { (buf) throws(DecodeFailure) -> R in
            var i = 0
            var sorted = true
            for m in r.members {
                if let problem = problem(m.keyBytes, maxBytes: maxKeyBytes) { throw DecodeFailure(problem) }
                if sorted && i > 0 && UTF8Order.compareBytes(buf[i - 1].keyBytes, m.keyBytes) >= 0 { sorted = false }
                buf.baseAddress!.advanced(by: i).initialize(to: m)
                i += 1
            }
            var members = UnsafeMutableBufferPointer(rebasing: buf[0..<i])
            if !sorted {
                members.sort { UTF8Order.compareBytes($0.keyBytes, $1.keyBytes) < 0 }
                var k = 1
                while k < members.count {
                    if UTF8Order.compareBytes(members[k - 1].keyBytes, members[k].keyBytes) == 0 {
                        throw DecodeFailure("duplicate key \"\(text(members[k].keyBytes))\"")
                    }
                    k += 1
                }
            }
            return try body(members)
        }
    }
}
