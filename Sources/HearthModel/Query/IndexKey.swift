/// An order-preserving, prefix-free byte encoding of values for index keys: for all values a and b,
/// `memcmp` order of `encode(a)` and `encode(b)` equals `ValueOrder.compare(a, b)` (ascending), or its
/// reverse when both are encoded `descending` (every byte inverted). Values equal under `ValueOrder`
/// (42 and 42.0, -0.0 and 0.0, any two NaNs) encode identically. Because no encoding is a prefix of
/// another, concatenated encodings (a composite index key: one value per ordered field, then the document
/// key) sort as tuples.
///
/// Layout (ascending): a type tag byte in type order, then
/// - null: nothing; bool: 0x00 or 0x01;
/// - number: the largest double ≤ the number in 8 order-preserving bytes (NaN as eight 0x00, below -inf;
///   -0.0 as 0.0), then 2 big-endian bytes: how far an Int64 lies above that double (0 for doubles and
///   exactly representable integers; < 1024 for any Int64);
/// - timestamp: microseconds, 8 bytes, sign bit flipped;
/// - string, bytes: the bytes with 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01;
/// - reference: each segment escaped then 0x00 0x02, then 0x00 0x01 (so a shorter path sorts first);
/// - geopoint: latitude and longitude as order-preserving doubles;
/// - array: each element's encoding, then the end marker 0x05 (below every type tag);
/// - map: per field in key order the field marker 0x06, the key escaped and terminated, the value; then 0x05.
public enum IndexKey {
    // Type tags, in Firestore's type order, and the container markers below them.
    static let end: UInt8 = 0x05
    static let fieldMarker: UInt8 = 0x06

    /// The tag byte that starts every ascending encoding of a value of type `t`.
    public static func tag(_ t: Value.TypeOrder) -> UInt8 {
        switch t {
        case .null: return 0x10
        case .bool: return 0x20
        case .number: return 0x30
        case .timestamp: return 0x40
        case .string: return 0x50
        case .bytes: return 0x60
        case .reference: return 0x70
        case .geoPoint: return 0x80
        case .array: return 0x90
        case .map: return 0xA0
        }
    }

    /// Appends the encoding of `v` to `out`; `descending` inverts every byte it appends.
    public static func encode(_ v: Value, descending: Bool = false, into out: inout [UInt8]) {
        let start = out.count
        append(v, into: &out)
        if descending { invert(&out, from: start) }
    }

    /// The encoding of `v` as a new array.
    public static func key(_ v: Value, descending: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        encode(v, descending: descending, into: &out)
        return out
    }

    /// Appends the encoding of a document key: identical to `encode(.reference(path))`, so a cursor or a
    /// filter operand on `__name__` (held as a reference) encodes the same way.
    public static func encodeDocumentKey(_ path: DocumentPath, descending: Bool = false, into out: inout [UInt8]) {
        encode(.reference(path), descending: descending, into: &out)
    }

    /// Appends the encoding of the string naming `path`'s collection: identical to
    /// `encode(.string(path.collectionDescription))`, written from the segments without building the string.
    public static func encodeCollectionName(of path: DocumentPath, into out: inout [UInt8]) {
        let segments = path.path.segments
        out.append(tag(.string))
        for i in 0..<(segments.count - 1) {
            if i > 0 { out.append(0x2F) }   // "/"
            appendEscapedBody(segments[i].utf8, into: &out)
        }
        out.append(0x00)
        out.append(0x01)
    }

    /// The first bytes shared by every encoding of a value of type `t` in the given direction: a range scan
    /// over one type (Firestore's type-bracketed comparisons) is `[typePrefix, prefixSuccessor(typePrefix))`.
    public static func typePrefix(_ t: Value.TypeOrder, descending: Bool = false) -> [UInt8] {
        [descending ? ~tag(t) : tag(t)]
    }

    /// The smallest byte string greater than every string that starts with `prefix` (drop trailing 0xFF
    /// bytes, add one to the last byte), or nil when there is none (empty or all 0xFF: scan to the end).
    /// Use it as the exclusive upper bound for "keys starting with prefix", or as the inclusive lower bound
    /// that skips them (e.g. `startAfter(v)` when keys continue past `v`'s encoding).
    public static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        var p = prefix
        while let last = p.last {
            if last != 0xFF {
                p[p.count - 1] = last + 1
                return p
            }
            p.removeLast()
        }
        return nil
    }

    /// The smallest byte string greater than `key` itself (`key` + 0x00): the exclusive-to-inclusive bound
    /// conversion for a complete key.
    public static func immediateSuccessor(_ key: [UInt8]) -> [UInt8] { key + [0x00] }

    // MARK: Encoding

    static func append(_ v: Value, into out: inout [UInt8]) {
        out.append(tag(v.typeOrder))
        switch v {
        case .null:
            break
        case .bool(let b):
            out.append(b ? 1 : 0)
        case .int(let i):
            let d = floorDouble(i)
            appendDouble(d, into: &out)
            appendRemainder(UInt16(i - Int64(d)), into: &out)
        case .double(let d):
            appendDouble(d, into: &out)
            appendRemainder(0, into: &out)
        case .timestamp(let t):
            appendBigEndian(UInt64(bitPattern: t.micros) ^ (1 << 63), into: &out)
        case .string(let s):
            appendEscaped(s.utf8, terminator: 0x01, into: &out)
        case .bytes(let b):
            appendEscaped(b, terminator: 0x01, into: &out)
        case .reference(let p):
            appendPath(p.path, into: &out)
        case .geoPoint(let g):
            appendDouble(g.latitude, into: &out)
            appendDouble(g.longitude, into: &out)
        case .array(let elements):
            for e in elements { append(e, into: &out) }
            out.append(end)
        case .map(let m):
            for f in m.fields {
                out.append(fieldMarker)
                appendEscaped(f.key.utf8, terminator: 0x01, into: &out)
                append(f.value, into: &out)
            }
            out.append(end)
        }
    }

    /// The largest double ≤ `i` (exact comparison, no rounding up).
    static func floorDouble(_ i: Int64) -> Double {
        let d = Double(i)   // nearest; may round above i
        return ValueOrder.compareIntDouble(i, d) < 0 ? d.nextDown : d
    }

    /// Order-preserving bits of a double: NaN lowest (all zeros), -0.0 as 0.0, negatives inverted,
    /// non-negatives with the sign bit set.
    static func orderedBits(_ d: Double) -> UInt64 {
        if d.isNaN { return 0 }
        let bits = (d == 0 ? 0.0 : d).bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func appendDouble(_ d: Double, into out: inout [UInt8]) {
        appendBigEndian(orderedBits(d), into: &out)
    }

    static func appendRemainder(_ r: UInt16, into out: inout [UInt8]) {
        out.append(UInt8(r >> 8))
        out.append(UInt8(r & 0xFF))
    }

    static func appendBigEndian(_ x: UInt64, into out: inout [UInt8]) {
        var shift = 56
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: x >> UInt64(shift)))
            shift -= 8
        }
    }

    /// Bytes with 0x00 → 0x00 0xFF, then 0x00 `terminator` (0x01 ends a string, 0x02 a path segment).
    static func appendEscaped<S: Sequence>(_ bytes: S, terminator: UInt8, into out: inout [UInt8]) where S.Element == UInt8 {
        appendEscapedBody(bytes, into: &out)
        out.append(0x00)
        out.append(terminator)
    }

    /// Bytes with 0x00 → 0x00 0xFF, without the terminator.
    static func appendEscapedBody<S: Sequence>(_ bytes: S, into out: inout [UInt8]) where S.Element == UInt8 {
        // In bulk from contiguous storage (every native String and array): copy the runs between zero bytes.
        let done: Void? = bytes.withContiguousStorageIfAvailable { buf in
            // Grow geometrically: reserving exactly what each segment of a path needs would reallocate per segment.
            let needed = out.count + buf.count + 2
            if out.capacity < needed { out.reserveCapacity(max(needed, 2 * out.capacity)) }
            var start = 0
            while let z = buf[start...].firstIndex(of: 0) {
                out.append(contentsOf: buf[start...z])
                out.append(0xFF)
                start = z + 1
            }
            out.append(contentsOf: buf[start...])
        }
        if done == nil {
            for b in bytes {
                out.append(b)
                if b == 0 { out.append(0xFF) }
            }
        }
    }

    static func appendPath(_ p: ResourcePath, into out: inout [UInt8]) {
        for s in p.segments { appendEscaped(s.utf8, terminator: 0x02, into: &out) }
        out.append(0x00)
        out.append(0x01)
    }

    static func invert(_ out: inout [UInt8], from start: Int) {
        for i in start..<out.count { out[i] = ~out[i] }
    }
}
