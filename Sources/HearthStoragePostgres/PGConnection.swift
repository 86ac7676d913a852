#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ
import HearthModel
import HearthStorage

/// One libpq connection (`PGconn`), used by one thread at a time (the store's locks give the exclusion). Every
/// statement is sent with binary parameters and asks for binary results (`PGValue`, `PGRows`), so bytes stay
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
    /// Statements prepared in this session, by their SQL: each is parsed and planned once per session instead
    /// of on every call (a point read spends more planning than executing). The SQL texts are the store's own,
    /// a few dozen at most.
    private var prepared: [String: String] = [:]

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

    /// True when libpq found the connection broken (it is reopened on its next use, unless pinned).
    var isBroken: Bool {
        guard let conn else { return true }
        return PQstatus(conn) != CONNECTION_OK
    }

    /// True while libpq reports the connection usable and outside a failed or open transaction.
    var isIdle: Bool {
        guard let conn, PQstatus(conn) == CONNECTION_OK else { return false }
        return PQtransactionStatus(conn) == PQTRANS_IDLE
    }

    /// Timeouts used unless the connection string sets them: a server that does not answer a connect within
    /// 10 s, or leaves sent data unacknowledged for 30 s (a network cut), fails what waits on it instead of
    /// holding the calling thread for minutes.
    static let defaultSettings: [(String, String)] = [
        ("connect_timeout", "10"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
    ]

    private func connect() throws(HearthError) {
        close()
        // The defaults first, then the connection string expanded (`expand_dbname`): what it sets wins, and
        // PGCONNECT_TIMEOUT keeps its say over the connect timeout.
        let defaults = Self.defaultSettings.filter { $0.0 != "connect_timeout" || getenv("PGCONNECT_TIMEOUT") == nil }
        let settings = defaults + [("dbname", dsn)]
        let c = Self.withCStrings(settings.map(\.0)) { keys in
            Self.withCStrings(settings.map(\.1)) { values in PQconnectdbParams(keys, values, 1) }
        }
        guard let c, PQstatus(c) == CONNECTION_OK else {
            let detail = c.map { PGFailure.message(of: $0) } ?? "out of memory"
            if let c { PQfinish(c) }
            throw HearthError(.unavailable, "storage: cannot connect to PostgreSQL (\(role) connection): \(detail)")
        }
        conn = c
        sessions += 1
        prepared.removeAll()
        if !setup.isEmpty {
            let result = PQexec(c, setup)
            defer { PQclear(result) }
            do { try PGFailure.check(result, c, "setting up the session (\(role) connection)") } catch {
                close()
                throw error
            }
        }
    }

    /// Calls `body` with `strings` as a NULL-terminated array of C strings.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// Reopens the connection when it broke since its last use (a new session: `sessions` grows).
    func reconnectIfBroken() throws(HearthError) { _ = try live() }

    /// While pinned, the connection is never reopened: a transaction is open on its session (a snapshot, a
    /// group being committed), and a new session would silently read or write outside it. A break then fails
    /// every call with UNAVAILABLE until `unpin()`.
    private(set) var pinned = false
    func pin() { pinned = true }
    func unpin() { pinned = false }

    /// The connection, reconnected first when it broke since its last use (unless pinned).
    private func live() throws(HearthError) -> OpaquePointer {
        if !isBroken, let conn { return conn }
        if pinned {
            throw HearthError(.unavailable, "storage: the \(role) connection to PostgreSQL broke inside a transaction; the transaction is lost")
        }
        try connect()
        return conn!
    }

    /// Runs `body`, and once more on a new session when it failed because the connection broke (an idle
    /// connection learns that PostgreSQL restarted, or dropped it, only when it next sends something). Only
    /// outside a transaction, for statements that are safe to run twice: reads, session setup, BEGIN.
    private func retryingOnce<R>(_ body: () throws(HearthError) -> R) throws(HearthError) -> R {
        do {
            return try body()
        } catch {
            guard !pinned, conn != nil, isBroken else { throw error }
            return try body()
        }
    }

    /// Where the connection goes, without its password: `host:port/dbname` (the socket directory for a socket).
    var serverDescription: String {
        guard let conn else { return "(closed)" }
        func text(_ p: UnsafeMutablePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        return "\(text(PQhost(conn))):\(text(PQport(conn)))/\(text(PQdb(conn)))"
    }

    /// Runs `sql` (one or more statements, no parameters) and discards what it returns. Outside a transaction
    /// it is run again on a new session when the connection turns out broken (see `retryingOnce`).
    func exec(_ sql: String, _ what: String) throws(HearthError) {
        try retryingOnce { () throws(HearthError) in
            let c = try live()
            let result = PQexec(c, sql)
            defer { PQclear(result) }
            try PGFailure.check(result, c, "\(what) (\(role) connection)")
        }
    }

    /// Runs one statement with binary parameters and returns its rows, in binary. The statement is prepared
    /// on first use in this session (its parameter types are those of the first call's values). Outside a
    /// transaction it is run again on a new session when the connection turns out broken (`retryingOnce`):
    /// every statement the store runs outside a transaction is a read or session setup.
    @discardableResult
    func query(_ sql: String, _ params: [PGValue] = [], _ what: @autoclosure () -> String) throws(HearthError) -> PGRows {
        // `what` names the statement in errors only: it is not built on the way that succeeds.
        try retryingOnce { () throws(HearthError) in try queryOnce(sql, params, what) }
    }

    private func queryOnce(_ sql: String, _ params: [PGValue], _ what: () -> String) throws(HearthError) -> PGRows {
        let c = try live()
        let name = try prepare(sql, params, c, what)
        let result = PGValue.withParameters(params) { count, values, lengths, formats in
            PQexecPrepared(c, name, count, values, lengths, formats, 1)
        }
        do {
            try PGFailure.check(result, c, "\(what()) (\(role) connection)")
        } catch {
            PQclear(result)
            throw error
        }
        return PGRows(result!)
    }

    /// The name of `sql` prepared in this session, preparing it first when it is new.
    private func prepare(_ sql: String, _ params: [PGValue], _ c: OpaquePointer, _ what: () -> String) throws(HearthError) -> String {
        if let known = prepared[sql] { return known }
        let name = "h\(prepared.count)"
        let made = PQprepare(c, name, sql, Int32(params.count), params.map(\.type))
        defer { PQclear(made) }
        try PGFailure.check(made, c, "preparing \(what()) (\(role) connection)")
        prepared[sql] = name
        return name
    }

    /// Sends every statement at once and then reads their results (libpq's pipeline mode: one round trip for
    /// all of them). Statements run in order; after one fails, the rest do not run. Throws the first failure,
    /// naming its statement (`.failed`); what the statements return is not kept. A break of the connection once anything
    /// was sent throws `.broken` (what ran is unknown) and leaves the connection to be reopened on its next use.
    func pipeline(_ statements: [PGStatement]) throws(PGPipelineFailure) {
        let c: OpaquePointer
        let names: [String]
        do throws(HearthError) {
            c = try live()
            names = try statements.map { (s) throws(HearthError) in try prepare(s.sql, s.params, c, { s.what }) }
        } catch {
            // Preparing changes nothing: a connection found broken here means nothing of the pipeline ran.
            throw isBroken ? .notSent(error) : .failed(error)
        }
        guard PQenterPipelineMode(c) == 1 else {
            throw .failed(HearthError(.internal, "storage: entering pipeline mode failed (\(role) connection): \(PGFailure.message(of: c))"))
        }
        func broken(_ what: String) -> HearthError {
            let e = HearthError(.unavailable, "storage: \(what) failed: \(PGFailure.message(of: c)) (\(role) connection)")
            close()   // reopened, in normal mode, on the next use
            return e
        }
        for (s, name) in zip(statements, names) {
            let sent = PGValue.withParameters(s.params) { count, values, lengths, formats in
                PQsendQueryPrepared(c, name, count, values, lengths, formats, 1)
            }
            guard sent == 1 else { throw .broken(broken("sending \(s.what)")) }
        }
        guard PQpipelineSync(c) == 1 else { throw .broken(broken("sending the pipeline's sync")) }
        var failure: HearthError?
        for s in statements {
            guard let r = PQgetResult(c) else { throw .broken(broken(s.what)) }
            let status = PQresultStatus(r)
            if status == PGRES_PIPELINE_ABORTED || status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                PQclear(r)
            } else if PQstatus(c) != CONNECTION_OK {
                PQclear(r)
                throw .broken(broken(s.what))
            } else {
                if failure == nil { failure = PGFailure.error(r, c, "\(s.what) (\(role) connection)") }
                PQclear(r)
            }
            // Each statement's results end with a NULL.
            while let extra = PQgetResult(c) { PQclear(extra) }
        }
        guard let sync = PQgetResult(c) else { throw .broken(broken("the pipeline's sync")) }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(c) == 1 else { throw .broken(broken("ending the pipeline")) }
        if let failure { throw .failed(failure) }
    }

    /// Discards the notifications received so far (the caller reads the state they announced anyway).
    func drainNotifications() {
        guard !isBroken, let conn else { return }
        _ = PQconsumeInput(conn)
        while let n = PQnotifies(conn) { PQfreemem(n) }
    }

    /// Waits up to `seconds` for a notification (or anything else) to arrive on the connection's socket.
    /// Returns early when the connection is broken (the next call reopens it).
    func waitForNotification(seconds: Double) {
        guard !isBroken, let conn else { return }
        _ = PQconsumeInput(conn)
        if let n = PQnotifies(conn) { PQfreemem(n); return }
        var fd = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
        _ = poll(&fd, 1, Int32(max(0, min(seconds, 60)) * 1000))
        _ = PQconsumeInput(conn)
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

/// One statement of a pipeline: its SQL, its parameters, and what it does (for messages).
struct PGStatement {
    let sql: String
    let params: [PGValue]
    let what: String
}

/// How a pipeline failed.
enum PGPipelineFailure: Error {
    /// A statement failed (named in the error): the statements after it did not run.
    case failed(HearthError)
    /// The connection was found broken before anything was sent (it is reopened on its next use).
    case notSent(HearthError)
    /// The connection broke with the pipeline in flight: which statements ran is unknown.
    case broken(HearthError)
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
    static func check(_ result: OpaquePointer?, _ conn: OpaquePointer, _ operation: @autoclosure () -> String) throws(HearthError) {
        guard let result else {
            throw HearthError(.unavailable, "storage: \(operation()) failed: \(message(of: conn))")
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        throw error(result, conn, operation())
    }

    /// The error of a failed result: its SQLSTATE decides the code. Connection trouble, a server shutting down,
    /// lack of resources, serialization failures and deadlocks are UNAVAILABLE (the store may work again);
    /// PostgreSQL's own corruption reports (class XX) are DATA_LOSS; the rest (our SQL, constraints) INTERNAL.
    static func error(_ result: OpaquePointer, _ conn: OpaquePointer, _ operation: String) -> HearthError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        var detail = oneLine(String(cString: PQresultErrorMessage(result)))
        if detail.isEmpty { detail = message(of: conn) }
        let text = "storage: \(operation) failed: \(detail)" + (state.isEmpty ? "" : " (SQLSTATE \(state))")
        if state == "53100" { return HearthError(.unavailable, text + "; PostgreSQL's disk is full") }
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
