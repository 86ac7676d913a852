#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ
import HearthModel
import HearthStorage

/// `CommitFeed` over PostgreSQL: a connection of its own that LISTENs on the schema's channel, which the
/// writer NOTIFYs in every group's transaction (so the wake-up is delivered only once the group is committed
/// and visible). `next` reads the change log after the seq asked for; when there is nothing, it waits on the
/// connection's socket for a notification, or `recheck` seconds, and reads again. A broken connection is
/// reopened (and LISTENs again) on the next call: commits made meanwhile are found by that first read, since
/// the feed asks by seq rather than trusting wake-ups.
final class PostgresCommitFeed: CommitFeed {
    private let connection: PGConnection
    private let channel: String
    /// The session the LISTEN was made on.
    private var listening = 0
    private var closed = false
    let recheck: Double

    /// `recheck` is at least 10 ms (a smaller one would query PostgreSQL in a loop).
    init(connection: PGConnection, channel: String, recheck: Double) {
        self.connection = connection
        self.channel = channel
        self.recheck = recheck.isNaN ? 0.25 : max(0.01, recheck)
    }

    deinit { close() }

    func close() {
        closed = true
        connection.close()
    }

    func next(after: UInt64, limit: Int, timeout: Double) throws(HearthError) -> [CommitRecord]? {
        guard !closed else { throw CommitValidation.closed }
        let deadline = MonotonicClock.seconds() + (timeout.isNaN ? 0 : max(0, timeout))
        while true {
            try listen()
            connection.drainNotifications()
            let found = try read(after: after, limit: limit)
            if found == nil || found?.isEmpty == false || limit < 1 { return found }
            let left = deadline - MonotonicClock.seconds()
            if left <= 0 { return [] }
            // The read may have reopened the connection (a session without the LISTEN): listen first.
            guard listening == connection.sessions else { continue }
            connection.waitForNotification(seconds: min(left, recheck))
        }
    }

    /// The commits after `after` and the index catalog a commit among them stored, in one snapshot (a
    /// REPEATABLE READ transaction): the catalog row holds only the latest catalog, so read later it could
    /// already be a newer commit's, and the one these commits carry would be missed.
    private func read(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        try connection.exec("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", "starting a read of the change log")
        connection.pin()
        defer { connection.unpin() }
        do throws(HearthError) {
            let reads = PostgresReads(connection: connection)
            var found = try reads.changes(after: after, limit: max(0, limit))
            if let last = found?.last?.seq {
                let catalog = try connection.query("SELECT seq, data FROM hearth_index_catalog WHERE id = 1 AND seq > $1 AND seq <= $2",
                                                   [.int8(after), .int8(last)], "reading the index catalog")
                if catalog.count == 1, let i = found!.firstIndex(where: { $0.seq == catalog.uint64(0, 0) }) {
                    found![i].indexCatalog = catalog.bytes(0, 1)
                }
            }
            try connection.exec("COMMIT", "ending a read of the change log")
            return found
        } catch {
            connection.rollBack()
            throw error
        }
    }

    /// LISTEN on the current session (again after a reconnect).
    private func listen() throws(HearthError) {
        try connection.reconnectIfBroken()
        guard listening != connection.sessions else { return }
        try connection.exec("LISTEN \(PGConnection.quoteIdentifier(channel))", "listening for commits")
        listening = connection.sessions
    }

    /// The channel a schema's writer notifies: a name within PostgreSQL's 63 bytes whatever the schema's.
    static func channel(for schema: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325   // FNV-1a
        for b in schema.utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return "hearth_commits_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
