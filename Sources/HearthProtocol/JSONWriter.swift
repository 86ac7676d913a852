import CSimdJSON
import HearthModel

/// An append-only JSON writer into a reusable byte buffer. Commas are automatic: after `beginObject`,
/// alternate `key(_:)` and one value; after `beginArray`, write values. The writer does not check that calls
/// nest correctly; it writes exactly what it is told. Copies of a writer are independent (copy-on-write).
///
/// Strings are escaped (`"` `\` and control characters; other UTF-8 is left as is). Doubles are written in
/// the shortest form that reads back to the same value, always as a double (`3.0`, `1e+300`); non-finite
/// doubles are written as the typed form `{"$double":"NaN"}` (or `"Infinity"`, `"-Infinity"`).
public struct JSONWriter {
    var storage: ByteStorage
    var needsComma = false
    private let initialCapacity: Int

    /// Largest buffer `reset()` keeps; a bigger one (after a huge document) is released.
    public static let retainedCapacity = 1 << 20

    public init(capacity: Int = 1024) {
        storage = ByteStorage(capacity: capacity)
        initialCapacity = capacity
    }

    /// A copy of the bytes written so far (use `withBytes` to avoid the copy).
    public var bytes: [UInt8] {
        [UInt8](UnsafeBufferPointer(start: storage.base, count: storage.count))
    }

    public var count: Int { storage.count }

    /// Bytes the buffer holds without growing.
    public var capacity: Int { storage.capacity }

    /// Bytes that can still be written without growing the buffer.
    public var room: Int { storage.capacity - storage.count }

    /// Makes room for `n` more bytes (so that writing them copies nothing already written).
    public mutating func reserve(_ n: Int) { unique().reserve(n) }

    /// Calls `body` with the bytes written so far, valid only during the call.
    public func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: storage.base, count: storage.count))
    }

    /// Moves what was written out into the returned writer, leaving this one empty with a minimal buffer. Hand a
    /// writer over with it (to a sink, and back): the returned writer holds the only reference to the buffer,
    /// so writing on with it copies nothing, where a plain copy would share the buffer with the writer left
    /// behind and copy all of it on its next write.
    public mutating func take() -> JSONWriter {
        var taken = JSONWriter(capacity: 0)
        swap(&taken, &self)
        return taken
    }

    /// Empties the buffer, keeping its capacity up to `retainedCapacity`. A buffer another writer shares is left
    /// to it (nothing is copied): this writer starts a new one of its initial capacity.
    public mutating func reset() {
        if isKnownUniquelyReferenced(&storage) {
            storage.removeAll(keep: Swift.max(initialCapacity, JSONWriter.retainedCapacity))
        } else {
            storage = ByteStorage(capacity: initialCapacity)
        }
        needsComma = false
    }

    /// The storage, copied first if another writer shares it.
    @inline(__always)
    mutating func unique() -> ByteStorage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    /// The storage after a comma when one is due.
    @inline(__always)
    mutating func separated() -> ByteStorage {
        let s = unique()
        if needsComma { s.append(44) }
        return s
    }

    /// Ends one NDJSON message: appends `\n`; the next value starts without a comma.
    public mutating func newline() {
        unique().append(10)
        needsComma = false
    }

    public mutating func beginObject() {
        separated().append(123)
        needsComma = false
    }

    public mutating func endObject() {
        unique().append(125)
        needsComma = true
    }

    public mutating func beginArray() {
        separated().append(91)
        needsComma = false
    }

    public mutating func endArray() {
        unique().append(93)
        needsComma = true
    }

    /// Writes an object key and the colon after it.
    @_disfavoredOverload
    public mutating func key(_ k: String) {
        let s = separated()
        var k = k
        k.withUTF8 { JSONWriter.appendQuoted(UnsafeRawBufferPointer($0), to: s) }
        s.append(58)
        needsComma = false
    }

    /// Writes an object key written in the source: a literal key (every key but a document's field names) is
    /// copied from where the literal lives, without making a String of it. Escaped as any key.
    public mutating func key(_ k: StaticString) {
        guard k.hasPointerRepresentation else { return key(k.description) }
        key(bytes: UnsafeRawBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
    }

    /// Writes an object key given as UTF-8 bytes.
    public mutating func key(bytes k: UnsafeRawBufferPointer) {
        let s = separated()
        JSONWriter.appendQuoted(k, to: s)
        s.append(58)
        needsComma = false
    }

    public mutating func string(_ v: String) {
        let s = separated()
        var v = v
        v.withUTF8 { JSONWriter.appendQuoted(UnsafeRawBufferPointer($0), to: s) }
        needsComma = true
    }

    /// Writes a timestamp as its quoted 27-byte RFC 3339 form, without an intermediate String.
    public mutating func rfc3339(_ t: Timestamp) {
        let s = separated()
        s.reserve(29)
        s.appendReserved(34)
        t.writeRFC3339(into: s.base + s.count)
        s.count += 27
        s.appendReserved(34)
        needsComma = true
    }

    /// Writes a path as its quoted slash-separated form, segment by segment (no joined String).
    public mutating func path(_ p: ResourcePath) {
        let s = separated()
        s.append(34)
        for (i, segment) in p.segments.enumerated() {
            if i > 0 { s.append(47) }
            var segment = segment
            segment.withUTF8 { JSONWriter.appendEscaped(UnsafeRawBufferPointer($0), to: s) }
        }
        s.append(34)
        needsComma = true
    }

    /// Writes a string given as UTF-8 bytes (not validated).
    public mutating func string(bytes v: UnsafeRawBufferPointer) {
        JSONWriter.appendQuoted(v, to: separated())
        needsComma = true
    }

    public mutating func bool(_ b: Bool) {
        separated().append(b ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        separated().append("null")
        needsComma = true
    }

    public mutating func int(_ v: Int64) {
        JSONWriter.appendDigits(magnitude: v.magnitude, negative: v < 0, to: separated())
        needsComma = true
    }

    /// Writes an unsigned integer (sequence numbers and counters; values above `Int64.max` read back as doubles).
    public mutating func uint(_ v: UInt64) {
        JSONWriter.appendDigits(magnitude: v, negative: false, to: separated())
        needsComma = true
    }

    /// Writes a double; non-finite values become `{"$double":"NaN"|"Infinity"|"-Infinity"}`.
    public mutating func double(_ v: Double) {
        let s = separated()
        needsComma = true
        guard v.isFinite else {
            s.append(v.isNaN ? #"{"$double":"NaN"}"# : (v < 0 ? #"{"$double":"-Infinity"}"# : #"{"$double":"Infinity"}"#))
            return
        }
        s.reserve(32)
        let n = hearth_format_double(v, UnsafeMutableRawPointer(s.base + s.count).assumingMemoryBound(to: CChar.self))
        s.count += n
    }

    /// Splices one complete, already-encoded JSON value.
    public mutating func raw(_ json: UnsafeRawBufferPointer) {
        let s = separated()
        if let p = json.baseAddress { s.append(p, count: json.count) }
        needsComma = true
    }

    /// Splices one complete, already-encoded JSON value.
    public mutating func raw(_ json: [UInt8]) {
        json.withUnsafeBytes { raw($0) }
    }

    /// Appends bytes with no separator logic (for callers building framing by hand).
    public mutating func appendRaw(_ b: UnsafeRawBufferPointer) {
        let s = unique()
        if let p = b.baseAddress { s.append(p, count: b.count) }
    }

    /// Appends the decimal digits of `magnitude`, after a `-` when `negative`.
    @inline(__always)
    static func appendDigits(magnitude: UInt64, negative: Bool, to s: ByteStorage) {
        if magnitude < 10 && !negative {
            s.append(48 &+ UInt8(truncatingIfNeeded: magnitude))
            return
        }
        var digits = 1
        var m = magnitude
        while m >= 10 {
            m /= 10
            digits += 1
        }
        let total = digits + (negative ? 1 : 0)
        s.reserve(total)
        let p = s.base + s.count
        if negative { p[0] = 45 }
        var i = total - 1
        var u = magnitude
        repeat {
            p[i] = 48 &+ UInt8(truncatingIfNeeded: u % 10)
            u /= 10
            i -= 1
        } while u != 0
        s.count += total
    }

    /// Appends `"` + escaped bytes + `"`.
    static func appendQuoted(_ v: UnsafeRawBufferPointer, to s: ByteStorage) {
        s.reserve(v.count + 2)
        s.appendReserved(34)
        appendEscaped(v, to: s)
        s.append(34)
    }

    /// Appends the escaped form of `v` without quotes, copying runs that need no escaping in one go. Runs are
    /// found eight bytes at a time (`needsEscape`), then byte by byte within a word that holds one.
    static func appendEscaped(_ v: UnsafeRawBufferPointer, to s: ByteStorage) {
        guard let base = v.baseAddress else { return }
        var runStart = 0
        var i = 0
        let n = v.count
        while i < n {
            if i + 8 <= n && !needsEscape(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) {
                i += 8
                continue
            }
            let c = v[i]
            if c >= 0x20 && c != 34 && c != 92 {
                i += 1
                continue
            }
            s.append(base + runStart, count: i - runStart)
            appendEscape(c, to: s)
            i += 1
            runStart = i
        }
        s.append(base + runStart, count: n - runStart)
    }

    /// True when one of the eight bytes of `w` is a control character (below 0x20), `"` or `\\`: the bit tricks
    /// of "Bit Twiddling Hacks" (a zero byte of `x` sets its high bit in `(x - 0x01..) & ~x & 0x80..`; a byte
    /// below 0x20 likewise in `(w - 0x20..) & ~w & 0x80..`). A false positive is impossible and a borrow only
    /// flags bytes above a true one, so a word it clears holds none.
    @inline(__always)
    static func needsEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = w ^ (0x22 &* ones), backslash = w ^ (0x5C &* ones)
        let below = (w &- 0x20 &* ones) & ~w
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        return (below | zeroQuote | zeroBackslash) & highs != 0
    }

    private static func appendEscape(_ c: UInt8, to s: ByteStorage) {
        switch c {
        case 34: s.append(#"\""#)
        case 92: s.append(#"\\"#)
        case 10: s.append(#"\n"#)
        case 13: s.append(#"\r"#)
        case 9: s.append(#"\t"#)
        case 8: s.append(#"\b"#)
        case 12: s.append(#"\f"#)
        default:
            let hex: StaticString = "0123456789abcdef"
            let h = hex.utf8Start
            s.append(#"\u00"#)
            s.append(h[Int(c >> 4)])
            s.append(h[Int(c & 15)])
        }
    }
}
