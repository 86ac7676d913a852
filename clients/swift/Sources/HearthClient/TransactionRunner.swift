import Foundation

/// Options of `runTransaction` (Firestore's `TransactionOptions`).
public struct TransactionOptions: Sendable {
    /// Attempts before giving up (the first try included); Firestore's default is 5.
    public var maxAttempts: Int = 5
    public init(maxAttempts: Int = 5) { self.maxAttempts = maxAttempts }
}

extension Hearth {
    /// Runs `updateBlock` as an optimistic transaction: the block reads with `transaction.getDocument` and
    /// buffers writes; its attempt then commits atomically only if nothing it read has changed. On a
    /// conflict (`.aborted`, `.failedPrecondition`, or `.notFound`/`.alreadyExists` while a document read
    /// has changed) the block runs again, up to `options.maxAttempts` times with jittered exponential
    /// backoff, retries of one instance passing one at a time (so transactions of one process contending
    /// for the same documents all get through); the last error is thrown. Errors thrown by the block are thrown at once, without a retry.
    /// The block runs in the caller's isolation and must not have side effects it cannot repeat.
    public func runTransaction<T>(isolation: isolated (any Actor)? = #isolation,
                                  options: TransactionOptions = TransactionOptions(),
                                  _ updateBlock: (Transaction) async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let transaction = Transaction(db: self)
            do {
                func attemptOnce() async throws -> T {
                    let value = try await updateBlock(transaction)
                    if let request = try transaction.commitRequest() { _ = try await connection.call(request) }
                    return value
                }
                // Retries pass through the instance's lane one at a time (see RetryLane).
                return attempt == 1 ? try await attemptOnce() : try await RetryLane.pass(retryLane, timeout: 5, attemptOnce)
            } catch let error as HearthError {
                guard attempt < options.maxAttempts, await isRetryable(error, transaction) else { throw error }
                try? await Task.sleep(nanoseconds: Hearth.backoffNanoseconds(attempt: attempt))
            }
        }
    }

    /// Firestore's block form: the block runs on a background queue, reads with the blocking
    /// `transaction.getDocument(_:) throws`, reports failure by setting `errorPointer?.pointee` (or returning
    /// nil after setting it), and its result is returned.
    public func runTransaction(options: TransactionOptions = TransactionOptions(),
                               _ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?) async throws -> Any? {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<AnyBox, Error>) in
            runBlocking(options: options, updateBlock) { value, error in
                if let error { cont.resume(throwing: error) } else { cont.resume(returning: AnyBox(value)) }
            }
        }.value
    }

    /// Callback form of the block form; `completion` runs on `settings.dispatchQueue`.
    public func runTransaction(options: TransactionOptions = TransactionOptions(),
                               _ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?,
                               completion: @escaping @Sendable (Any?, Error?) -> Void) {
        let queue = settings.dispatchQueue
        runBlocking(options: options, updateBlock) { value, error in
            let box = AnyBox(value)
            queue.async { completion(box.value, error) }
        }
    }

    private func runBlocking(options: TransactionOptions, _ updateBlock: @escaping @Sendable (Transaction, NSErrorPointer) -> Any?,
                             done: @escaping @Sendable (Any?, Error?) -> Void) {
        DispatchQueue.global().async {
            var attempt = 0
            while true {
                attempt += 1
                let transaction = Transaction(db: self)
                var blockError: NSError?
                let value = updateBlock(transaction, &blockError)
                if let blockError { return done(nil, blockError) }
                let outcome = ResultBox<Bool>()
                let finished = DispatchSemaphore(value: 0)
                let mayRetry = attempt < options.maxAttempts
                Task {
                    do {
                        if let request = try transaction.commitRequest() { _ = try await self.connection.call(request) }
                        outcome.result = .success(true)
                    } catch {
                        let e = HearthError.from(error)
                        outcome.result = .failure(e)
                        if mayRetry, await self.isRetryable(e, transaction) { outcome.result = .success(false) }
                    }
                    finished.signal()
                }
                finished.wait()
                switch outcome.result! {
                case .success(true): return done(value, nil)
                case .success(false): usleep(UInt32(Hearth.backoffNanoseconds(attempt: attempt) / 1000))
                case .failure(let e): return done(nil, e)
                }
            }
        }
    }

    func isRetryable(_ error: HearthError, _ transaction: Transaction) async -> Bool {
        switch error.code {
        case .aborted, .failedPrecondition: return true
        case .notFound, .alreadyExists: return await transaction.readsChanged()
        default: return false
        }
    }

    /// Full jitter over 25 ms × 2^attempt (50 ms after the first attempt, 100 ms after the second, ...),
    /// capped at 2 s: wide enough that a crowd of conflicting transactions spreads out and drains.
    static func backoffNanoseconds(attempt: Int) -> UInt64 {
        let ceiling = min(2_000_000_000, 25_000_000 << UInt64(min(attempt, 10)))
        return UInt64.random(in: 1_000_000...UInt64(ceiling))
    }
}

/// Carries a non-Sendable transaction result across queues (it is handed over, never shared).
struct AnyBox: @unchecked Sendable {
    let value: Any?
    init(_ value: Any?) { self.value = value }
}
