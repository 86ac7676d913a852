import Foundation

/// The shared default instance (Firestore's `Firestore.firestore()` configured once with its settings).
extension Hearth {
    private static let shared = SharedInstance()

    /// The shared instance, made on first use: with `configure(host:port:settings:)` if that was called,
    /// else at `HEARTH_HOST` (default `127.0.0.1`) and `HEARTH_PORT` (default 7411) with default settings.
    /// Every call returns the same instance.
    public static func hearth() -> Hearth { shared.instance() }

    /// Sets the address and settings of the shared instance. Call it once, before the first `hearth()`;
    /// afterwards it throws `.failedPrecondition` (as Firestore refuses settings once the instance was used):
    /// move a live instance with `setEndpoint(host:port:)`.
    public static func configure(host: String = "127.0.0.1", port: Int = 7411, settings: HearthSettings = HearthSettings()) throws {
        try shared.configure(host: host, port: port, settings: settings)
    }
}

/// The shared instance and its configuration, under one lock.
private final class SharedInstance: @unchecked Sendable {
    private let lock = NSLock()
    private var made: Hearth?
    private var configured: (host: String, port: Int, settings: HearthSettings)?

    func instance() -> Hearth {
        lock.withLock {
            if let made { return made }
            let env = ProcessInfo.processInfo.environment
            let c = configured ?? (env["HEARTH_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
                                   env["HEARTH_PORT"].flatMap { Int($0) } ?? 7411, HearthSettings())
            let db = Hearth(host: c.host, port: c.port, settings: c.settings)
            made = db
            return db
        }
    }

    func configure(host: String, port: Int, settings: HearthSettings) throws {
        try lock.withLock {
            guard made == nil else {
                throw HearthError(.failedPrecondition, "the shared Hearth instance is already in use: configure it before the first Hearth.hearth()")
            }
            configured = (host, port, settings)
        }
    }
}

extension Hearth {
    /// Whether the connection can carry requests now (see `HearthConnectionState`).
    public var connectionState: HearthConnectionState { connection.state.current }

    /// Calls `listener` on `settings.dispatchQueue` with the current state, then on every change: when a
    /// connection is made (and its hello accepted), when an attempt fails or the link drops (with the
    /// reason), when a hello is refused, and on `terminate()`. A listener on a server that cannot be reached
    /// keeps retrying in the background; this is how an app learns about it (Firestore users ask for exactly
    /// this). A failed attempt with the same reason as the one before is not reported again.
    @discardableResult
    public func addConnectionStateListener(_ listener: @escaping @Sendable (HearthConnectionState) -> Void) -> ListenerRegistration {
        let watch = connection.state
        return ConnectionStateRegistration(watch: watch, id: watch.add(listener))
    }
}
