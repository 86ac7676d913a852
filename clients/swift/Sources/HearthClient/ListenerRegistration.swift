import Foundation

/// A handle on a snapshot listener (Firestore's `ListenerRegistration`).
public protocol ListenerRegistration: AnyObject, Sendable {
    /// Stops the listener: once `remove()` returns no new callback starts (one already running finishes),
    /// and the server is told to unsubscribe. Calling it again does nothing.
    func remove()
}

/// The registration of one listener: the active flag that gates every callback, and delivery on the
/// instance's callback queue in order.
final class Registration: ListenerRegistration, @unchecked Sendable {
    private let lock = NSLock()
    private var active = true
    private let queue: DispatchQueue
    private let connection: Connection
    private var core: ListenerCore?

    init(queue: DispatchQueue, connection: Connection) {
        self.queue = queue
        self.connection = connection
    }

    /// Subscribes `core` (call once, after `init`).
    func start(_ core: ListenerCore) {
        lock.withLock { self.core = core }
        connection.addListener(core)
    }

    var isActive: Bool { lock.withLock { active } }

    func remove() {
        let core: ListenerCore? = lock.withLock {
            guard active else { return nil }
            active = false
            defer { self.core = nil }
            return self.core
        }
        if let core { connection.removeListener(core) }
    }

    /// Runs `callback` on the callback queue unless the listener has been removed by then.
    func deliver(_ callback: @escaping @Sendable () -> Void) {
        queue.async { if self.isActive { callback() } }
    }

    /// Runs `callback` (the final error) on the callback queue unless removed first; nothing is delivered
    /// after it.
    func deliverFinal(_ callback: @escaping @Sendable () -> Void) {
        queue.async {
            let wasActive: Bool = self.lock.withLock {
                defer { self.active = false; self.core = nil }
                return self.active
            }
            if wasActive { callback() }
        }
    }
}
