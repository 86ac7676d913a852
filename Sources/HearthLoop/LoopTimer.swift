import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A timer created by ``EventLoop/timer(after:repeat:_:)``. Loop thread only.
///
/// A libuv handle exists only while the timer is armed: a one-shot timer releases its handle after
/// firing (unless `fire` re-armed it with ``reset(after:repeat:)``), ``cancel()`` releases it at once,
/// and ``reset(after:repeat:)`` re-arms a fired or cancelled timer with a fresh handle. An armed timer
/// keeps itself and the loop alive even if no reference to it is kept. The timer keeps `fire` for
/// re-arming, so a `fire` that uses its own timer should capture it `weak`, or set the variable to nil.
public final class LoopTimer: LoopHandleOwner {
    let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_timer_t>?
    private var fire: () -> Void

    init(loop: EventLoop, _ fire: @escaping () -> Void) {
        self.loop = loop
        self.fire = fire
    }

    /// `true` while the timer is armed.
    public var isActive: Bool {
        guard let handle else { return false }
        return uv_is_active(asHandle(handle)) != 0
    }

    /// (Re)arms the timer: fire after `ms` milliseconds, then every `repeat` ms if `repeat > 0`.
    /// Replaces any previous schedule. No effect after ``EventLoop/shutdown()``.
    public func reset(after ms: UInt64, repeat: UInt64 = 0) {
        guard !loop.isShutDown else { return }
        if handle == nil {
            let timer = allocZeroed(uv_timer_t.self)
            uv_timer_init(loop.uvLoop, timer)   // cannot fail for timers
            timer.pointee.data = Unmanaged.passRetained(self).toOpaque()
            handle = timer
        }
        uv_timer_start(handle, loopTimerCallback, ms, `repeat`)
    }

    /// Disarms the timer and releases its handle. Idempotent; ``reset(after:repeat:)`` re-arms it.
    public func cancel() {
        guard let handle else { return }
        self.handle = nil
        uv_close(asHandle(handle), releaseOwnerAndFree)
    }

    func closeForShutdown() { cancel() }

    func fired(_ timer: UnsafeMutablePointer<uv_timer_t>) {
        guard timer == handle else { return }
        fire()
        // A one-shot timer that was not re-armed during `fire` gives its handle back.
        if timer == handle && uv_is_active(asHandle(timer)) == 0 { cancel() }
    }
}

private func loopTimerCallback(_ handle: UnsafeMutablePointer<uv_timer_t>?) {
    guard let handle, let timer = owner(handle.pointee.data, as: LoopTimer.self) else { return }
    timer.fired(handle)
}
