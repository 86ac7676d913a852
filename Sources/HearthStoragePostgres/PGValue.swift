import CLibPQ

/// One statement parameter in PostgreSQL's binary format: its type OID and its bytes (nil: NULL). Arrays
/// (`bytea[]`, `int8[]`) let one statement insert or delete a whole group's rows (`unnest`).
struct PGValue {
    var type: Oid
    var bytes: [UInt8]?

    static let byteaOID: Oid = 17
    static let int8OID: Oid = 20
    static let textOID: Oid = 25
    static let byteaArrayOID: Oid = 1001
    static let int8ArrayOID: Oid = 1016
    static let textArrayOID: Oid = 1009

    static func bytea(_ b: [UInt8]?) -> PGValue { PGValue(type: byteaOID, bytes: b) }
    /// UTF-8 bytes as `bytea` (paths and IDs are stored as bytea).
    static func utf8(_ s: String) -> PGValue { PGValue(type: byteaOID, bytes: Array(s.utf8)) }
    /// A `text` parameter (catalog names).
    static func string(_ s: String) -> PGValue { PGValue(type: textOID, bytes: Array(s.utf8)) }
    static func int8(_ v: Int64?) -> PGValue { PGValue(type: int8OID, bytes: v.map(bigEndian)) }
    static func int8(_ v: UInt64) -> PGValue { int8(Int64(bitPattern: v)) }
    static func int8(_ v: Int) -> PGValue { int8(Int64(v)) }

    /// A one-dimensional `bytea[]` (nil elements are NULL).
    static func byteaArray(_ elements: [[UInt8]?]) -> PGValue {
        PGValue(type: byteaArrayOID, bytes: array(elements, elementType: byteaOID))
    }

    /// A one-dimensional `text[]` (nil elements are NULL).
    static func textArray(_ elements: [String?]) -> PGValue {
        PGValue(type: textArrayOID, bytes: array(elements.map { $0.map { Array($0.utf8) } }, elementType: textOID))
    }

    /// A one-dimensional `int8[]` (nil elements are NULL).
    static func int8Array(_ elements: [Int64?]) -> PGValue {
        PGValue(type: int8ArrayOID, bytes: array(elements.map { $0.map(bigEndian) }, elementType: int8OID))
    }

    private static func bigEndian(_ v: Int64) -> [UInt8] {
        let u = UInt64(bitPattern: v)
        return (0..<8).map { UInt8(truncatingIfNeeded: u >> (56 - 8 * $0)) }
    }

    private static func appendInt32(_ v: Int32, to out: inout [UInt8]) {
        let u = UInt32(bitPattern: v)
        out.append(UInt8(u >> 24)); out.append(UInt8(truncatingIfNeeded: u >> 16))
        out.append(UInt8(truncatingIfNeeded: u >> 8)); out.append(UInt8(truncatingIfNeeded: u))
    }

    /// PostgreSQL's binary array layout (array_send): dimensions, a has-nulls flag, the element type, each
    /// dimension's length and lower bound, then every element as a length (-1: NULL) and its bytes.
    private static func array(_ elements: [[UInt8]?], elementType: Oid) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + ($1?.count ?? 0) })
        appendInt32(elements.isEmpty ? 0 : 1, to: &out)
        appendInt32(elements.contains { $0 == nil } ? 1 : 0, to: &out)
        appendInt32(Int32(bitPattern: elementType), to: &out)
        if !elements.isEmpty {
            appendInt32(Int32(elements.count), to: &out)
            appendInt32(1, to: &out)
        }
        for e in elements {
            if let e {
                appendInt32(Int32(e.count), to: &out)
                out.append(contentsOf: e)
            } else {
                appendInt32(-1, to: &out)
            }
        }
        return out
    }

    /// Calls `body` with the C arrays `PQexecPrepared` takes (every parameter binary; the types were given
    /// when the statement was prepared).
    static func withParameters<R>(_ params: [PGValue],
                                  _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                                           UnsafePointer<Int32>?) -> R) -> R {
        if params.isEmpty { return body(0, nil, nil, nil) }
        // All values in one buffer; pointers into it are made while it is pinned.
        var buffer: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int32] = []
        for p in params {
            offsets.append(buffer.count)
            if let b = p.bytes {
                buffer.append(contentsOf: b)
                lengths.append(Int32(b.count))
            } else {
                lengths.append(0)
            }
        }
        buffer.append(0)   // a non-empty buffer, so that every pointer is valid
        let formats = [Int32](repeating: 1, count: params.count)
        return buffer.withUnsafeBufferPointer { raw in
            let base = UnsafeRawPointer(raw.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = params.indices.map { params[$0].bytes == nil ? nil : base + offsets[$0] }
            return body(Int32(params.count), values, lengths, formats)
        }
    }
}
