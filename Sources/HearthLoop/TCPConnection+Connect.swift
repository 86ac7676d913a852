import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The client side of TCPConnection: EventLoop.connect(host:port:_:).
//
// The connection object (and its handle) exists from the start, so every failure, even an invalid
// address, is reported from the handle's close callback: `done` never runs before `connect` returns.

extension TCPConnection {
    static func connect(loop: EventLoop, host: String, port: Int,
                        _ done: @escaping (Result<TCPConnection, LoopError>) -> Void) {
        let tcp = allocZeroed(uv_tcp_t.self)
        var status = loop.isShutDown ? LoopError.canceled : uv_tcp_init(loop.uvLoop, tcp)
        if status < 0 {
            free(tcp)
            // No handle to close: report on the next turn through a one-shot timer (or right away if the
            // loop is gone, since nothing would ever run it).
            let error = LoopError(code: status, operation: "connect \(host):\(port)")
            if loop.isShutDown { done(.failure(error)) } else { loop.timer(after: 0) { done(.failure(error)) } }
            return
        }
        var storage = sockaddr_storage()
        var parseError: LoopError?
        do { try parseAddress(host: host, port: port, into: &storage) } catch { parseError = error }
        let peer = parseError == nil ? withSockaddr(&storage) { formatAddress($0) } : "\(host):\(port)"
        let connection = TCPConnection(loop: loop, handle: tcp, peer: peer)
        connection.connectDone = done
        if let parseError {
            connection.fail(parseError)   // reported from the close callback
            return
        }
        let req = allocZeroed(uv_connect_t.self)
        status = withSockaddr(&storage) { uv_tcp_connect(req, tcp, $0, connectionConnectCallback) }
        if status < 0 {
            free(req)
            connection.fail(LoopError(code: status, operation: "connect \(peer)"))
        }
    }

    func connectCompleted(_ status: Int32) {
        guard let done = connectDone, let handle else { return }
        if status < 0 {
            fail(LoopError(code: status, operation: "connect \(peer)"))
            return
        }
        connectDone = nil
        uv_tcp_nodelay(handle, 1)
        done(.success(self))
    }
}

private func connectionConnectCallback(_ req: UnsafeMutablePointer<uv_connect_t>?, _ status: Int32) {
    let connection = owner(req?.pointee.handle?.pointee.data, as: TCPConnection.self)
    free(req)
    connection?.connectCompleted(status)
}
