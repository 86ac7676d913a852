import CLibUV
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Raw handle plumbing shared by every HearthLoop type.
//
// Lifetime rule used throughout: a handle is allocated zero-filled (libuv never initialises `data`),
// `handle->data` holds a *retained* reference to the Swift object owning it, and both the retain and
// the memory are released only in that handle's close callback.

/// Allocates zero-filled memory for one libuv handle or request of type `T`.
@inline(__always)
func allocZeroed<T>(_: T.Type) -> UnsafeMutablePointer<T> {
    guard let raw = calloc(1, MemoryLayout<T>.size) else {
        fatalError("HearthLoop: out of memory allocating \(T.self)")
    }
    return raw.bindMemory(to: T.self, capacity: 1)
}

/// Views any libuv handle pointer as a `uv_handle_t*`.
@inline(__always)
func asHandle<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutablePointer<uv_handle_t>(OpaquePointer(p))
}

/// Views a `uv_tcp_t*` as a `uv_stream_t*`.
@inline(__always)
func asStream(_ p: UnsafeMutablePointer<uv_tcp_t>) -> UnsafeMutablePointer<uv_stream_t> {
    UnsafeMutablePointer<uv_stream_t>(OpaquePointer(p))
}

/// Returns the Swift object stored (retained) in `handle->data`, without changing its retain count.
@inline(__always)
func owner<T: AnyObject>(_ data: UnsafeMutableRawPointer?, as _: T.Type) -> T? {
    guard let data else { return nil }
    return Unmanaged<T>.fromOpaque(data).takeUnretainedValue()
}

/// Close callback for handles whose `data` holds a retained owner: balances the retain, frees memory.
/// The owner's `handleClosed` work must already be done by the type-specific close callback.
func releaseOwnerAndFree(_ handle: UnsafeMutablePointer<uv_handle_t>?) {
    guard let handle else { return }
    if let data = handle.pointee.data {
        Unmanaged<AnyObject>.fromOpaque(data).release()
        handle.pointee.data = nil
    }
    free(handle)
}

/// Close callback for handles that carry no Swift owner (the loop's own prepare/idle handles).
func freeHandleOnly(_ handle: UnsafeMutablePointer<uv_handle_t>?) {
    free(handle)
}

/// Implemented by every Swift object that owns a libuv handle, so `EventLoop.shutdown()` can close
/// whatever is still open through the right path (firing the owner's own close notifications).
protocol LoopHandleOwner: AnyObject {
    /// Closes the handle immediately (no graceful flushing). Called on the loop thread only.
    func closeForShutdown()
}

/// Formats a socket address as `"1.2.3.4:80"` or `"[::1]:80"`.
func formatAddress(_ sa: UnsafePointer<sockaddr>) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    let family = Int32(sa.pointee.sa_family)
    guard uv_ip_name(sa, &buf, buf.count) == 0 else { return "?" }
    let host = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    let port: UInt16
    if family == AF_INET6 {
        port = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        return "[\(host)]:\(port)"
    }
    port = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
    return "\(host):\(port)"
}

/// Returns the port in a socket address (IPv4 or IPv6).
func portOf(_ sa: UnsafePointer<sockaddr>) -> Int {
    if Int32(sa.pointee.sa_family) == AF_INET6 {
        return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
    }
    return sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
}

/// Parses a numeric IPv4/IPv6 literal (or `"localhost"`, meaning 127.0.0.1) into `storage`.
func parseAddress(host: String, port: Int, into storage: inout sockaddr_storage) throws(LoopError) {
    let operation = "parse address \(host):\(port)"
    guard (0...65535).contains(port) else { throw LoopError(code: LoopError.invalidArgument, operation: operation) }
    let literal = host == "localhost" ? "127.0.0.1" : host
    let status: Int32 = withUnsafeMutableBytes(of: &storage) { raw in
        let v4 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
        if uv_ip4_addr(literal, Int32(port), v4) == 0 { return 0 }
        let v6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
        return uv_ip6_addr(literal, Int32(port), v6)
    }
    try LoopError.check(status, operation)
}

/// Runs `body` with `storage` viewed as a `sockaddr`.
@inline(__always)
func withSockaddr<R>(_ storage: inout sockaddr_storage, _ body: (UnsafeMutablePointer<sockaddr>) -> R) -> R {
    withUnsafeMutableBytes(of: &storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
}
