/// Byte-wise UTF-8 comparison of strings. Swift's `String` `<` and `==` use Unicode canonical equivalence,
/// which Firestore does not: "é" and "e\u{301}" are different keys that sort by their bytes. Every comparison
/// of user strings in Hearth goes through these helpers.
public enum UTF8Order {
    /// -1, 0 or 1 as `a` sorts before, equal to or after `b` by UTF-8 bytes.
    @inlinable
    public static func compare(_ a: String, _ b: String) -> Int {
        // In place: native and small strings are contiguous UTF-8, read without making either string mutable
        // (`withUTF8` on a copy costs a retain and a uniqueness check each).
        let inPlace: Int?? = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                compareBytes(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb))
            }
        }
        if let inPlace, let inPlace { return inPlace }
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in compareBytes(UnsafeRawBufferPointer(pa), UnsafeRawBufferPointer(pb)) }
        }
    }

    /// Paths and field names are compared for equality on every dictionary hit: the lengths first (stored, so
    /// free), then the bytes in place, eight at a time, without copying either string.
    @inlinable
    public static func equal(_ a: String, _ b: String) -> Bool {
        let n = a.utf8.count
        guard n == b.utf8.count else { return false }
        if n == 0 { return true }
        let inPlace: Bool?? = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in
                pa.baseAddress == pb.baseAddress || bytesEqual(UnsafeRawPointer(pa.baseAddress!), UnsafeRawPointer(pb.baseAddress!), n)
            }
        }
        if let inPlace, let inPlace { return inPlace }
        return a.utf8.elementsEqual(b.utf8)
    }

    @inlinable
    static func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Bool {
        var i = 0
        while i + 8 <= n {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        while i < n {
            if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }

    @inlinable
    public static func less(_ a: String, _ b: String) -> Bool { compare(a, b) < 0 }

    @inlinable
    public static func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        if n > 0 {
            let c = memcmpBytes(a, b, n)
            if c != 0 { return c < 0 ? -1 : 1 }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// The first `n` bytes of each compared as `memcmp` does, eight at a time (index keys and paths share long
    /// prefixes): the first word that differs decides, read big-endian so that its first differing byte does.
    @inlinable
    static func memcmpBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ n: Int) -> Int {
        guard n > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return 0 }
        var i = 0
        while i + 8 <= n {
            let x = pa.loadUnaligned(fromByteOffset: i, as: UInt64.self), y = pb.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if x != y { return x.bigEndian < y.bigEndian ? -1 : 1 }
            i += 8
        }
        while i < n {
            let x = a[i], y = b[i]
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        return 0
    }
}
