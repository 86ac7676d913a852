import Foundation
import HearthCrypto

/// A blocking line client over a POSIX socket, for tests: send raw lines, read lines with a timeout, and
/// parse responses with Foundation's JSONSerialization (an oracle independent of the server's own JSON code).
///
/// With a TLS context (`init(host:port:tls:serverName:)`) the same calls speak TLS: the handshake completes in
/// `init` (throwing the TLS error when it fails) and every line is encrypted and decrypted.
public final class WireClient {
    public let fd: Int32
    private var buffer: [UInt8] = []
    /// The TLS session, when the client speaks TLS.
    public private(set) var tls: TLSSession?

    /// Connects and completes a TLS handshake; the certificate must name `serverName` (default `host`).
    /// Throws the `TLSError` when the handshake fails.
    public convenience init(host: String = "127.0.0.1", port: Int, tls context: TLSContext, serverName: String? = nil,
                            timeout: Double = 10) throws {
        try self.init(host: host, port: port)
        let session = try TLSSession(context: context, serverName: serverName ?? host)
        tls = session
        let deadline = Date().addingTimeInterval(timeout)
        while !session.isEstablished {
            try sendCiphertext()
            guard let chunk = try receiveChunk(until: deadline) else {
                throw TestFailure("the server closed the connection during the TLS handshake")
            }
            do {
                let (plain, _) = try session.receive(chunk)
                buffer += plain
            } catch {
                try? sendCiphertext()
                throw error
            }
        }
        try sendCiphertext()
    }

    private func sendCiphertext() throws {
        guard let tls else { return }
        let out = tls.takeOutput()
        if !out.isEmpty { try sendPlainSocket(out) }
    }

    /// The most one read takes from the socket, and a pause before each: a client that reads slowly.
    public var readChunk = 65536
    public var readPauseMicros: UInt32 = 0

    /// One `recv` (waiting until `deadline`); nil at EOF. Throws on timeout.
    private func receiveChunk(until deadline: Date) throws -> [UInt8]? {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0 else { throw TestFailure("timed out waiting for data") }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, Int32(remaining * 1000)) == 0 { throw TestFailure("timed out waiting for data") }
        if readPauseMicros > 0 { usleep(readPauseMicros) }
        var chunk = [UInt8](repeating: 0, count: readChunk)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Array(chunk[..<n])
    }

    /// `receiveBuffer`, when given, caps the kernel's receive buffer (set before connecting), for tests of
    /// subscribers that stop reading.
    public init(host: String = "127.0.0.1", port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &addr.sin_addr)
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); throw TestFailure("connect to \(host):\(port) failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends bytes as they are (encrypted first over TLS).
    public func sendRaw(_ bytes: [UInt8]) throws {
        if let tls {
            try tls.write(bytes)
            try sendCiphertext()
            return
        }
        try sendPlainSocket(bytes)
    }

    private func sendPlainSocket(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send failed: errno \(errno)") }
            sent += n
        }
    }

    /// Sends one line (a newline is added).
    public func send(_ line: String) throws { try sendRaw(Array((line + "\n").utf8)) }

    /// Reads one line (without its newline); throws on timeout or EOF. Invalid UTF-8 is repaired (use
    /// `readLineBytes` to see the bytes as sent).
    public func readLine(timeout: Double = 10) throws -> String {
        String(decoding: try readLineBytes(timeout: timeout), as: UTF8.self)
    }

    /// Reads one line's bytes exactly as the server sent them (without the newline); throws on timeout or EOF.
    public func readLineBytes(timeout: Double = 10) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var scanned = 0   // no newline before this index: a long line is not scanned again with each chunk
        while true {
            if let nl = buffer[scanned...].firstIndex(of: 10) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return line
            }
            scanned = buffer.count
            guard let chunk = try receiveChunk(until: deadline) else {
                throw TestFailure("connection closed while waiting for a line")
            }
            if let tls {
                let (plain, progress) = try tls.receive(chunk)
                buffer += plain
                try sendCiphertext()
                if progress.peerClosed && buffer.firstIndex(of: 10) == nil {
                    throw TestFailure("connection closed (close_notify) while waiting for a line")
                }
            } else {
                buffer.append(contentsOf: chunk)
            }
        }
    }

    /// Shuts down the sending side (a FIN, as `nc -N` sends at the end of its input); reading goes on.
    public func shutdownWrite() {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// True when the server closed the connection (EOF within `timeout`).
    public func isClosedByPeer(timeout: Double = 5) -> Bool {
        if let tls {
            // Over TLS the end is close_notify (or EOF); other records in between are read and dropped.
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let chunk: [UInt8]?
                do { chunk = try receiveChunk(until: deadline) } catch { return false }   // timed out
                guard let chunk else { return true }                                      // EOF
                guard let (_, progress) = try? tls.receive(chunk) else { return true }     // a fatal alert
                if progress.peerClosed { return true }
            }
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { return false }
        var b: UInt8 = 0
        return recv(fd, &b, 1, Int32(MSG_PEEK)) == 0
    }

    /// Reads a line and parses it as a JSON object.
    public func readObject(timeout: Double = 10) throws -> [String: Any] {
        let line = try readLine(timeout: timeout)
        guard let obj = try JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed]) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(line)")
        }
        return obj
    }

    /// Sends a line and reads the response object.
    public func request(_ line: String, timeout: Double = 10) throws -> [String: Any] {
        try send(line)
        return try readObject(timeout: timeout)
    }

    /// Sends an object (encoded with JSONSerialization) and reads the response object.
    public func call(_ object: [String: Any], timeout: Double = 10) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return try request(String(decoding: data, as: UTF8.self), timeout: timeout)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// `ok` is true.
    public var isOK: Bool { self["ok"] as? Bool == true }
    /// The error code of a failed response.
    public var errorCode: String? { (self["error"] as? [String: Any])?["code"] as? String }
    public var errorMessage: String? { (self["error"] as? [String: Any])?["message"] as? String }
}

extension WireClient {
    /// Asks `stats` until the SQLite store's applier has applied every acknowledged commit (it gathers a backlog
    /// for up to 500 ms), for at most `timeout` seconds; returns the last backlog seen (0 once applied).
    public func waitForAppliedBacklog(timeout: Double = 10) throws -> Int {
        var backlog = -1
        let deadline = Date().addingTimeInterval(timeout)
        while backlog != 0 && Date() < deadline {
            let store = try request(#"{"op":"stats"}"#)["store"] as? [String: Any]
            backlog = (store?["applier"] as? [String: Any])?["backlogCommits"] as? Int ?? -1
        }
        return backlog
    }

    /// Asks `index list` (each ask a round trip: no sleeps) until no declared index is still being built.
    public func waitUntilIndexesAreReady() throws {
        for _ in 0..<10_000 {
            let list = try request(#"{"op":"index","action":"list"}"#)
            let states = (list["indexes"] as? [[String: Any]] ?? []).map { $0["state"] as? String ?? "" }
            if !states.isEmpty, states.allSatisfy({ $0 == "ready" }) { return }
        }
        throw TestFailure("the index never became ready")
    }
}
