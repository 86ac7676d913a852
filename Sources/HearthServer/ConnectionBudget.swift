import HearthModel

/// The daemon-wide limits on what clients can make it hold, as a pure value the server consults (tested on
/// its own in `ConnectionBudgetTests`): how many connections, how many bytes of unfinished request lines
/// across all of them, and how long a line may stay unfinished or a connection idle.
///
/// Each connection's own limits (its longest line, its output budget) stay with the connection; these bound
/// the sum, so a flood of connections, of partial lines or of slow senders cannot take the daemon past its
/// memory budget while other clients keep being served.
struct ConnectionBudget {
    struct Limits: Sendable {
        /// Connections served at once; the next one gets an error line and is closed.
        var maxConnections: Int
        /// Connections served at once from one client address (0: no limit of its own).
        var maxPerAddress: Int = 0
        /// Bytes of unfinished request lines held across all connections.
        var inputBytes: Int
        /// How long a request line may stay unfinished (0: forever).
        var lineTimeoutMs: UInt64
        /// How long a connection without listeners may send nothing (0: forever).
        var idleTimeoutMs: UInt64
    }

    let limits: Limits
    private(set) var connections = 0
    private(set) var inputBytes = 0
    /// Connections per client address (addresses with none are dropped).
    private(set) var perAddress: [String: Int] = [:]
    /// Connections refused since start, and closed for each reason.
    private(set) var refused = 0
    private(set) var closedOverInput = 0
    private(set) var closedSlowLine = 0
    private(set) var closedIdle = 0

    init(_ limits: Limits) { self.limits = limits }

    /// A new connection: nil when it may be served, else the error it is sent before it is closed.
    mutating func admit(address: String) -> HearthError? {
        guard connections < limits.maxConnections else {
            refused += 1
            return HearthError(.resourceExhausted,
                               "too many connections: the server serves at most \(limits.maxConnections) at once (--max-connections); try again later")
        }
        let mine = perAddress[address, default: 0]
        if limits.maxPerAddress > 0, mine >= limits.maxPerAddress {
            refused += 1
            return HearthError(.resourceExhausted,
                               "too many connections from \(address): the server serves at most \(limits.maxPerAddress) at once from one address (--max-connections-per-address); try again later")
        }
        connections += 1
        perAddress[address] = mine + 1
        return nil
    }

    /// A served connection from `address` closed, holding `unfinished` bytes of input.
    mutating func released(address: String, unfinished: Int) {
        connections -= 1
        inputBytes -= unfinished
        let left = perAddress[address, default: 1] - 1
        perAddress[address] = left > 0 ? left : nil
    }

    /// A connection's unfinished line went from `before` to `after` bytes: nil while the total stays
    /// within the budget, else the error to close that connection with (its bytes are then released).
    mutating func inputChanged(from before: Int, to after: Int) -> HearthError? {
        inputBytes += after - before
        guard after > before, inputBytes > limits.inputBytes else { return nil }
        closedOverInput += 1
        return HearthError(.resourceExhausted,
                           "the server holds at most \(limits.inputBytes) bytes of unfinished request lines across all connections (--input-budget); this line of \(after)+ bytes would exceed it, closing")
    }

    /// What a connection's clock says, checked by the periodic sweep: nil to keep it, else the error to
    /// close it with. `lineStartedMs`: since when its unfinished line is timed (nil: none, or reading is
    /// paused for the daemon's work on its requests); `lastActivityMs`: its last input or owed answer;
    /// `listening`: it has listeners (a subscriber is idle by design); `owesAnswer`: the daemon is still
    /// working on an answer for it (a client waiting for a long read or a write is not idle).
    mutating func expired(now: UInt64, lineStartedMs: UInt64?, lastActivityMs: UInt64, listening: Bool,
                          owesAnswer: Bool = false) -> HearthError? {
        if limits.lineTimeoutMs > 0, let started = lineStartedMs, now >= started + limits.lineTimeoutMs {
            closedSlowLine += 1
            return HearthError(.resourceExhausted,
                               "a request line stayed unfinished for \(limits.lineTimeoutMs) ms (--line-timeout-ms); closing")
        }
        if limits.idleTimeoutMs > 0, !listening, !owesAnswer, lineStartedMs == nil, now >= lastActivityMs + limits.idleTimeoutMs {
            closedIdle += 1
            return HearthError(.unavailable,
                               "the connection sent nothing and took less than 64 KiB of its output for \(limits.idleTimeoutMs) ms, is owed no answer and has no listener (--idle-timeout-ms); closing")
        }
        return nil
    }

    /// How often the sweep should look: often enough for the shortest timeout, at most once a second.
    var sweepIntervalMs: UInt64? {
        let timeouts = [limits.lineTimeoutMs, limits.idleTimeoutMs].filter { $0 > 0 }
        guard let shortest = timeouts.min() else { return nil }
        return max(10, min(1000, shortest / 4))
    }
}
