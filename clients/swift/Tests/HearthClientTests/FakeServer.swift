import Foundation
import HearthTesting

/// A scripted stand-in for hearthd on 127.0.0.1: the test accepts the client's connections and reads its
/// requests and writes lines by hand, to drive the client's listener logic through exact protocol
/// sequences (snapshots, heartbeats, drops, resets) whatever the real daemon implements.
final class FakeServer: @unchecked Sendable {
    let port: Int
    private let listenFD: Int32

    init() throws {
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listenFD = listenFD
        var one: Int32 = 1
        setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(listenFD, p, len) == 0 && listen(listenFD, 8) == 0 && getsockname(listenFD, p, &len) == 0
            }
        }
        guard ok else { throw TestFailure("fake server cannot listen") }
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { close(listenFD) }

    /// Waits for the client's next connection (on a GCD thread, not the test's cooperative pool).
    func accept(timeout: Double = TestTimeouts.barrier) async throws -> FakeConnection {
        try await offPool { try self.acceptBlocking(timeout: timeout) }
    }

    private func acceptBlocking(timeout: Double) throws -> FakeConnection {
        var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { throw TestFailure("no connection within \(timeout) s") }
        let fd = Glibc.accept(listenFD, nil, nil)
        guard fd >= 0 else { throw TestFailure("accept failed") }
        return FakeConnection(fd: fd)
    }

    /// True when no connection arrives within `seconds`.
    func staysQuiet(for seconds: Double) async -> Bool {
        (try? await offPool { self.quietBlocking(seconds) }) ?? false
    }

    private func quietBlocking(_ seconds: Double) -> Bool {
        var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, Int32(seconds * 1000)) == 0
    }
}

/// One accepted connection of the fake server.
final class FakeConnection: @unchecked Sendable {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var closed = false

    init(fd: Int32) { self.fd = fd }
    deinit { close() }

    /// Reads the next request line as an object (throws on timeout or EOF), off the cooperative pool.
    func read(timeout: Double = TestTimeouts.barrier) async throws -> [String: Any] {
        try await offPool { Unchecked(try self.readBlocking(timeout: timeout)) }.value
    }

    /// Reads the next request line exactly as sent (without the newline).
    func readLine(timeout: Double = TestTimeouts.barrier) async throws -> String {
        try await offPool { String(decoding: try self.readLineBlocking(timeout: timeout), as: UTF8.self) }
    }

    private func readBlocking(timeout: Double) throws -> [String: Any] {
        let line = Data(try readLineBlocking(timeout: timeout))
        guard let obj = try JSONSerialization.jsonObject(with: line) as? [String: Any] else { throw TestFailure("not an object") }
        return obj
    }

    private func readLineBlocking(timeout: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return line
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline.timeIntervalSinceNow
            guard left > 0, poll(&pfd, 1, Int32(left * 1000)) > 0 else { throw TestFailure("no request within \(timeout) s") }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { throw TestFailure("client closed the connection") }
            buffer += chunk[..<n]
        }
    }

    /// Reads requests until one with this op, answering `hello` with ok on the way; returns it.
    func expect(_ op: String, timeout: Double = TestTimeouts.barrier) async throws -> [String: Any] {
        while true {
            let r = try await read(timeout: timeout)
            if r["op"] as? String == op { return r }
            if r["op"] as? String == "hello" { try reply(r, #""ok":true"#); continue }
            throw TestFailure("expected \(op), got \(r)")
        }
    }

    /// Answers `request` with `{"id":<its id>,<fields>}`.
    func reply(_ request: [String: Any], _ fields: String) throws {
        let id = request["id"].map { "\($0)" } ?? "null"
        try send(#"{"id":\#(id),\#(fields)}"#)
    }

    func send(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed") }
            sent += n
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}

/// Runs blocking work on a thread of its own: the tests' cooperative pool is small (one thread per core) and
/// blocking it would starve the other tests running in parallel; GCD's global queue is as narrow on Linux,
/// so several tests each blocked in a poll there (up to a minute each) would hold back the others' polls.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// Hands a non-Sendable value from the blocking thread to the awaiting test.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// A wire document for scripted snapshots.
func fakeDoc(_ path: String, _ data: String, updated: Int) -> String {
    let id = path.split(separator: "/").last!
    return #"{"path":"\#(path)","id":"\#(id)","data":\#(data),"createTime":"2026-11-29T12:00:00.000000Z","updateTime":"2026-11-29T12:00:\#(String(format: "%02d", updated)).000000Z"}"#
}
