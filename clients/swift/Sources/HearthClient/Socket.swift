#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The few POSIX socket calls the connection needs, with the Linux/Darwin differences in one place.
enum Socket {
    #if canImport(Darwin)
    static let streamType = SOCK_STREAM
    static let sendFlags: Int32 = 0
    #else
    static let streamType = Int32(SOCK_STREAM.rawValue)
    static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    /// Resolves `host` and connects a TCP socket within `timeout` seconds; the returned descriptor is
    /// non-blocking with TCP_NODELAY (and SO_NOSIGPIPE on Darwin). Throws `.unavailable`.
    static func connect(host: String, port: Int, timeout: Double) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamType
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw HearthError.unavailable("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            ai = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            guard fd >= 0 else { lastError = errnoText(); continue }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            if sysConnect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 || waitConnected(fd, timeout, &lastError) {
                setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY)
                #if canImport(Darwin)
                setOption(fd, SOL_SOCKET, SO_NOSIGPIPE)
                #endif
                return fd
            }
            close(fd)
        }
        throw HearthError.unavailable("cannot connect to \(host):\(port): \(lastError)")
    }

    private static func waitConnected(_ fd: Int32, _ timeout: Double, _ error: inout String) -> Bool {
        guard errno == EINPROGRESS else { error = errnoText(); return false }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let r = poll(&pfd, 1, Int32(max(1, timeout * 1000)))
        guard r > 0 else { error = r == 0 ? "timed out" : errnoText(); return false }
        var soError: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
        guard soError == 0 else { error = String(cString: strerror(soError)); return false }
        return true
    }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32) {
        var one: Int32 = 1
        setsockopt(fd, level, name, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends what it can without blocking: the byte count, 0 when the socket is full, nil on a failure.
    static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int? {
        let n = bytes.withUnsafeBytes { sysSend(fd, $0.baseAddress, $0.count, sendFlags) }
        if n >= 0 { return n }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : nil
    }

    /// Receives without blocking: the bytes, [] when nothing is ready, nil at end of stream or on a failure.
    static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> Int? {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { return n }
        if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        return nil
    }

    static func shutdownBoth(_ fd: Int32) {
        #if canImport(Darwin)
        _ = shutdown(fd, SHUT_RDWR)
        #else
        _ = shutdown(fd, Int32(SHUT_RDWR))
        #endif
    }

    static func closeDescriptor(_ fd: Int32) { close(fd) }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

#if canImport(Darwin)
private func sysConnect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>!, _ len: socklen_t) -> Int32 { Darwin.connect(fd, addr, len) }
private func sysSend(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { Darwin.send(fd, p, n, f) }
#elseif canImport(Glibc)
private func sysConnect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>!, _ len: socklen_t) -> Int32 { Glibc.connect(fd, addr, len) }
private func sysSend(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { Glibc.send(fd, p, n, f) }
#else
private func sysConnect(_ fd: Int32, _ addr: UnsafePointer<sockaddr>!, _ len: socklen_t) -> Int32 { Musl.connect(fd, addr, len) }
private func sysSend(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { Musl.send(fd, p, n, f) }
#endif
