import Foundation

/// A task executor on one private serial queue that a test can stall, the way a saturated cooperative
/// pool stalls every task waiting to run on it (a loaded suite whose threads sit in blocking calls): jobs
/// enqueued while it is stalled run once it is released. Only the tasks that prefer this executor stall.
@available(macOS 15.0, *)
final class StallableExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "hearth.tests.stallable-executor")
    private let gate = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Returns once every job enqueued so far has run; later jobs wait for `release()`.
    func stall() async {
        await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
            queue.async {
                started.resume()
                self.gate.wait()
            }
        }
    }

    func release() { gate.signal() }
}
