#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension TLSCipher {
    /// Completes the handshake on `fd` (connected, non-blocking) within `timeout` seconds. Returns any plaintext
    /// that arrived with the daemon's last handshake message. Throws `.unavailable` naming `endpoint` and the
    /// reason (a failed certificate check, a daemon that answered in plain text, the timeout).
    func handshake(fd: Int32, endpoint: String, timeout: Double) throws -> [UInt8] {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0.001, timeout) * 1e9)
        var plaintext: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        func remainingMs() throws -> Int32 {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                throw HearthError.unavailable("TLS handshake with \(endpoint) did not finish within \(timeout) s")
            }
            return Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1))
        }
        func sendAll(_ bytes: [UInt8]) throws {
            var sent = 0
            while sent < bytes.count {
                guard let n = Socket.send(fd, bytes[sent...]) else {
                    throw HearthError.unavailable("TLS handshake with \(endpoint): send failed: \(Socket.errnoText())")
                }
                sent += n
                if n == 0 {
                    var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&pfd, 1, try remainingMs())
                }
            }
        }
        while true {
            try sendAll(takeOutput())
            if isEstablished { return plaintext }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, try remainingMs()) <= 0 { continue }
            guard let n = Socket.receive(fd, into: &chunk) else {
                throw HearthError.unavailable("TLS handshake with \(endpoint) failed: the daemon closed the connection (is TLS on for this port?)")
            }
            if n == 0 { continue }
            do {
                plaintext += try receive(chunk[..<n]).plaintext
            } catch let error as HearthError {
                try? sendAll(takeOutput())   // the alert telling the daemon why
                throw HearthError.unavailable("TLS with \(endpoint): \(error.message)")
            }
        }
    }
}
