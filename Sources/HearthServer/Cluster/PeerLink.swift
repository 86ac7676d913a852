import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// A follower's connection to the committer, over the same line protocol clients speak: each write a client
/// sends to the follower goes out on it as the client sent it (its `id` included), and the committer answers
/// in order, so answers are matched to writes by position. A write is answered to its client only once the
/// follower has published the seq the committer gave it (`ClusterCoordinator.forwardAnswered`), so the
/// client reads its own write on this node.
///
/// When the link fails (the committer stopped, or another node was elected), every write still unanswered
/// fails with UNAVAILABLE saying that it may or may not have been applied (a retry with the same `requestId`
/// applies it once). Loop thread only.
final class PeerLink {
    /// A write sent and not answered yet.
    struct Pending {
        let session: Session
        let slot: ResponseQueue.Slot
        let id: [UInt8]?
        let op: String
        let timing: RequestTiming
    }

    let committer: ClusterNode
    /// While rules are enforced: the cluster's admin key, sent in the link's first line, so the committer
    /// lets it speak for its clients (each write then goes inside a `forward` op naming the client).
    private let adminKey: String?
    private let loop: EventLoop
    private var conn: TCPConnection?
    private var connecting = true
    private(set) var closed = false
    /// Lines queued while connecting.
    private var outbox: [[UInt8]] = []
    /// What each line sent waits for: a write's answer, or (nil) the link's own hello.
    private var pending: [Pending?] = []
    private var pendingHead = 0
    private var framer: LineFramer
    private let parser = JSONParser(rejectsDuplicateKeys: false)
    /// When the link last heard from the committer, or began waiting for it (loop clock, ms): a committer cut
    /// off from this node (but not from the database) would otherwise leave forwarded writes waiting forever.
    private var lastHeard: UInt64 = 0
    private var watchdog: LoopTimer?
    /// How long forwarded writes may wait without a byte from the committer before the link fails.
    static let silenceMs: UInt64 = 10_000
    /// An answer: the write, the committer's whole line (without its newline), and what it says.
    var onAnswer: ((Pending, [UInt8], Answer) -> Void)?
    /// A pushed line for the request at the head (a progress line), with its newline.
    var onPush: ((Pending, [UInt8]) -> Void)?
    /// The link failed: the writes still unanswered, and why.
    var onFailure: (([Pending], HearthError) -> Void)?

    init(loop: EventLoop, committer: ClusterNode, maxLineBytes: Int, adminKey: String?) {
        self.loop = loop
        self.committer = committer
        self.adminKey = adminKey
        framer = LineFramer(maxLineBytes: maxLineBytes)
        if let adminKey {
            var w = JSONWriter(capacity: 128)
            w.beginObject()
            w.key("op"); w.string("hello")
            w.key("adminKey"); w.string(adminKey)
            w.endObject()
            w.newline()
            outbox.append(w.bytes)
            pending.append(nil)
        }
    }

    /// Connects to the committer's address.
    func open() {
        lastHeard = loop.now
        watchdog = loop.timer(after: 1000, repeat: 1000) { [unowned self] in
            guard unanswered > 0, loop.now - lastHeard > Self.silenceMs else { return }
            fail(HearthError(.unavailable, "the committer \(committer.name) did not answer for \(Self.silenceMs / 1000) s"))
        }
        guard let address = committer.address, let (host, port) = Self.split(address) else {
            loop.timer(after: 0) { [self] in fail(HearthError(.unavailable, "the committer \(committer.name) has no usable --advertise address (\(committer.address ?? "none"))")) }
            return
        }
        loop.connect(host: host, port: port) { [self] result in
            switch result {
            case .failure(let e):
                fail(HearthError(.unavailable, "cannot reach the committer \(committer.name) at \(address): \(e.message)"))
            case .success(let c):
                guard !closed else { c.close(); return }
                conn = c
                connecting = false
                c.onRead = { [unowned self] bytes in received(bytes) }
                c.onClose = { [unowned self] error in
                    fail(HearthError(.unavailable, "the connection to the committer \(committer.name) at \(address) closed\(error.map { " (\($0.message))" } ?? "")"))
                }
                c.startReading()
                for line in outbox { c.send(line) }
                if !outbox.isEmpty { c.expedite() }
                outbox = []
            }
        }
    }

    /// Sends a client's write line to the committer inside a `forward` op naming the client's identity
    /// (`ForwardedIdentity`; the committer takes it only from a link opened with the admin key while rules are
    /// enforced).
    func forward(_ line: UnsafeRawBufferPointer, as principal: Principal, _ p: Pending) {
        // Always as `forward`, rules or not: the committer then knows the line is a follower's, and its refusal
        // names the seq it was decided at, which this node publishes before it answers (`Answer.seq`).
        var w = JSONWriter(capacity: line.count + 256)
        w.beginObject()
        w.key("op"); w.string("forward")
        w.key("as"); ForwardedIdentity.write(principal, into: &w)
        w.key("request"); w.string(bytes: line)
        w.endObject()
        w.newline()
        let bytes = w.bytes
        if unanswered == 0 { lastHeard = loop.now }   // the silence counts from the first write waiting
        unanswered += 1
        pending.append(p)
        if let conn {
            conn.send(bytes)
            conn.expedite()   // a client waits for it: not behind a publication's pushed lines
        } else {
            outbox.append(bytes)
        }
    }

    /// Forwarded writes sent and not answered yet.
    private(set) var unanswered = 0

    private func received(_ bytes: UnsafeRawBufferPointer) {
        lastHeard = loop.now
        framer.feed(bytes) { event in
            guard case .line(let line) = event else {
                fail(HearthError(.unavailable, "the committer \(committer.name) sent an answer longer than the line limit"))
                return
            }
            guard !closed else { return }
            guard pendingHead < pending.count else {
                // A line with no write waiting for it: a connection-level error (the committer is closing it).
                return
            }
            let answer = Self.read(line, parser)
            if let head = pending[pendingHead], answer.isPush {
                // A push for the request being answered (deleteRecursive's progress): relayed, not an answer.
                var bytes = [UInt8](line)
                bytes.append(0x0A)
                onPush?(head, bytes)
                return
            }
            let p = pending[pendingHead]
            pendingHead += 1
            if pendingHead == pending.count { pending.removeAll(keepingCapacity: true); pendingHead = 0 }
            if p != nil { unanswered -= 1 }
            guard let p else {
                // The link's hello: refused, the committer would judge every write as anonymous.
                if !answer.ok {
                    fail(HearthError(.unavailable, "the committer \(committer.name) refused this node's admin key (every node needs the same --admin-key-file): \(String(decoding: line, as: UTF8.self))"))
                }
                return
            }
            onAnswer?(p, [UInt8](line), answer)
        }
    }

    /// What a line from the committer is, read once: a push (`"type"`, no `"ok"`) or an answer, whether ok,
    /// and its seq when it carries one (a durable commit's, or the seq a refusal was decided at).
    struct Answer {
        var isPush = false
        var ok = false
        var seq: UInt64?
    }

    private static func read(_ line: UnsafeRawBufferPointer, _ parser: JSONParser) -> Answer {
        guard let root = try? parser.parse(line), root.kind == .object else { return Answer() }
        guard let ok = root["ok"] else { return Answer(isPush: root["type"] != nil) }
        var a = Answer(ok: ok.bool == true)
        if let s = root["seq"], s.kind == .int, let v = s.int64, v >= 0 { a.seq = UInt64(v) }
        return a
    }

    /// Ends the link: the writes it still owes an answer fail with `error`, saying whether they may have
    /// reached the committer.
    func fail(_ error: HearthError) {
        guard !closed else { return }
        closed = true
        watchdog?.cancel()
        watchdog = nil
        let error = conn == nil ? HearthError(error.code, "\(error.message); the write was not sent, so it was not applied")
            : HearthError(error.code, "\(error.message); the write may or may not have been applied (send it again with the same requestId to apply it once)")
        let owed = pending[pendingHead...].compactMap { $0 }
        unanswered = 0
        pending = []
        pendingHead = 0
        outbox = []
        conn?.onRead = nil
        conn?.onClose = nil
        conn?.close()
        conn = nil
        onFailure?(owed, error)
    }

    /// "host:port", "[v6]:port".
    static func split(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
              port > 0, port <= 65535 else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        return (host, port)
    }
}
