import CSQLite
import HearthModel

/// The one funnel from SQLite result codes to `HearthError`: every call into libsqlite3 that can fail reports
/// through here, so messages always name the operation, SQLite's own message and the extended result code.
enum SQLiteFailure {
    /// Throws unless `rc` is one of `accepted` (SQLITE_OK by default).
    @inline(__always)
    static func check(_ rc: Int32, _ db: OpaquePointer?, _ operation: @autoclosure () -> String,
                      accepting accepted: Int32 = SQLITE_OK) throws(HearthError) {
        if rc != accepted { throw error(rc, db, operation()) }
    }

    /// The error for result code `rc` returned by `operation` on connection `db`.
    ///
    /// Transient or environmental failures (busy or locked database, I/O error, full disk, cannot open,
    /// read-only file, out of memory, interrupted) map to UNAVAILABLE: the store may work again later. A damaged
    /// database file (SQLITE_CORRUPT: SQLite found a malformed page) maps to DATA_LOSS. Everything else (not a
    /// database, misuse, constraint or schema trouble) maps to INTERNAL.
    static func error(_ rc: Int32, _ db: OpaquePointer?, _ operation: String) -> HearthError {
        let primary = rc & 0xFF
        let code: ErrorCode
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_INTERRUPT, SQLITE_IOERR,
             SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL:
            code = .unavailable
        case SQLITE_CORRUPT:
            code = .dataLoss
        default:
            code = .internal
        }
        // sqlite3_errmsg describes the connection's most recent failure, which is this one when `rc` came from
        // it; sqlite3_errstr describes the code alone (used when there is no connection).
        let detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        return HearthError(code, "storage: \(operation) failed: \(detail) (SQLite result code \(rc))")
    }

    /// A row the store wrote but cannot read back.
    static func corrupt(_ what: String) -> HearthError {
        HearthError(.internal, "storage: hearth.db holds an unreadable row: \(what)")
    }
}
