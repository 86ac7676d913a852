import CSQLite
import HearthModel

/// A prepared statement owned by one `SQLiteConnection`, prepared once at open and reused for the life of the
/// connection (the connection finalizes it at close).
///
/// Use pattern: bind every parameter, `step` until it returns false, then `reset` (always, also on error,
/// usually by `defer`). `reset` also clears the bindings, so a blob bound with `bindStatic` never outlives
/// the buffer it points into as long as the bind, the steps and the reset all happen inside the closure that
/// lends the buffer. Resetting promptly matters for reads too: an unreset SELECT keeps its read transaction
/// (and WAL snapshot) open. `runKeepingBindings` leaves the bindings in place for the next run: never use
/// it on a statement with a `bindStatic` parameter, whose buffer would outlive its loan.
struct SQLiteStatement {
    let handle: OpaquePointer
    let db: OpaquePointer
    /// Names the statement in error messages.
    let name: String

    // MARK: Binding (parameters are 1-based)

    func bind(_ index: Int32, _ value: Int64) throws(HearthError) {
        try SQLiteFailure.check(sqlite3_bind_int64(handle, index, value), db, "binding \(name)")
    }

    func bind(_ index: Int32, _ value: UInt64) throws(HearthError) {
        try bind(index, Int64(bitPattern: value))
    }

    func bindNull(_ index: Int32) throws(HearthError) {
        try SQLiteFailure.check(sqlite3_bind_null(handle, index), db, "binding \(name)")
    }

    /// Binds UTF-8 text; SQLite copies it (IDs and paths are short), so the string need not outlive the call.
    /// Embedded NUL bytes are kept: the length is explicit.
    func bind(_ index: Int32, _ text: String) throws(HearthError) {
        var text = text
        let rc = text.withUTF8 { utf8 -> Int32 in
            guard let base = utf8.baseAddress, utf8.count > 0 else {
                return sqlite3_bind_text(handle, index, "", 0, hearth_sqlite_transient())
            }
            return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_bind_text(handle, index, $0, Int32(utf8.count), hearth_sqlite_transient())
            }
        }
        try SQLiteFailure.check(rc, db, "binding \(name)")
    }

    /// Binds a blob without copying it (SQLITE_STATIC): `bytes` must stay valid until `reset`. An empty
    /// buffer binds a zero-length blob, never NULL.
    func bindStatic(_ index: Int32, _ bytes: UnsafeRawBufferPointer) throws(HearthError) {
        let rc: Int32
        if let base = bytes.baseAddress, bytes.count > 0 {
            rc = sqlite3_bind_blob(handle, index, base, Int32(bytes.count), nil)
        } else {
            rc = sqlite3_bind_zeroblob(handle, index, 0)
        }
        try SQLiteFailure.check(rc, db, "binding \(name)")
    }

    /// Binds a small blob (an index key), copied by SQLite (SQLITE_TRANSIENT), so `bytes` need not outlive the
    /// call. An empty array binds a zero-length blob, never NULL.
    func bind(_ index: Int32, blob bytes: [UInt8]) throws(HearthError) {
        let rc = bytes.withUnsafeBytes { raw in bindCopying(index, raw) }
        try SQLiteFailure.check(rc, db, "binding \(name)")
    }

    /// `bind(_:blob:)` for bytes in someone else's buffer: SQLite copies them.
    func bind(_ index: Int32, blobCopying raw: UnsafeRawBufferPointer) throws(HearthError) {
        try SQLiteFailure.check(bindCopying(index, raw), db, "binding \(name)")
    }

    private func bindCopying(_ index: Int32, _ raw: UnsafeRawBufferPointer) -> Int32 {
        guard let base = raw.baseAddress, raw.count > 0 else { return sqlite3_bind_zeroblob(handle, index, 0) }
        return sqlite3_bind_blob(handle, index, base, Int32(raw.count), hearth_sqlite_transient())
    }

    // MARK: Running

    /// Advances one row: true when a row is ready to read, false when the statement is done.
    func step() throws(HearthError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let rc: throw SQLiteFailure.error(rc, db, name)
        }
    }

    /// Runs a statement that returns no rows, then resets it.
    func run() throws(HearthError) {
        defer { reset() }
        _ = try step()
    }

    /// `run` for a statement whose parameters are bound by copy: the bindings are left in place, for the next
    /// run to replace those that change and reuse the rest (clearing them costs as much as binding them again).
    func runKeepingBindings() throws(HearthError) {
        defer { sqlite3_reset(handle) }
        _ = try step()
    }

    /// Makes the statement ready to run again and drops its bindings. Errors were already reported by `step`.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Reading the current row (columns are 0-based)

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func uint64(_ column: Int32) -> UInt64 { UInt64(bitPattern: sqlite3_column_int64(handle, column)) }

    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(handle, column) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// A blob column in SQLite's memory, valid until the next `step`, `reset` or finalization.
    func rawBlob(_ column: Int32) -> UnsafeRawBufferPointer {
        let p = sqlite3_column_blob(handle, column)
        let n = Int(sqlite3_column_bytes(handle, column))
        guard let p, n > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: n)
    }

    /// A text column's UTF-8 in SQLite's memory, valid until the next `step`, `reset` or finalization.
    func rawText(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let p = sqlite3_column_text(handle, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func bytes(_ column: Int32) -> [UInt8] {
        let p = sqlite3_column_blob(handle, column)
        let n = Int(sqlite3_column_bytes(handle, column))
        guard let p, n > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: n) { buffer, count in
            buffer.baseAddress!.initialize(from: p.assumingMemoryBound(to: UInt8.self), count: n)
            count = n
        }
    }
}
