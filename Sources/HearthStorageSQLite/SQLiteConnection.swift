import CSQLite
import HearthModel

/// One `sqlite3*` connection, used by one thread at a time (opened with SQLITE_OPEN_NOMUTEX: the store's
/// per-connection lock provides the exclusion SQLite's own mutex would). It owns the statements it prepares and
/// finalizes them when it closes. `package` (not internal) so the storage tests can build unusual databases
/// without `@testable`, which release test builds lack.
package final class SQLiteConnection {
    let db: OpaquePointer
    /// "reader" or "writer", for error messages.
    let role: String
    private var statements: [OpaquePointer] = []
    private var isOpen = true

    /// Opens `path`; creates the file only when `create`. Extended result codes are on, a lock held by
    /// another connection is waited for up to `SQLiteSchema.busyTimeoutMillis`, and the SQL function
    /// `hearth_checksum` (`RowChecksum`) is registered.
    package init(path: String, role: String, create: Bool) throws(HearthError) {
        _ = Self.configured
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let error = SQLiteFailure.error(rc, handle, "opening \(path) (\(role) connection)")
            sqlite3_close_v2(handle)
            throw error
        }
        db = handle
        self.role = role
        sqlite3_busy_timeout(handle, SQLiteSchema.busyTimeoutMillis)
        // The migration to schema version 4 and `hearth check` compute row checksums in SQL.
        try RowChecksum.register(on: handle)
    }

    deinit { close() }

    /// SQLite's process-wide settings, made once before the first connection opens (and so before SQLite
    /// initializes: every connection opens here, and nothing calls SQLite before one does): no memory
    /// statistics, so allocations take no global mutex.
    private static let configured: Void = {
        let rc = hearth_sqlite_disable_memstatus()
        assert(rc == SQLITE_OK, "SQLite was initialized before its configuration (\(rc))")
    }()

    /// Prepares `sql` once for repeated use (SQLITE_PREPARE_PERSISTENT: kept out of SQLite's lookaside pool).
    func prepare(_ sql: String, name: String) throws(HearthError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw SQLiteFailure.error(rc == SQLITE_OK ? SQLITE_MISUSE : rc, db, "preparing \(name) on the \(role) connection")
        }
        statements.append(stmt)
        return SQLiteStatement(handle: stmt, db: db, name: "\(name) (\(role))")
    }

    /// Prepares `sql` for one use: `body` runs it, and it is finalized right after (for rare reads that must
    /// not accumulate statements on a long-lived connection).
    func withStatement<R>(_ sql: String, name: String, _ body: (SQLiteStatement) throws(HearthError) -> R) throws(HearthError) -> R {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw SQLiteFailure.error(rc == SQLITE_OK ? SQLITE_MISUSE : rc, db, "preparing \(name) on the \(role) connection")
        }
        defer { sqlite3_finalize(stmt) }
        return try body(SQLiteStatement(handle: stmt, db: db, name: "\(name) (\(role))"))
    }

    /// Runs one or more statements that return no rows we need (schema, pragmas that set).
    package func exec(_ sql: String, _ what: String) throws(HearthError) {
        try SQLiteFailure.check(sqlite3_exec(db, sql, nil, nil, nil), db, "\(what) on the \(role) connection")
    }

    /// The first column of the first row of a one-off query (pragmas that report a value), as text; nil when it
    /// returns no row. Not for hot paths: it prepares every time.
    func queryText(_ sql: String) throws(HearthError) -> String? {
        var stmt: OpaquePointer?
        try SQLiteFailure.check(sqlite3_prepare_v2(db, sql, -1, &stmt, nil), db, "preparing \"\(sql)\" on the \(role) connection")
        defer { sqlite3_finalize(stmt) }
        let s = SQLiteStatement(handle: stmt!, db: db, name: "\"\(sql)\"")
        return try s.step() ? s.text(0) : nil
    }

    /// `queryText` read as an integer (0 when absent or not a number).
    package func queryInt(_ sql: String) throws(HearthError) -> Int64 {
        Int64(try queryText(sql) ?? "") ?? 0
    }

    /// Column `column` of every row of a one-off query, as text (NULL reads as ""). For tests and diagnostics
    /// (`EXPLAIN QUERY PLAN`, `sqlite_schema`); it prepares every time.
    package func queryColumn(_ sql: String, column: Int32 = 0) throws(HearthError) -> [String] {
        var stmt: OpaquePointer?
        try SQLiteFailure.check(sqlite3_prepare_v2(db, sql, -1, &stmt, nil), db, "preparing \"\(sql)\" on the \(role) connection")
        defer { sqlite3_finalize(stmt) }
        let s = SQLiteStatement(handle: stmt!, db: db, name: "\"\(sql)\"")
        var values: [String] = []
        while try s.step() { values.append(s.text(column)) }
        return values
    }

    /// True when SQLite opened the main database read-only (a file it may not write, opened READWRITE).
    var isReadOnly: Bool { sqlite3_db_readonly(db, "main") == 1 }

    /// True inside an explicit transaction (after BEGIN, before COMMIT/ROLLBACK or an automatic rollback).
    var inTransaction: Bool { sqlite3_get_autocommit(db) == 0 }

    /// fsyncs the WAL, then the database file, through SQLite's own file handles (a descriptor of our own on
    /// the database file would drop SQLite's POSIX locks when closed): afterwards every transaction this
    /// connection committed so far survives a power loss, whether its pages are still in the WAL or already
    /// copied into the database file (a WAL is only started over once everything in it is copied and the
    /// database file synced). For a writer running with `synchronous = NORMAL`, whose commits do not sync.
    func syncFiles(wal: Bool = true, database: Bool = true) throws(HearthError) {
        for (op, what, wanted) in [(SQLITE_FCNTL_JOURNAL_POINTER, "the WAL", wal), (SQLITE_FCNTL_FILE_POINTER, "the database file", database)] where wanted {
            var file: UnsafeMutablePointer<sqlite3_file>?
            let rc = sqlite3_file_control(db, "main", op, &file)
            try SQLiteFailure.check(rc, db, "finding \(what) to sync")
            // No WAL yet (nothing was ever written through it): nothing to sync.
            guard let file, let methods = file.pointee.pMethods, let sync = methods.pointee.xSync else { continue }
            try SQLiteFailure.check(sync(file, SQLITE_SYNC_NORMAL), db, "syncing \(what)")
        }
    }

    /// Closes the connection without the checkpoint `close()` makes: the database file and its WAL stay as they
    /// are (for a store refused at open, whose files are left as they were found).
    func closeLeavingFiles() {
        guard isOpen else { return }
        _ = hearth_sqlite_keep_wal_on_close(db)
        close()
    }

    /// Finalizes every statement and closes the connection. Idempotent. Closing the last connection to the
    /// database checkpoints the WAL into hearth.db and removes the -wal and -shm files.
    package func close() {
        guard isOpen else { return }
        isOpen = false
        for stmt in statements { sqlite3_finalize(stmt) }
        statements = []
        sqlite3_close_v2(db)
    }
}
