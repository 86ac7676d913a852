import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Watches a POSIX signal (`uv_signal_t`); created by ``EventLoop/onSignal(_:_:)``. Loop thread only.
///
/// `fire` runs on the loop thread (not in the signal handler), so it may do anything. While active the
/// watcher keeps the loop alive; ``stop()`` releases it.
public final class SignalWatcher: LoopHandleOwner {
    let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_signal_t>?
    private var fire: (() -> Void)?
    /// The watched signal number.
    public let signum: Int32

    init(loop: EventLoop, signum: Int32, _ fire: @escaping () -> Void) {
        self.loop = loop
        self.signum = signum
        self.fire = fire
        guard !loop.isShutDown else { return }
        let signal = allocZeroed(uv_signal_t.self)
        uv_signal_init(loop.uvLoop, signal)
        signal.pointee.data = Unmanaged.passRetained(self).toOpaque()
        handle = signal
        if uv_signal_start(signal, loopSignalCallback, signum) < 0 { stop() }
    }

    /// `true` until ``stop()`` (or if starting the watcher failed, for example on an invalid signal).
    public var isActive: Bool { handle != nil }

    /// Stops watching and releases the handle. Idempotent.
    public func stop() {
        guard let handle else { return }
        self.handle = nil
        fire = nil
        uv_close(asHandle(handle), releaseOwnerAndFree)
    }

    func closeForShutdown() { stop() }

    func fired() { fire?() }
}

private func loopSignalCallback(_ handle: UnsafeMutablePointer<uv_signal_t>?, _ signum: Int32) {
    owner(handle?.pointee.data, as: SignalWatcher.self)?.fired()
}
