import CSQLite
import CXXHash
import HearthModel
import HearthStorage

/// The checksum every document row, change-log row and the index catalog carry (schema version 4): XXH3-64
/// (xxHash, Debian libxxhash-dev) over the row's values in a fixed serialization, so that a value read back
/// differently from how it was written (a flipped bit on disk, a torn or misdirected write SQLite cannot see)
/// is caught before it is served. docs/storage.md, "Checksums", has the definition:
///
/// each value in column order is hashed with the hash of the values before it as the seed (0 for the first):
/// NULL → `0x00`; integer → `0x01` + 8 bytes little-endian; text or blob → `0x02` + length (4 bytes
/// little-endian), then the bytes, as a value of their own; real → `0x03` + the 8 bytes of its IEEE bits.
/// The 64 bits are stored as a signed integer (their bit pattern).
///
/// XXH3 rather than zlib's CRC-32: on a ~300-byte document row it costs ~80 ns against ~450 ns (both
/// measured here), which matters because every row read from the file is checked.
///
/// The same definition is the SQL function `hearth_checksum(v1, v2, ...)` (registered on every connection
/// the store opens), which the migration to version 4 uses to checksum existing rows.
struct RowChecksum {
    private var hash: UInt64 = 0

    init() {}

    var value: Int64 { Int64(bitPattern: hash) }

    mutating func null() { header(0x00, 0, count: 0) }

    mutating func int(_ v: Int64) { header(0x01, UInt64(bitPattern: v), count: 8) }

    mutating func int(_ v: UInt64) { int(Int64(bitPattern: v)) }

    mutating func real(_ v: Double) { header(0x03, v.bitPattern, count: 8) }

    mutating func bytes(_ b: UnsafeRawBufferPointer) {
        header(0x02, UInt64(UInt32(truncatingIfNeeded: b.count)), count: 4)
        hash = XXH3_64bits_withSeed(b.baseAddress, b.count, hash)
    }

    mutating func bytes(_ b: [UInt8]) { b.withUnsafeBytes { bytes($0) } }

    mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// The tag byte and the first `count` bytes of `payload`, little-endian, hashed as one value.
    private mutating func header(_ tag: UInt8, _ payload: UInt64, count: Int) {
        var buffer: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &buffer) { raw in
            raw[0] = tag
            var p = payload
            for i in 0..<count {
                raw[1 + i] = UInt8(truncatingIfNeeded: p)
                p >>= 8
            }
            hash = XXH3_64bits_withSeed(raw.baseAddress, 1 + count, hash)
        }
    }

    /// Appends the values of columns `range` of `s`'s current row, by their SQLite types (what
    /// `hearth_checksum` over the same columns computes).
    mutating func columns(_ s: SQLiteStatement, _ range: Range<Int32>) {
        for c in range { value(s.handle, column: c) }
    }

    private mutating func value(_ stmt: OpaquePointer, column c: Int32) {
        switch sqlite3_column_type(stmt, c) {
        case SQLITE_INTEGER: int(sqlite3_column_int64(stmt, c))
        case SQLITE_FLOAT: real(sqlite3_column_double(stmt, c))
        case SQLITE_TEXT, SQLITE_BLOB:
            let p = sqlite3_column_blob(stmt, c)
            let n = Int(sqlite3_column_bytes(stmt, c))
            bytes(UnsafeRawBufferPointer(start: p, count: p == nil ? 0 : n))
        default: null()
        }
    }

    // MARK: The rows

    /// A `documents` row: collection, id, data, create_us, update_us, seq.
    static func document(collection: String, id: String, _ doc: StoredDocument) -> Int64 {
        var c = RowChecksum()
        c.text(collection)
        c.text(id)
        c.bytes(doc.data)
        c.int(doc.createTime.micros)
        c.int(doc.updateTime.micros)
        c.int(doc.seq)
        return c.value
    }

    /// The document in `s`'s current row, whose columns are `data, create_us, update_us, seq, checksum` (as
    /// every statement reading one document selects them), checked against the checksum computed with the
    /// path asked for (the one served): DATA_LOSS naming the document when they differ.
    static func verifiedDocument(_ s: SQLiteStatement, path: DocumentPath, collection: String) throws(HearthError) -> StoredDocument {
        var sum = RowChecksum()
        sum.text(collection)
        sum.text(path.id)
        sum.columns(s, 0..<4)
        guard sum.value == s.int64(4) else { throw StorageDamage.document(path.description, "checksum mismatch") }
        return StoredDocument(path: path, data: s.bytes(0), createTime: Timestamp(micros: s.int64(1)),
                              updateTime: Timestamp(micros: s.int64(2)), seq: s.uint64(3))
    }

    /// A `changes` row: seq, path, then the before and the after image (data, create_us, update_us, seq; all
    /// NULL when the image is absent).
    static func change(seq: UInt64, path: String, before: StoredDocument?, after: StoredDocument?) -> Int64 {
        var c = RowChecksum()
        c.int(seq)
        c.text(path)
        for image in [before, after] {
            if let d = image {
                c.bytes(d.data)
                c.int(d.createTime.micros)
                c.int(d.updateTime.micros)
                c.int(d.seq)
            } else {
                c.null(); c.null(); c.null(); c.null()
            }
        }
        return c.value
    }

    /// The `index_catalog` row: data, seq.
    static func catalog(_ data: [UInt8], seq: UInt64) -> Int64 {
        var c = RowChecksum()
        c.bytes(data)
        c.int(seq)
        return c.value
    }

    // MARK: The SQL function

    /// Registers `hearth_checksum(...)` on `db`: the checksum of its arguments, as above.
    static func register(on db: OpaquePointer) throws(HearthError) {
        let rc = sqlite3_create_function_v2(db, "hearth_checksum", -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
                                            { context, argc, argv in
            var c = RowChecksum()
            for i in 0..<Int(argc) {
                let v = argv![i]
                switch sqlite3_value_type(v) {
                case SQLITE_INTEGER: c.int(sqlite3_value_int64(v))
                case SQLITE_FLOAT: c.real(sqlite3_value_double(v))
                case SQLITE_TEXT, SQLITE_BLOB:
                    // sqlite3_value_blob first, then sqlite3_value_bytes (SQLite's documented order); for text it
                    // is the UTF-8 bytes.
                    let p = sqlite3_value_blob(v)
                    let n = Int(sqlite3_value_bytes(v))
                    c.bytes(UnsafeRawBufferPointer(start: p, count: p == nil ? 0 : n))
                default: c.null()
                }
            }
            sqlite3_result_int64(context, c.value)
        }, nil, nil, nil)
        try SQLiteFailure.check(rc, db, "registering hearth_checksum")
    }
}
