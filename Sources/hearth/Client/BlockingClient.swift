#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthCrypto

/// A blocking newline-delimited JSON client over one POSIX TCP socket, for the one-shot subcommands and
/// the shell. Not thread-safe. Lines are sent with `send(line:)`; responses are read whole with
/// `readLine(timeout:)`, or incrementally with `readAvailable(_:)` after `poll` says the socket is readable.
/// With a TLS context every byte on the socket is TLS: the handshake completes in `init`, and each read
/// decrypts everything that arrived, so the lines `poll` announced are in the line buffer afterwards.
final class BlockingClient {
    let fd: Int32
    let endpoint: String
    /// Who the daemon accepted this connection as (set by `ConnectionOptions.connect` after the hello).
    var identity: String?
    private var framer = LineBuffer()
    private var tls: TLSSession?

    /// Connects to `host:port` (IP literal, `localhost`, or a name the resolver knows), with `TCP_NODELAY`,
    /// then, with `tls`, completes a TLS handshake (the certificate must name `host`). Throws
    /// `ClientError.connect` if no address accepts or the handshake fails within `timeout` seconds.
    convenience init(host: String, port: Int, timeout: Double, tls: TLSContext?) throws(ClientError) {
        try self.init(host: host, port: port, timeout: timeout)
        guard let tls else { return }
        let session: TLSSession
        do { session = try TLSSession(context: tls, serverName: host) } catch { throw .connect("TLS: \(error.message)") }
        self.tls = session
        try handshake(session, timeout: timeout)
    }

    /// Connects to `host:port` in plain text; see `init(host:port:timeout:tls:)`.
    init(host: String, port: Int, timeout: Double) throws(ClientError) {
        endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .connect("cannot resolve '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let ai = node {
            node = ai.pointee.ai_next
            let s = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, ai.pointee.ai_protocol)
            guard s >= 0 else { lastError = String(cString: strerror(errno)); continue }
            if let error = BlockingClient.connect(s, ai.pointee.ai_addr, ai.pointee.ai_addrlen, timeout: timeout) {
                lastError = error
                close(s)
                continue
            }
            var one: Int32 = 1
            setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            fd = s
            return
        }
        throw .connect("cannot connect to \(endpoint): \(lastError)")
    }

    deinit { close(fd) }

    /// Non-blocking connect bounded by `timeout`; returns an error text or nil on success.
    private static func connect(_ s: Int32, _ addr: UnsafePointer<sockaddr>, _ len: socklen_t, timeout: Double) -> String? {
        let flags = fcntl(s, F_GETFL)
        _ = fcntl(s, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(s, F_SETFL, flags) }
        if Glibc.connect(s, addr, len) == 0 { return nil }
        guard errno == EINPROGRESS else { return String(cString: strerror(errno)) }
        var pfd = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, Int32(max(1, timeout * 1000)))
        if ready == 0 { return "connect timed out after \(timeout) s" }
        var err: Int32 = 0
        var errLen = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &errLen)
        return err == 0 ? nil : String(cString: strerror(err))
    }

    /// Sends `line` followed by `\n` (the line must not contain a newline).
    func send(line: [UInt8]) throws(ClientError) {
        var bytes = line
        bytes.append(10)
        if let tls {
            do { try tls.write(bytes) } catch { throw .io("TLS with \(endpoint): \(error.message)") }
            try sendTLSOutput(tls)
            return
        }
        try sendAll(bytes)
    }

    private func sendAll(_ bytes: [UInt8]) throws(ClientError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io("send to \(endpoint) failed: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    func send(line: String) throws(ClientError) { try send(line: Array(line.utf8)) }

    /// Reads the next complete line (without `\n`), waiting up to `timeout` seconds in total.
    func readLine(timeout: Double) throws(ClientError) -> [UInt8] {
        let deadline = Clock.nanos() + UInt64(max(0, timeout) * 1e9)
        while true {
            if let line = framer.next() { return line }
            let now = Clock.nanos()
            guard now < deadline else { throw .timeout(seconds: timeout) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1)))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            if try !fill() {
                if let last = framer.finish() { return last }
                throw .closed
            }
        }
    }

    /// Reads what the socket has (one `recv`, which blocks if nothing is there), calling `onLine` for each
    /// completed line. Returns false at EOF (after delivering an unterminated last line).
    func readAvailable(_ onLine: ([UInt8]) -> Void) throws(ClientError) -> Bool {
        let open = try fill()
        while let line = framer.next() { onLine(line) }
        if !open, let last = framer.finish() { onLine(last) }
        return open
    }

    /// One `recv` into the line buffer (decrypted with TLS); false at EOF (or the daemon's close_notify).
    private func fill() throws(ClientError) -> Bool {
        guard let chunk = try receiveChunk() else { return false }
        guard let tls else {
            framer.append(chunk[...])
            return true
        }
        let received: (plaintext: [UInt8], progress: TLSSession.Progress)
        do {
            received = try tls.receive(chunk)
        } catch {
            try? sendTLSOutput(tls)
            throw .io("TLS with \(endpoint): \(error.message)")
        }
        framer.append(received.plaintext[...])
        try sendTLSOutput(tls)
        return !received.progress.peerClosed
    }

    /// One `recv`; nil at EOF.
    private func receiveChunk() throws(ClientError) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        var n = 0
        repeat {
            n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        } while n < 0 && errno == EINTR
        if n < 0 { throw .io("read from \(endpoint) failed: \(String(cString: strerror(errno)))") }
        if n == 0 { return nil }
        chunk.removeSubrange(n...)
        return chunk
    }

    // MARK: TLS

    private func sendTLSOutput(_ tls: TLSSession) throws(ClientError) {
        let out = tls.takeOutput()
        if !out.isEmpty { try sendAll(out) }
    }

    /// Runs the handshake to its end within `timeout` seconds.
    private func handshake(_ tls: TLSSession, timeout: Double) throws(ClientError) {
        let deadline = Clock.nanos() + UInt64(max(0, timeout) * 1e9)
        while !tls.isEstablished {
            try sendTLSOutput(tls)
            let now = Clock.nanos()
            guard now < deadline else { throw .connect("TLS handshake with \(endpoint) did not finish within \(timeout) s") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1)))
            if ready <= 0 { continue }
            guard let chunk = try receiveChunk() else {
                throw .connect("TLS handshake with \(endpoint) failed: the daemon closed the connection (is TLS on for this port?)")
            }
            do {
                let (plaintext, _) = try tls.receive(chunk)
                framer.append(plaintext[...])
            } catch {
                try? sendTLSOutput(tls)
                throw .connect("TLS with \(endpoint): \(error.message)")
            }
        }
        try sendTLSOutput(tls)
    }
}

/// Splits a byte stream into lines.
struct LineBuffer {
    private var bytes: [UInt8] = []
    private var start = 0
    /// Bytes from `start` up to here hold no newline: a long line arriving in many chunks is searched once,
    /// not again from its start after each chunk.
    private var scanned = 0

    mutating func append(_ chunk: ArraySlice<UInt8>) {
        if start > 0 && start == bytes.count { bytes.removeAll(keepingCapacity: true); start = 0; scanned = 0 }
        bytes.append(contentsOf: chunk)
    }

    /// The next complete line without its `\n` (and one trailing `\r`), skipping blank lines.
    mutating func next() -> [UInt8]? {
        while let nl = bytes[max(start, scanned)...].firstIndex(of: 10) {
            var line = Array(bytes[start..<nl])
            start = nl + 1
            scanned = start
            if line.last == 13 { line.removeLast() }
            if !line.allSatisfy({ $0 == 32 || $0 == 9 }) { return line }
        }
        scanned = bytes.count
        if start > 65536 { bytes.removeSubrange(..<start); scanned -= start; start = 0 }
        return nil
    }

    /// The unterminated rest at end of input, if it is not blank.
    mutating func finish() -> [UInt8]? {
        var rest = Array(bytes[start...])
        bytes.removeAll()
        start = 0
        scanned = 0
        if rest.last == 13 { rest.removeLast() }
        return rest.allSatisfy({ $0 == 32 || $0 == 9 }) ? nil : rest
    }
}
