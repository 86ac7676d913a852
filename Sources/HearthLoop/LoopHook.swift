/// A before-poll hook registered with ``EventLoop/beforePoll(_:)``. Loop thread only.
///
/// Hooks run once per loop iteration, in registration order, right before connection output is flushed
/// and the loop blocks for I/O. They do not keep the loop alive.
public final class LoopHook {
    private weak var loop: EventLoop?
    var fire: (() -> Void)?
    /// `false` after ``cancel()``.
    public internal(set) var isActive = true

    init(loop: EventLoop, _ fire: @escaping () -> Void) {
        self.loop = loop
        self.fire = fire
    }

    /// Unregisters the hook (it will not run again, even later in the current pass). Idempotent.
    public func cancel() {
        guard isActive else { return }
        isActive = false
        fire = nil
        loop?.removeHook(self)
    }
}
