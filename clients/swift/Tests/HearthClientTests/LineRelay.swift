import Foundation
import HearthTesting

/// A TCP relay on 127.0.0.1 in front of a real daemon, for tests that replace the daemon behind a client's
/// address: each new connection is relayed to `targetPort`, which the test may change (nil: none; a
/// connection that cannot be relayed is closed at once, like a refused one), and every line is recorded, per
/// direction, as a parsed object. Stop it with `stop()`.
final class LineRelay: @unchecked Sendable {
    let port: Int
    private let listenFD: Int32
    private let lock = NSLock()
    private var target: Int?
    private var fromClients: [[String: Any]] = []
    private var fromDaemon: [[String: Any]] = []
    private var links: [ObjectIdentifier: RelayLink] = [:]
    private var stopped = false
    private let acceptLoopEnded = DispatchSemaphore(value: 0)

    init(targetPort: Int) throws {
        target = targetPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listenFD = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, p, &len) == 0
            }
        }
        guard ok else { Glibc.close(fd); throw TestFailure("relay cannot listen") }
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { self.acceptLoop() }
    }

    /// Where new connections go (nil: nowhere, they are closed).
    var targetPort: Int? {
        get { lock.withLock { target } }
        set { lock.withLock { target = newValue } }
    }

    /// Every line the clients sent, in order.
    var requests: [[String: Any]] { lock.withLock { fromClients } }
    /// Every line the daemons sent, in order.
    var responses: [[String: Any]] { lock.withLock { fromDaemon } }

    /// Stops accepting and cuts every relayed connection; waits for the accept loop to end.
    func stop() {
        let live: [RelayLink]? = lock.withLock {
            guard !stopped else { return nil }
            stopped = true
            return Array(links.values)
        }
        guard let live else { return }
        for l in live { l.cut() }
        acceptLoopEnded.wait()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func acceptLoop() {
        while !isStopped {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            let client = Glibc.accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            guard let to = targetPort, let upstream = Self.connect(port: to) else { Glibc.close(client); continue }
            let link = RelayLink(client, upstream)
            let admitted: Bool = lock.withLock {
                guard !stopped else { return false }
                links[ObjectIdentifier(link)] = link
                return true
            }
            guard admitted else { link.cut(); link.finished(); link.finished(); break }
            DispatchQueue.global().async { self.pump(link, from: client, to: upstream, fromClient: true) }
            DispatchQueue.global().async { self.pump(link, from: upstream, to: client, fromClient: false) }
        }
        Glibc.close(listenFD)
        acceptLoopEnded.signal()
    }

    private func pump(_ link: RelayLink, from: Int32, to: Int32, fromClient: Bool) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        loop: while true {
            let n = recv(from, &chunk, chunk.count, 0)
            guard n > 0 else { break }
            pending += chunk[..<n]
            var objects: [[String: Any]] = []
            while let nl = pending.firstIndex(of: 10) {
                if let obj = try? JSONSerialization.jsonObject(with: Data(pending[..<nl])) as? [String: Any] { objects.append(obj) }
                pending.removeSubrange(...nl)
            }
            if !objects.isEmpty {
                lock.withLock { if fromClient { fromClients += objects } else { fromDaemon += objects } }
            }
            var sent = 0
            while sent < n {
                let m = chunk[sent..<n].withUnsafeBytes { Glibc.send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard m > 0 else { break loop }
                sent += m
            }
        }
        link.cut()
        if link.finished() { lock.withLock { links[ObjectIdentifier(link)] = nil } }
    }

    private static func connect(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { Glibc.close(fd); return nil }
        return fd
    }
}

/// One relayed connection: both sockets are shut down when either side ends, and closed once both pumps
/// have finished (so no descriptor is reused while a pump may still touch it).
private final class RelayLink: @unchecked Sendable {
    private let a: Int32, b: Int32
    private let lock = NSLock()
    private var pumpsLeft = 2

    init(_ a: Int32, _ b: Int32) { self.a = a; self.b = b }

    func cut() {
        lock.withLock {
            guard pumpsLeft > 0 else { return }
            shutdown(a, Int32(SHUT_RDWR))
            shutdown(b, Int32(SHUT_RDWR))
        }
    }

    /// One pump is done; true (after closing both sockets) for the second.
    @discardableResult
    func finished() -> Bool {
        lock.withLock {
            pumpsLeft -= 1
            guard pumpsLeft == 0 else { return false }
            Glibc.close(a)
            Glibc.close(b)
            return true
        }
    }
}
