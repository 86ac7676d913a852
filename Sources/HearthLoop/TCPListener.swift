import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listening TCP socket created by ``EventLoop/listen(host:port:backlog:onAccept:)``.
///
/// Loop thread only. Stays open (and keeps the loop alive) until ``close()`` or ``EventLoop/shutdown()``,
/// even if no reference to it is kept. Closing the listener does not close accepted connections.
public final class TCPListener: LoopHandleOwner {
    let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_tcp_t>?
    private var onAccept: ((TCPConnection) -> Void)?

    /// The bound port (the kernel's choice when 0 was requested).
    public let port: Int
    /// The bound address, for example `"127.0.0.1:41234"`.
    public let address: String

    /// Called when accepting a connection fails (for example `EMFILE`); the listener stays open.
    public var onAcceptError: ((LoopError) -> Void)?

    init(loop: EventLoop, host: String, port: Int, backlog: Int32,
         onAccept: @escaping (TCPConnection) -> Void) throws(LoopError) {
        self.loop = loop
        var storage = sockaddr_storage()
        try parseAddress(host: host, port: port, into: &storage)
        guard !loop.isShutDown else { throw LoopError(code: LoopError.canceled, operation: "listen \(host):\(port)") }
        let tcp = allocZeroed(uv_tcp_t.self)
        let initStatus = uv_tcp_init(loop.uvLoop, tcp)
        if initStatus < 0 {
            free(tcp)
            throw LoopError(code: initStatus, operation: "uv_tcp_init")
        }
        var status = withSockaddr(&storage) { uv_tcp_bind(tcp, $0, 0) }
        var operation = "bind \(host):\(port)"
        if status == 0 {
            status = uv_listen(asStream(tcp), backlog, listenerConnectionCallback)
            operation = "listen \(host):\(port)"
        }
        var bound = sockaddr_storage()
        if status == 0 {
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            status = withSockaddr(&bound) { uv_tcp_getsockname(tcp, $0, &length) }
            operation = "getsockname \(host):\(port)"
        }
        if status < 0 {
            uv_close(asHandle(tcp), freeHandleOnly)   // data is still nil: no owner to release
            throw LoopError(code: status, operation: operation)
        }
        self.handle = tcp
        self.port = withSockaddr(&bound) { portOf($0) }
        self.address = withSockaddr(&bound) { formatAddress($0) }
        self.onAccept = onAccept
        tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// `true` until ``close()``.
    public var isOpen: Bool { handle != nil }

    /// Stops listening and releases the socket (asynchronously, in the close callback). Idempotent.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        onAccept = nil
        onAcceptError = nil
        uv_close(asHandle(handle), releaseOwnerAndFree)
    }

    func closeForShutdown() { close() }

    func acceptOne(_ status: Int32) {
        guard let server = handle else { return }
        if status < 0 {
            onAcceptError?(LoopError(code: status, operation: "accept on \(address)"))
            return
        }
        let tcp = allocZeroed(uv_tcp_t.self)
        var result = uv_tcp_init(loop.uvLoop, tcp)
        if result < 0 {
            free(tcp)
            onAcceptError?(LoopError(code: result, operation: "uv_tcp_init"))
            return
        }
        result = uv_accept(asStream(server), asStream(tcp))
        if result < 0 {
            uv_close(asHandle(tcp), freeHandleOnly)
            onAcceptError?(LoopError(code: result, operation: "accept on \(address)"))
            return
        }
        uv_tcp_nodelay(tcp, 1)
        var peerStorage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let peer = withSockaddr(&peerStorage) { sa -> String in
            uv_tcp_getpeername(tcp, sa, &length) == 0 ? formatAddress(sa) : "?"
        }
        let connection = TCPConnection(loop: loop, handle: tcp, peer: peer)
        if let onAccept {
            onAccept(connection)
        } else {
            connection.abort()
        }
    }
}

private func listenerConnectionCallback(_ server: UnsafeMutablePointer<uv_stream_t>?, _ status: Int32) {
    owner(server?.pointee.data, as: TCPListener.self)?.acceptOne(status)
}
