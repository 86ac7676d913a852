#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite
import HearthModel
import HearthStorage

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
    /// A full disk (SQLITE_FULL, or an I/O error whose system error is ENOSPC) maps to RESOURCE_EXHAUSTED through
    /// `HearthError.diskFull`, so the server can tell it from other failures. A damaged database file
    /// (SQLITE_CORRUPT: SQLite found a malformed page) maps to DATA_LOSS. Other transient or environmental
    /// failures (busy or locked database, I/O error, cannot open, read-only file, out of memory, interrupted) map
    /// to UNAVAILABLE: the store may work again later. Everything else (not a database, misuse, constraint or
    /// schema trouble) maps to INTERNAL. When the operating system reported an error (a failed open, write or
    /// fsync), its text follows SQLite's: "unable to open database file: Is a directory".
    static func error(_ rc: Int32, _ db: OpaquePointer?, _ operation: String) -> HearthError {
        let primary = rc & 0xFF
        // sqlite3_errmsg describes the connection's most recent failure, which is this one when `rc` came from
        // it; sqlite3_errstr describes the code alone (used when there is no connection).
        var detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        let systemErrno = db.map { sqlite3_system_errno($0) } ?? 0
        let environmental = [SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_FULL, SQLITE_READONLY, SQLITE_PERM].contains(primary)
        if environmental && systemErrno != 0 { detail += ": " + String(cString: strerror(systemErrno)) }
        let text = "\(operation) failed: \(detail) (SQLite result code \(rc))"
        if primary == SQLITE_FULL || (primary == SQLITE_IOERR && systemErrno == ENOSPC) {
            return .diskFull(text)
        }
        let code: ErrorCode
        switch primary {
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_INTERRUPT, SQLITE_IOERR,
             SQLITE_CANTOPEN, SQLITE_PROTOCOL:
            code = .unavailable
        case SQLITE_CORRUPT:
            code = .dataLoss
        default:
            code = .internal
        }
        return HearthError(code, "storage: \(text)")
    }

    /// A row the store wrote but cannot read back.
    static func corrupt(_ what: String) -> HearthError {
        HearthError(.internal, "storage: hearth.db holds an unreadable row: \(what)")
    }
}
