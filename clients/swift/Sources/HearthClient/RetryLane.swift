import Foundation

/// A FIFO lane that retried transactions of one `Hearth` instance pass through one at a time.
///
/// First attempts run concurrently (optimistically); an attempt that lost a conflict retries inside the
/// lane, so contenders from the same instance stop invalidating each other's reads and each retry
/// normally succeeds. A waiter gives up on the lane after `timeout` and runs anyway (so a transaction
/// nested inside a retrying one cannot deadlock), and a task already inside the lane does not queue again.
actor RetryLane {
    @TaskLocal static var isInside = false

    private var busy = false
    private var nextTicket = 0
    private var waiters: [(ticket: Int, continuation: CheckedContinuation<Bool, Never>)] = []

    /// Waits for the lane; true when it was granted (then `release()` must follow), false on timeout.
    func acquire(timeout: Double) async -> Bool {
        if !busy {
            busy = true
            return true
        }
        nextTicket += 1
        let ticket = nextTicket
        return await withCheckedContinuation { continuation in
            waiters.append((ticket, continuation))
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                await self?.expire(ticket)
            }
        }
    }

    func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().continuation.resume(returning: true)
        }
    }

    private func expire(_ ticket: Int) {
        guard let i = waiters.firstIndex(where: { $0.ticket == ticket }) else { return }
        waiters.remove(at: i).continuation.resume(returning: false)
    }
}

extension RetryLane {
    /// Runs `body` inside the lane (or directly when already inside, or after a timed-out wait), in the
    /// caller's isolation.
    static func pass<T>(_ lane: RetryLane, isolation: isolated (any Actor)? = #isolation, timeout: Double,
                        _ body: () async throws -> T) async throws -> T {
        if RetryLane.isInside { return try await body() }
        let granted = await lane.acquire(timeout: timeout)
        do {
            let value = try await RetryLane.$isInside.withValue(true) { try await body() }
            if granted { await lane.release() }
            return value
        } catch {
            if granted { await lane.release() }
            throw error
        }
    }
}
