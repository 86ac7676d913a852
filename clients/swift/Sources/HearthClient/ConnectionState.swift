import Foundation

/// Whether a `Hearth` instance's connection can carry requests (see `Hearth.addConnectionStateListener`).
///
/// Firestore has no such signal; its users ask for one because a listener on an unreachable server
/// otherwise never calls back. Here a listener on a server that cannot be reached keeps retrying (it
/// resumes once the server is back, without a gap), and the instance reports `.disconnected` with the
/// reason after the first failed attempt, so an app can show "offline" or give up.
public enum HearthConnectionState: Sendable, Equatable, CustomStringConvertible {
    /// A link is up and, with credentials, its hello was accepted: requests and listeners are served.
    case connected
    /// No usable link: not connected yet, a connection attempt failed, the link dropped, the hello was
    /// refused, or the instance was terminated. `reason` says which (the error of the last attempt).
    case disconnected(reason: String)

    public var isConnected: Bool { self == .connected }

    public var description: String {
        switch self {
        case .connected: return "connected"
        case .disconnected(let reason): return "disconnected: \(reason)"
        }
    }
}

/// The current state and its listeners. `set` calls every listener on `queue` when the state changes (a
/// second failure with the same reason is not a change); a listener added gets the current state first.
final class ConnectionStateWatch: @unchecked Sendable {
    typealias Listener = @Sendable (HearthConnectionState) -> Void
    private let lock = NSLock()
    private var state = HearthConnectionState.disconnected(reason: "not connected yet")
    private var listeners: [Int: Listener] = [:]
    private var nextID = 0
    private let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    var current: HearthConnectionState { lock.withLock { state } }

    func set(_ newState: HearthConnectionState) {
        let targets: [Listener]? = lock.withLock {
            guard newState != state else { return nil }
            state = newState
            return listeners.sorted { $0.key < $1.key }.map(\.value)
        }
        guard let targets else { return }
        queue.async { for l in targets { l(newState) } }
    }

    func add(_ listener: @escaping Listener) -> Int {
        let (id, now) = lock.withLock { () -> (Int, HearthConnectionState) in
            nextID += 1
            listeners[nextID] = listener
            return (nextID, state)
        }
        queue.async { listener(now) }
        return id
    }

    func remove(_ id: Int) { _ = lock.withLock { listeners.removeValue(forKey: id) } }
}

/// The registration `Hearth.addConnectionStateListener` returns.
final class ConnectionStateRegistration: ListenerRegistration, @unchecked Sendable {
    private let watch: ConnectionStateWatch
    private let id: Int

    init(watch: ConnectionStateWatch, id: Int) {
        self.watch = watch
        self.id = id
    }

    func remove() { watch.remove(id) }
}
