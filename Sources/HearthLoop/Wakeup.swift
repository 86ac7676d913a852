import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A cross-thread wakeup (`uv_async_t`) created by ``EventLoop/makeWakeup(_:)``.
///
/// ``signal()`` is the one method callable from any thread; `fire` then runs on the loop thread.
/// Signals that arrive before `fire` runs coalesce into one call, so pass data through your own
/// thread-safe queue and drain all of it in `fire`. ``close()`` is loop-thread only; signalling a closed
/// wakeup does nothing (a lock makes that race-free). An open wakeup keeps the loop alive. A wakeup
/// retains its loop: release your last reference to it on the loop thread.
public final class Wakeup: LoopHandleOwner, @unchecked Sendable {
    // Only `lock` and `handle` (under the lock) are touched off the loop thread.
    private let loop: EventLoop
    private let lock = Lock()
    private var handle: UnsafeMutablePointer<uv_async_t>?
    private var fire: (() -> Void)?

    init(loop: EventLoop, _ fire: @escaping () -> Void) {
        self.loop = loop
        self.fire = fire
        guard !loop.isShutDown else { return }
        let async = allocZeroed(uv_async_t.self)
        async.pointee.data = Unmanaged.passRetained(self).toOpaque()
        if uv_async_init(loop.uvLoop, async, loopAsyncCallback) < 0 {
            Unmanaged<Wakeup>.fromOpaque(async.pointee.data!).release()
            free(async)
            return
        }
        handle = async
    }

    /// Requests a call of `fire` on the loop thread. Thread-safe, async-signal-unsafe, never blocks on I/O.
    public func signal() {
        lock.withLock {
            if let handle { _ = uv_async_send(handle) }
        }
    }

    /// `true` until ``close()``. Loop thread only.
    public var isOpen: Bool { lock.withLock { handle != nil } }

    /// Releases the handle; later ``signal()`` calls are ignored. Loop thread only; idempotent.
    public func close() {
        let closing: UnsafeMutablePointer<uv_async_t>? = lock.withLock {
            let h = handle
            handle = nil
            return h
        }
        guard let closing else { return }
        fire = nil
        uv_close(asHandle(closing), releaseOwnerAndFree)
    }

    func closeForShutdown() { close() }

    func fired() { fire?() }
}

private func loopAsyncCallback(_ handle: UnsafeMutablePointer<uv_async_t>?) {
    owner(handle?.pointee.data, as: Wakeup.self)?.fired()
}
