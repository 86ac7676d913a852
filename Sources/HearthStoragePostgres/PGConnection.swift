#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ
import HearthModel
import HearthStorage

/// One libpq connection (`PGconn`), used by one thread at a time (the store's locks give the exclusion). Every
/// statement is sent with binary parameters and asks for binary results (`PGValue`, `PGRow`), so bytes stay
/// bytes and integers cross as 8 big-endian bytes. A connection that breaks (PostgreSQL restarted, the network
/// dropped it) is reset on its next use; the statement that met the break fails with UNAVAILABLE.
final class PGConnection {
    private var conn: OpaquePointer?
    /// "reader", "writer", "snapshot"…, for error messages.
    let role: String
    private let dsn: String
    /// Run after every (re)connect: `SET search_path`, session settings.
    private let setup: String
    /// Connections made so far (1 after the first): what a session held (an advisory lock) is gone when it grows.
    private(set) var sessions = 0

    init(dsn: String, role: String, setup: String) throws(HearthError) {
        self.dsn = dsn
        self.role = role
        self.setup = setup
        try connect()
    }

    deinit { close() }

    func close() {
        if let conn { PQfinish(conn) }
        conn = nil
    }

    /// True while libpq reports the connection usable and outside a failed or open transaction.
    var isIdle: Bool {
        guard let conn, PQstatus(conn) == CONNECTION_OK else { return false }
        return PQtransactionStatus(conn) == PQTRANS_IDLE
    }

    private func connect() throws(HearthError) {
        close()
        let c = PQconnectdb(dsn)
        guard let c, PQstatus(c) == CONNECTION_OK else {
            let detail = c.map { PGFailure.message(of: $0) } ?? "out of memory"
            if let c { PQfinish(c) }
            throw HearthError(.unavailable, "storage: cannot connect to PostgreSQL (\(role) connection): \(detail)")
        }
        conn = c
        sessions += 1
        if !setup.isEmpty {
            do { try exec(setup, "setting up the session") } catch {
                close()
                throw error
            }
        }
    }

    /// Reopens the connection when it broke since its last use (a new session: `sessions` grows).
    func reconnectIfBroken() throws(HearthError) { _ = try live() }

    /// The connection, reconnected first when it broke since its last use.
    private func live() throws(HearthError) -> OpaquePointer {
        if let conn, PQstatus(conn) == CONNECTION_OK { return conn }
        try connect()
        return conn!
    }

    /// Where the connection goes, without its password: `host:port/dbname` (the socket directory for a socket).
    var serverDescription: String {
        guard let conn else { return "(closed)" }
        func text(_ p: UnsafeMutablePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        return "\(text(PQhost(conn))):\(text(PQport(conn)))/\(text(PQdb(conn)))"
    }

    /// Runs `sql` (one or more statements, no parameters) and discards what it returns.
    func exec(_ sql: String, _ what: String) throws(HearthError) {
        let c = try live()
        let result = PQexec(c, sql)
        defer { PQclear(result) }
        try PGFailure.check(result, c, "\(what) (\(role) connection)")
    }

    /// Runs one statement with binary parameters and returns its rows, in binary.
    @discardableResult
    func query(_ sql: String, _ params: [PGValue] = [], _ what: @autoclosure () -> String) throws(HearthError) -> PGRows {
        let c = try live()
        let result = PGValue.withParameters(params) { count, types, values, lengths, formats in
            PQexecParams(c, sql, count, types, values, lengths, formats, 1)
        }
        do {
            try PGFailure.check(result, c, "\(what()) (\(role) connection)")
        } catch {
            PQclear(result)
            throw error
        }
        return PGRows(result!)
    }

    /// Rolls back whatever transaction is open (after a failed statement); a broken connection is left to
    /// be reset on its next use.
    func rollBack() {
        guard let conn, PQstatus(conn) == CONNECTION_OK, PQtransactionStatus(conn) != PQTRANS_IDLE else { return }
        PQclear(PQexec(conn, "ROLLBACK"))
    }

    /// Quotes `name` as an SQL identifier (libpq's own escaping).
    static func quoteIdentifier(_ name: String) -> String {
        // Identifiers are quoted with "…", doubling any " inside: what PQescapeIdentifier produces, without a
        // connection.
        "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }
}

/// Rows of a result, read in binary. Owns the `PGresult`.
final class PGRows {
    let result: OpaquePointer
    let count: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
    }

    deinit { PQclear(result) }

    /// Rows a statement changed (INSERT, UPDATE, DELETE).
    var affected: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    /// A column's bytes, or nil for NULL.
    func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        if isNull(row, column) { return nil }
        let n = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard n > 0, let p = PQgetvalue(result, Int32(row), Int32(column)) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// Calls `body` with a column's bytes in the result's memory (empty for NULL).
    func withBytes<R>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws(HearthError) -> R) throws(HearthError) -> R {
        let n = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard n > 0, let p = PQgetvalue(result, Int32(row), Int32(column)) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// A column as UTF-8 text (bytea or text), "" for NULL.
    func text(_ row: Int, _ column: Int) -> String {
        String(decoding: bytes(row, column) ?? [], as: UTF8.self)
    }

    /// An int8 (or int4) column; 0 for NULL.
    func int64(_ row: Int, _ column: Int) -> Int64 {
        let n = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard !isNull(row, column), let p = PQgetvalue(result, Int32(row), Int32(column)) else { return 0 }
        var v: Int64 = 0
        for i in 0..<n { v = (v << 8) | Int64(UInt8(bitPattern: p[i])) }
        if n == 4 { v = Int64(Int32(truncatingIfNeeded: v)) }
        return v
    }

    func uint64(_ row: Int, _ column: Int) -> UInt64 { UInt64(bitPattern: int64(row, column)) }
}

/// The one funnel from libpq failures to `HearthError`.
enum PGFailure {
    /// libpq's text on one line (it spreads some messages over several: "…failed: Connection refused\n\tIs the
    /// server running…").
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isNewline || $0 == "\t" }).map { String($0).trimmed }.filter { !$0.isEmpty }.joined(separator: " ")
    }

    static func message(of conn: OpaquePointer) -> String { oneLine(String(cString: PQerrorMessage(conn))) }

    /// Throws unless `result` reports success.
    static func check(_ result: OpaquePointer?, _ conn: OpaquePointer, _ operation: String) throws(HearthError) {
        guard let result else {
            throw HearthError(.unavailable, "storage: \(operation) failed: \(message(of: conn))")
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        throw error(result, conn, operation)
    }

    /// The error of a failed result: its SQLSTATE decides the code. Connection trouble, a server shutting down,
    /// lack of resources, serialization failures and deadlocks are UNAVAILABLE (the store may work again);
    /// PostgreSQL's own corruption reports (class XX) are DATA_LOSS; the rest (our SQL, constraints) INTERNAL.
    static func error(_ result: OpaquePointer, _ conn: OpaquePointer, _ operation: String) -> HearthError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        var detail = oneLine(String(cString: PQresultErrorMessage(result)))
        if detail.isEmpty { detail = message(of: conn) }
        let text = "storage: \(operation) failed: \(detail)" + (state.isEmpty ? "" : " (SQLSTATE \(state))")
        if state == "53100" { return .diskFull(text) }
        let code: ErrorCode
        switch state.prefix(2) {
        case "", "08", "57", "53", "58", "40", "55", "25": code = .unavailable
        case "XX": code = .dataLoss
        default: code = .internal
        }
        return HearthError(code, text)
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line breaks.
    fileprivate var trimmed: String {
        var s = Substring(self)
        while let c = s.last, c.isWhitespace { s.removeLast() }
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        return String(s)
    }
}
