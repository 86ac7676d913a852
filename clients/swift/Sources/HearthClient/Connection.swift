import Foundation

/// The one pipelined TCP connection of a `Hearth` instance.
///
/// Contract: requests are written in the order `send` is called and answered in that order (responses are
/// matched by the `id` the connection assigns). Handlers run on the connection's serial queue and must not
/// block. While the connection is down, a request first tries to connect; if that fails it is answered
/// `.unavailable`; requests in flight when the connection drops are answered `.unavailable` (a write's
/// outcome is then unknown). Listeners are kept across drops: while any exist, the connection reconnects
/// with exponential backoff (50 ms doubling up to `HearthSettings.maxReconnectDelay`, reset once a link
/// answers a request) and re-issues each listen with `resumeAfter` and the database `history` that seq
/// belongs to (when the server named one). All mutable state is confined to `queue`, hence
/// `@unchecked Sendable`.
///
/// Authentication: unless the credentials are `.none`, every new link first sends a hello with the token
/// or admin key (a token provider is asked, a file read, each time) and holds every other request, the
/// listeners' re-subscriptions included, until the hello is answered; they then go out in order. A refused
/// hello fails the held requests and ends every listener with the server's error (UNAUTHENTICATED), and
/// closes the link. A hello sent later on the link (heartbeats, `authenticate`) carries the credentials too.
final class Connection: @unchecked Sendable {
    typealias Handler = @Sendable (Result<[String: JSON], HearthError>) -> Void

    let queue = DispatchQueue(label: "hearth.connection")
    let settings: HearthSettings
    private var host: String
    private var port: Int
    /// Every node this connection may use (several nodes of one database), tried in turn from `nextAddress`.
    private var addresses: [(host: String, port: Int)]
    private var nextAddress = 0
    /// The highest seq seen (answers, snapshots, heartbeats): with several nodes, a new link first waits, with
    /// its hello's `minSeq`, until its node has published it, so moving to another node never reads older state.
    private var seenSeq: Int64 = 0
    private var link: Link?
    private var nextID: Int64 = 0
    private var pending: [(id: Int64, handler: Handler)] = []
    private var pendingHead = 0
    private var listeners: [Int: ListenerCore] = [:]
    private var subs: [String: ListenerCore] = [:]
    private var reconnectDelay = 0.0
    private var reconnectScheduled = false
    private var terminated = false
    private var helloSent = false
    /// The server accepted `hello` on the current link, so silence means trouble.
    private var heartbeatsOn = false
    /// TLS made from `settings.tls` at the first connection, kept for reconnections (session resumption).
    private var tlsClient: TLSClient?
    /// The credentials of every new link (`.environment` already resolved; a failure to resolve it fails
    /// every request).
    private var credentials: Result<HearthCredentials, HearthError>
    /// True while the current link's hello is being prepared or awaits its answer.
    private var authenticating = false
    /// Requests submitted while the link authenticates; sent, in order, once the hello is answered.
    private var held: [(request: [String: JSON], handler: Handler)] = []
    /// The credential field the current link authenticated with, repeated in its later hellos.
    private var helloFields: [String: JSON] = [:]
    /// The identity the server confirmed last (readable from any thread).
    let identity = LockedValue<HearthIdentity?>(nil)
    /// Connected or not, for `Hearth.addConnectionStateListener`.
    let state: ConnectionStateWatch

    init(host: String, port: Int, settings: HearthSettings) {
        self.host = host
        self.port = port
        addresses = [(host, port)]
        self.settings = settings
        state = ConnectionStateWatch(queue: settings.dispatchQueue)
        credentials = settings.credentials.resolved()
    }

    // MARK: requests

    /// Sends one request (an `id` is added); `handler` gets the response object or the error.
    func send(_ request: [String: JSON], handler: @escaping Handler) {
        queue.async { self.submit(request, handler) }
    }

    /// Sends one request and awaits its response object (or throws the error it carried).
    func call(_ request: [String: JSON]) async throws -> [String: JSON] {
        try await withCheckedThrowingContinuation { cont in send(request) { cont.resume(with: $0) } }
    }

    /// Points the connection at another endpoint; the current link (if any) is dropped and listeners resume
    /// on the new one.
    func setEndpoint(host: String, port: Int) { setEndpoints([(host, port)]) }

    /// Points the connection at several nodes of one database: the first that accepts a link is used, and
    /// after a drop the next one in turn.
    func setEndpoints(_ endpoints: [(host: String, port: Int)]) {
        precondition(!endpoints.isEmpty, "at least one endpoint")
        queue.async {
            self.addresses = endpoints
            self.nextAddress = 0
            (self.host, self.port) = endpoints[0]
            self.link?.close("endpoint changed")
        }
    }

    private func noteSeq(_ obj: [String: JSON]) {
        if let seq = obj["seq"]?.intValue, seq > seenSeq { seenSeq = seq }
    }

    /// Closes the connection for good: pending requests fail `.unavailable`, listeners stop silently.
    func terminate() {
        queue.async {
            self.terminated = true
            self.state.set(.disconnected(reason: "terminated"))
            self.listeners.removeAll()
            self.subs.removeAll()
            self.link?.close("terminated")
        }
    }

    private func submit(_ request: [String: JSON], _ handler: @escaping Handler) {
        guard !terminated else { return handler(.failure(.unavailable("the Hearth instance was terminated"))) }
        if link == nil {
            do { try openLink() } catch { return handler(.failure(HearthError.from(error))) }
        }
        guard let link else { return handler(.failure(.unavailable("not connected"))) }
        if authenticating { return held.append((request, handler)) }
        write(request, on: link, handler)
    }

    /// Writes one request on `link` now (an `id` is added).
    private func write(_ request: [String: JSON], on link: Link, _ handler: @escaping Handler) {
        nextID += 1
        var req = request
        req["id"] = .int(nextID)
        pending.append((nextID, handler))
        link.send(line: JSON.object(req).serialized)
    }

    // MARK: authentication

    /// Re-authenticates the live link with a hello (token refresh); listeners stay. With `newCredentials`,
    /// those become the instance's credentials for later links once the server accepts them; without, the
    /// current ones are asked again (a provider called, a file re-read).
    func authenticate(_ newCredentials: HearthCredentials?, _ done: @escaping @Sendable (Result<HearthIdentity?, HearthError>) -> Void) {
        queue.async {
            let chosen: HearthCredentials
            do {
                chosen = try (newCredentials.map { $0.resolved() } ?? self.credentials).get()
            } catch {
                return done(.failure(HearthError.from(error)))
            }
            guard !chosen.isAnonymous else { return done(.failure(.invalid("no credentials to authenticate with: pass a token"))) }
            chosen.helloFields { fields in
                self.queue.async {
                    guard case .success(let fields) = fields else { return done(fields.map { _ in nil }) }
                    self.submit(fields.merging(["op": .string("hello")]) { $1 }) { result in
                        switch result {
                        case .success(let obj):
                            self.credentials = .success(chosen)
                            self.helloFields = fields
                            let who = HearthIdentity(auth: obj["auth"])
                            self.identity.set(who)
                            done(.success(who))
                        case .failure(let error):
                            done(.failure(error))
                        }
                    }
                }
            }
        }
    }

    /// Sends the new link's hello (after asking the credentials for their field); the link is ready once it
    /// is answered.
    private func beginHello(on l: Link, with creds: HearthCredentials) {
        authenticating = true
        creds.helloFields { fields in
            self.queue.async {
                guard self.link === l else { return }
                switch fields {
                case .failure(let error):
                    self.helloRefused(on: l, error)
                case .success(let fields):
                    self.helloFields = fields
                    var req = fields
                    req["op"] = .string("hello")
                    // Another node may be behind what this connection saw (one node never goes back).
                    if self.seenSeq > 0 && self.addresses.count > 1 { req["minSeq"] = .int(self.seenSeq) }
                    let withHeartbeats = !self.listeners.isEmpty && self.settings.heartbeatInterval > 0
                    if withHeartbeats {
                        req["heartbeatMs"] = .int(self.heartbeatMs)
                        self.helloSent = true
                    }
                    self.write(req, on: l) { result in
                        guard self.link === l else { return }
                        switch result {
                        case .success(let obj):
                            self.noteSeq(obj)
                            self.authenticating = false
                            if withHeartbeats { self.heartbeatsOn = true }
                            self.identity.set(HearthIdentity(auth: obj["auth"]))
                            self.linkReady(l)
                        case .failure(let error):
                            self.helloRefused(on: l, error)
                        }
                    }
                }
            }
        }
    }

    /// The link may carry requests: listeners (re-)subscribe, then the held requests go out in order.
    private func linkReady(_ l: Link) {
        state.set(.connected)
        for core in listeners.values.sorted(by: { $0.localID < $1.localID }) { issueListen(core) }
        let waiting = held
        held = []
        for h in waiting { write(h.request, on: l, h.handler) }
    }

    /// The hello failed: the held requests fail and every listener ends with the error; the link closes.
    private func helloRefused(on l: Link, _ error: HearthError) {
        authenticating = false
        let waiting = held
        held = []
        let ended = listeners.values.sorted { $0.localID < $1.localID }
        listeners.removeAll()
        for core in ended { core.sub = nil }
        subs.removeAll()
        for h in waiting { h.handler(.failure(error)) }
        for core in ended { core.fail(error) }
        state.set(.disconnected(reason: "hello refused: \(error)"))
        l.close("hello refused: \(error)")
    }

    // MARK: link lifecycle

    private func openLink() throws {
        let creds = try credentials.get()
        let fd: Int32
        var cipher: TLSCipher?
        var received: [UInt8] = []
        do {
            var connected: Int32?
            var failure: Error?
            for _ in addresses.indices {
                let a = addresses[nextAddress]
                nextAddress = (nextAddress + 1) % addresses.count
                do {
                    connected = try Socket.connect(host: a.host, port: a.port, timeout: settings.connectTimeout)
                    (host, port) = a
                    break
                } catch {
                    failure = error
                }
            }
            guard let connected else { throw failure! }
            fd = connected
            if let tls = settings.tls {
                do {
                    if tlsClient == nil { tlsClient = try TLSClient(tls) }
                    let c = try tlsClient!.cipher(host: host)
                    received = try c.handshake(fd: fd, endpoint: "\(host):\(port)", timeout: settings.connectTimeout)
                    cipher = c
                } catch {
                    Socket.closeDescriptor(fd)
                    throw error
                }
            }
        } catch {
            state.set(.disconnected(reason: "\(error)"))
            if !listeners.isEmpty { scheduleReconnect() }
            throw error
        }
        let l = Link(fd: fd, queue: queue, cipher: cipher, received: received,
                     onLine: { [unowned self] line in self.handleLine(line) },
                     onClose: { [unowned self] reason in self.linkClosed(reason) })
        link = l
        helloSent = false
        heartbeatsOn = false
        helloFields = [:]
        l.start()
        watchLiveness(of: l)
        // A hello first with credentials, or to catch up with what this connection has seen on another node.
        if creds.isAnonymous && (seenSeq == 0 || addresses.count == 1) { linkReady(l) } else { beginHello(on: l, with: creds) }
    }

    private func linkClosed(_ reason: String) {
        link = nil
        if case .connected = state.current { state.set(.disconnected(reason: "connection lost: \(reason)")) }
        authenticating = false
        let failed = Array(pending[pendingHead...]) + held.map { (id: Int64(0), handler: $0.handler) }
        pending = []
        pendingHead = 0
        held = []
        for p in failed { p.handler(.failure(.unavailable("connection lost: \(reason)"))) }
        for core in subs.values { core.sub = nil }
        subs.removeAll()
        if !listeners.isEmpty && !terminated { scheduleReconnect() }
    }

    private func scheduleReconnect() {
        guard !reconnectScheduled, !terminated else { return }
        reconnectScheduled = true
        reconnectDelay = reconnectDelay == 0 ? 0.05 : min(reconnectDelay * 2, settings.maxReconnectDelay)
        queue.asyncAfter(deadline: .now() + reconnectDelay) {
            self.reconnectScheduled = false
            guard self.link == nil, !self.terminated, !self.listeners.isEmpty else { return }
            try? self.openLink()
        }
    }

    /// With heartbeats on, a link that has been silent for three intervals (plus a second) is presumed dead
    /// and closed, which starts a reconnect.
    private func watchLiveness(of l: Link) {
        let interval = settings.heartbeatInterval
        guard interval > 0 else { return }
        queue.asyncAfter(deadline: .now() + interval) { [weak self, weak l] in
            guard let self, let l, l.isOpen, self.link === l else { return }
            let silentNs = DispatchTime.now().uptimeNanoseconds - l.lastReceived.uptimeNanoseconds
            if self.heartbeatsOn, !self.subs.isEmpty, Double(silentNs) / 1e9 > interval * 3 + 1 {
                l.close("no heartbeat for \(Double(silentNs) / 1e9) s")
            } else {
                self.watchLiveness(of: l)
            }
        }
    }

    // MARK: incoming lines

    private func handleLine(_ line: ArraySlice<UInt8>) {
        guard case .object(let obj)? = try? JSON.parse(line) else {
            link?.close("the server sent a line that is not a JSON object")
            return
        }
        if obj["ok"] != nil { return handleResponse(obj) }
        guard let type = obj["type"]?.stringValue else { return }
        noteSeq(obj)
        if type == "heartbeat" {
            if let seq = obj["seq"]?.intValue { for core in subs.values { core.advance(toHeartbeat: seq) } }
            return
        }
        guard let sub = obj["sub"]?.stringValue, let core = subs[sub] else { return }
        switch type {
        case "snapshot":
            switch core.apply(snapshot: obj) {
            case .applied: break
            case .resync: resync(core)
            case .failed(let error):
                dropListener(core, unlisten: true)
                core.fail(error)
            }
        case "error":
            dropListener(core, unlisten: false)
            core.fail(HearthError(response: .object(obj)))
        default:
            break
        }
    }

    private func handleResponse(_ obj: [String: JSON]) {
        guard pendingHead < pending.count else { return }
        var index = pendingHead
        if let id = obj["id"]?.intValue, let found = pending[pendingHead...].firstIndex(where: { $0.id == id }) {
            index = found
        }
        let handler = pending[index].handler
        if index == pendingHead {
            pendingHead += 1
            if pendingHead > 1024 && pendingHead * 2 > pending.count {
                pending.removeFirst(pendingHead)
                pendingHead = 0
            }
        } else {
            pending.remove(at: index)
        }
        reconnectDelay = 0   // the link works: the next drop starts the backoff afresh
        noteSeq(obj)
        if obj["ok"]?.boolValue == true {
            handler(.success(obj))
        } else {
            handler(.failure(HearthError(response: .object(obj))))
        }
    }

    // MARK: listeners

    /// Registers a listener and subscribes it (now, or when the connection comes up).
    func addListener(_ core: ListenerCore) {
        queue.async {
            guard !self.terminated else { return core.fail(.unavailable("the Hearth instance was terminated")) }
            if case .failure(let error) = self.credentials { return core.fail(error) }
            self.listeners[core.localID] = core
            if self.link == nil {
                if (try? self.openLink()) == nil { self.scheduleReconnect() }
            } else {
                self.issueListen(core)
            }
        }
    }

    /// Unsubscribes a listener; no snapshot reaches it afterwards.
    func removeListener(_ core: ListenerCore) {
        queue.async { self.dropListener(core, unlisten: true) }
    }

    private func dropListener(_ core: ListenerCore, unlisten: Bool) {
        listeners[core.localID] = nil
        if let sub = core.sub {
            subs[sub] = nil
            if unlisten, link != nil { submit(["op": .string("unlisten"), "sub": .string(sub)]) { _ in } }
        }
        core.sub = nil
    }

    private func issueListen(_ core: ListenerCore) {
        if !helloSent, settings.heartbeatInterval > 0 {
            helloSent = true
            // An older server refuses `hello`: then there are no heartbeats and no liveness check. The
            // credentials go along, so the connection keeps its identity.
            let l = link
            let hello = helloFields.merging(["op": .string("hello"), "heartbeatMs": .int(heartbeatMs)]) { $1 }
            submit(hello) { [unowned self] result in
                if case .success = result, self.link === l { self.heartbeatsOn = true }
            }
        }
        submit(core.listenRequest()) { [unowned self] result in
            switch result {
            case .success(let obj):
                guard let sub = obj["sub"]?.stringValue else {
                    self.dropListener(core, unlisten: false)
                    return core.fail(.internalError("listen answered without a sub"))
                }
                guard self.listeners[core.localID] === core else {
                    self.submit(["op": .string("unlisten"), "sub": .string(sub)]) { _ in }
                    return
                }
                core.sub = sub
                // The history this subscription's seqs belong to; it becomes the listener's once one of its
                // snapshots is applied (a drop before that keeps the previous seq and history together).
                core.subscriptionHistory = obj["history"]?.stringValue
                self.subs[sub] = core
            case .failure(let error):
                // A drop is retried on reconnect; anything else ends the listener.
                guard error.code != .unavailable || self.terminated else { return }
                guard self.listeners[core.localID] === core else { return }
                self.dropListener(core, unlisten: false)
                core.fail(error)
            }
        }
    }

    /// The heartbeat period asked of the server, within its 100 ms to 1 h range.
    private var heartbeatMs: Int64 {
        min(max(Int64((min(settings.heartbeatInterval, 3600) * 1000).rounded()), 100), 3_600_000)
    }

    /// The listener's state could not be continued from a snapshot: subscribe afresh (the listener diffs the
    /// fresh initial snapshot against what it had).
    private func resync(_ core: ListenerCore) {
        if let sub = core.sub {
            subs[sub] = nil
            submit(["op": .string("unlisten"), "sub": .string(sub)]) { _ in }
        }
        core.sub = nil
        core.prepareResync()
        issueListen(core)
    }
}
