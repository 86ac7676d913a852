/// Limits failed `hello` attempts per client address (token or admin-key guessing): at most `limit` failures
/// in any window of `windowMs`; past that, the address's hellos are refused without being checked until the
/// window's oldest failure ages out. A pure value (tested on its own); the server feeds it the loop clock.
struct HelloThrottle {
    let limit: Int
    let windowMs: UInt64
    /// Failure times (ms) per address, oldest first; addresses without recent failures are dropped.
    private var failures: [String: [UInt64]] = [:]
    private var lastPrune: UInt64 = 0

    init(limit: Int, windowMs: UInt64 = 60_000) {
        self.limit = limit
        self.windowMs = windowMs
    }

    /// Nil when `address` may try a hello now, else how many ms until it may.
    mutating func refusal(_ address: String, now: UInt64) -> UInt64? {
        guard limit > 0, var times = failures[address] else { return nil }
        times.removeAll { $0 + windowMs <= now }
        failures[address] = times.isEmpty ? nil : times
        guard times.count >= limit else { return nil }
        return times[times.count - limit] + windowMs - now
    }

    /// A hello from `address` failed.
    mutating func failed(_ address: String, now: UInt64) {
        guard limit > 0 else { return }
        failures[address, default: []].append(now)
        if failures[address]!.count > limit { failures[address]!.removeFirst(failures[address]!.count - limit) }
        if now >= lastPrune + windowMs { prune(now: now) }
    }

    /// Addresses with failures in the window.
    var trackedAddresses: Int { failures.count }

    private mutating func prune(now: UInt64) {
        lastPrune = now
        failures = failures.filter { $0.value.contains { $0 + windowMs > now } }
    }
}

/// The address part of a peer as the loop formats it ("10.0.0.7:51234" → "10.0.0.7", "[::1]:5" → "::1").
func peerAddress(_ peer: String) -> String {
    if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") { return String(peer[peer.index(after: peer.startIndex)..<close]) }
    guard let colon = peer.lastIndex(of: ":") else { return peer }
    return String(peer[..<colon])
}
