import Foundation

/// Connection and behaviour settings of a `Hearth` instance (Firestore's `FirestoreSettings`).
public struct HearthSettings: Sendable {
    /// Where completion handlers and snapshot listeners are called; serial, so callbacks of one instance
    /// never overlap and listener snapshots arrive in order. Defaults to a private serial queue (not the
    /// main queue, which a server or command-line process may never drain).
    public var dispatchQueue: DispatchQueue
    /// How long one connection attempt may take.
    public var connectTimeout: TimeInterval = 5
    /// Upper bound of the reconnect backoff while listeners are active (50 ms doubling up to this).
    public var maxReconnectDelay: TimeInterval = 2
    /// Heartbeat period asked of the server (`hello`) while listeners are active; heartbeats move resume
    /// points forward, and a connection silent for three periods plus a second is presumed dead and
    /// replaced. 0 turns them off (as does a server that refuses `hello`). The server accepts 0.1 s to 1 h;
    /// other positive values are brought within that range.
    public var heartbeatInterval: TimeInterval = 5
    /// TLS (see `HearthTLS`); nil speaks plain text. Verification is on unless `insecureSkipVerify`.
    public var tls: HearthTLS?
    /// Who the instance is: a hello with it is the first line of every connection (see `HearthCredentials`).
    /// By default `HEARTH_TOKEN`, else `HEARTH_ADMIN_KEY`, else anonymous.
    public var credentials: HearthCredentials = .environment

    public init(dispatchQueue: DispatchQueue = DispatchQueue(label: "hearth.callbacks")) {
        self.dispatchQueue = dispatchQueue
    }
}

/// A Hearth database: the entry point, shaped like Firestore's `Firestore` object.
///
/// Each instance owns one TCP connection, opened on first use, on which every request is pipelined (many
/// in flight, answered in order). It is thread-safe. Requests issued from one thread are sent in the order
/// issued, so callback-style writes apply in order. The connection stays open until `terminate()`; an
/// instance with active listeners is kept alive by them.
public final class Hearth: Sendable {
    public let settings: HearthSettings
    let connection: Connection
    /// Serializes retried transactions of this instance (see `RetryLane`).
    let retryLane = RetryLane()

    /// A client of the daemon at `host:port` (`127.0.0.1:7411` by default). Nothing is sent until first use.
    public init(host: String = "127.0.0.1", port: Int = 7411, settings: HearthSettings = HearthSettings()) {
        self.settings = settings
        connection = Connection(host: host, port: port, settings: settings)
    }

    /// A client of several nodes of one database (`hearthd --postgres`), each `"host:port"`: it connects to
    /// the first that accepts, and after a drop to the next in turn; the new node first catches up with the
    /// seq this instance has seen (its hello's `minSeq`), and listeners resume there.
    public convenience init(addresses: [String], settings: HearthSettings = HearthSettings()) throws {
        let endpoints = try addresses.map { (a) throws -> (host: String, port: Int) in
            guard let colon = a.lastIndex(of: ":"), let port = Int(a[a.index(after: colon)...]), (1...65535).contains(port),
                  colon != a.startIndex else { throw HearthError(.invalidArgument, "address \"\(a)\" is not host:port") }
            var host = String(a[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return (host, port)
        }
        guard let first = endpoints.first else { throw HearthError(.invalidArgument, "addresses is empty") }
        self.init(host: first.host, port: first.port, settings: settings)
        connection.setEndpoints(endpoints)
    }

    deinit { connection.terminate() }

    /// The collection at `collectionPath` (`"users"`, `"users/u1/posts"`). Paths are checked by the server
    /// when used: an invalid one fails that request with `.invalidArgument`.
    public func collection(_ collectionPath: String) -> CollectionReference {
        CollectionReference(db: self, path: collectionPath)
    }

    /// The document at `documentPath` (`"users/u1"`).
    public func document(_ documentPath: String) -> DocumentReference {
        DocumentReference(db: self, path: documentPath)
    }

    /// A query over every collection with this ID, at any depth.
    public func collectionGroup(_ collectionID: String) -> Query {
        Query(db: self, spec: QuerySpec(target: .group(collectionID)))
    }

    /// A new batch of writes committed atomically by `commit()`.
    public func batch() -> WriteBatch { WriteBatch(db: self) }

    /// Reads several documents in one request (at most 1,000), in the order given; missing documents come
    /// back as snapshots with `exists == false`.
    public func getAll(_ references: [DocumentReference]) async throws -> [DocumentSnapshot] {
        let obj = try await connection.call(["op": .string("getAll"), "paths": .array(references.map { .string($0.path) })])
        return try Hearth.snapshots(from: obj, for: references, db: self)
    }

    /// Callback form of `getAll(_:)`.
    public func getAll(_ references: [DocumentReference], completion: @escaping @Sendable ([DocumentSnapshot]?, Error?) -> Void) {
        perform(["op": .string("getAll"), "paths": .array(references.map { .string($0.path) })],
                map: { try Hearth.snapshots(from: $0, for: references, db: self) }, completion: completion)
    }

    /// Asks the server for its last durable commit sequence number (`ping`).
    public func ping() async throws -> Int64 {
        try await connection.call(["op": .string("ping")])["seq"]?.intValue ?? 0
    }

    /// Re-authenticates the live connection with a new token (token refresh, before the old one expires);
    /// listeners stay subscribed. Once the server accepts it, the token is also used for later reconnects.
    /// Throws `.unauthenticated` with the server's reason when it is refused (the previous credentials
    /// stay). Returns who the server accepted.
    @discardableResult
    public func authenticate(token: String) async throws -> HearthIdentity? {
        try await authenticate(.token(token))
    }

    /// Re-authenticates the live connection with `credentials`, or, without, with the configured ones
    /// asked again (a token provider called, a token file re-read). Listeners stay subscribed.
    @discardableResult
    public func authenticate(_ credentials: HearthCredentials? = nil) async throws -> HearthIdentity? {
        try await withCheckedThrowingContinuation { cont in connection.authenticate(credentials) { cont.resume(with: $0) } }
    }

    /// Callback form of `authenticate(_:)`; `completion` runs on `settings.dispatchQueue`.
    public func authenticate(_ credentials: HearthCredentials? = nil,
                             completion: @escaping @Sendable (HearthIdentity?, Error?) -> Void) {
        let queue = settings.dispatchQueue
        connection.authenticate(credentials) { result in
            queue.async {
                switch result {
                case .success(let who): completion(who, nil)
                case .failure(let error): completion(nil, error)
                }
            }
        }
    }

    /// Who the server accepted this instance's connection as, from the last hello answered (nil before, or
    /// when anonymous).
    public var identity: HearthIdentity? { connection.identity.get() }

    /// Points this instance at another daemon address. The current connection is dropped; later requests
    /// and every active listener (resuming where it was) use the new address.
    public func setEndpoint(host: String, port: Int) { connection.setEndpoint(host: host, port: port) }

    /// Closes the connection: requests in flight fail with `.unavailable`, listeners stop without a final
    /// callback, and later requests fail. Firestore's `terminate()`.
    public func terminate() { connection.terminate() }

    // MARK: internal plumbing shared by references, queries and batches

    /// Runs one request and maps its response; the mapping runs on the connection queue.
    func perform<T: Sendable>(_ request: [String: JSON], map: @escaping @Sendable ([String: JSON]) throws -> T) async throws -> T {
        try map(try await connection.call(request))
    }

    /// Callback form: `request` is sent before this returns (so calls made in sequence are sent in
    /// sequence); `completion` runs on `settings.dispatchQueue`.
    func perform<T: Sendable>(_ request: [String: JSON], map: @escaping @Sendable ([String: JSON]) throws -> T,
                              completion: (@Sendable (T?, Error?) -> Void)?) {
        let queue = settings.dispatchQueue
        connection.send(request) { result in
            let outcome = Result { try map(try result.get()) }
            guard let completion else { return }
            queue.async {
                switch outcome {
                case .success(let v): completion(v, nil)
                case .failure(let e): completion(nil, e)
                }
            }
        }
    }

    /// Delivers an error that happened before anything was sent (a value the client cannot encode).
    func fail<T>(_ error: Error, _ completion: (@Sendable (T?, Error?) -> Void)?) {
        guard let completion else { return }
        settings.dispatchQueue.async { completion(nil, error) }
    }

    /// Adapts a Firestore-style `(Error?) -> Void` completion to the value-carrying form `perform` takes.
    static func ignoringValue(_ completion: (@Sendable (Error?) -> Void)?) -> (@Sendable (Bool?, Error?) -> Void)? {
        guard let completion else { return nil }
        return { _, error in completion(error) }
    }

    static func snapshots(from obj: [String: JSON], for refs: [DocumentReference], db: Hearth) throws -> [DocumentSnapshot] {
        guard let docs = obj["docs"]?.arrayValue, docs.count == refs.count else {
            throw HearthError.internalError("getAll answered without one entry per path")
        }
        return zip(refs, docs).map { ref, doc in DocumentSnapshot(reference: ref, document: WireDocument(doc)) }
    }
}
