import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One `uv_queue_work` request: `work` on a pool thread, then `done` on the loop thread.
///
/// The request's `data` retains the item (and the item retains the loop) until the after-work callback,
/// so neither can disappear while a pool thread runs `work`.
final class WorkItem: @unchecked Sendable {
    // `work` is @Sendable and is the only member used off the loop thread.
    private let work: @Sendable () -> Void
    private let done: () -> Void
    private let loop: EventLoop

    private init(loop: EventLoop, work: @escaping @Sendable () -> Void, done: @escaping () -> Void) {
        self.loop = loop
        self.work = work
        self.done = done
    }

    static func submit(loop: EventLoop, work: @escaping @Sendable () -> Void, done: @escaping () -> Void) {
        guard !loop.isShutDown else {
            // No loop to come back to: run both inline so `done` still runs exactly once.
            work()
            done()
            return
        }
        let item = WorkItem(loop: loop, work: work, done: done)
        let req = allocZeroed(uv_work_t.self)
        req.pointee.data = Unmanaged.passRetained(item).toOpaque()
        if uv_queue_work(loop.uvLoop, req, workCallback, afterWorkCallback) < 0 {
            // Only possible with a null callback; keep the contract anyway.
            Unmanaged<WorkItem>.fromOpaque(req.pointee.data!).release()
            free(req)
            work()
            done()
        }
    }

    fileprivate func runWork() { work() }
    fileprivate func runDone() { done() }
}

private func workCallback(_ req: UnsafeMutablePointer<uv_work_t>?) {
    guard let data = req?.pointee.data else { return }
    Unmanaged<WorkItem>.fromOpaque(data).takeUnretainedValue().runWork()
}

private func afterWorkCallback(_ req: UnsafeMutablePointer<uv_work_t>?, _ status: Int32) {
    guard let req, let data = req.pointee.data else { return }
    let item = Unmanaged<WorkItem>.fromOpaque(data).takeRetainedValue()
    free(req)
    item.runDone()
}
