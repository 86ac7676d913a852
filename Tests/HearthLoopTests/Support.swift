import Testing
import Synchronization
@testable import HearthLoop
#if canImport(Glibc)
import Glibc
#endif

/// Runs `loop` until `stop()` or until `timeoutMs` passes; a timeout is recorded as a test failure.
/// Keeps every test bounded in time.
func runBounded(_ loop: EventLoop, timeoutMs: UInt64 = 10_000,
                sourceLocation: SourceLocation = #_sourceLocation) {
    var timedOut = false
    let watchdog = loop.timer(after: timeoutMs) {
        timedOut = true
        loop.stop()
    }
    loop.run()
    watchdog.cancel()
    if timedOut { Issue.record("event loop timed out after \(timeoutMs) ms", sourceLocation: sourceLocation) }
}

/// Starts an echo server on an ephemeral 127.0.0.1 port. Every accepted connection is appended to
/// `accepted` if given.
func startEchoServer(_ loop: EventLoop, accepted: ((TCPConnection) -> Void)? = nil) throws -> TCPListener {
    try loop.listen(host: "127.0.0.1", port: 0) { connection in
        connection.onRead = { bytes in connection.send(bytes) }
        accepted?(connection)
        connection.startReading()
    }
}

/// Connects to `port` and hands the connection to `body`; a connect failure fails the test and stops the loop.
func connectClient(_ loop: EventLoop, port: Int, sourceLocation: SourceLocation = #_sourceLocation,
                   _ body: @escaping (TCPConnection) -> Void) {
    loop.connect(host: "127.0.0.1", port: port) { result in
        switch result {
        case .success(let connection): body(connection)
        case .failure(let error):
            Issue.record("connect failed: \(error)", sourceLocation: sourceLocation)
            loop.stop()
        }
    }
}

/// A deterministic byte pattern for large transfers.
func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 11)) }
}

/// The calling thread's pthread id.
func currentThreadID() -> UInt { UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))) }

/// A thread-safe box for values recorded on other threads.
final class Recorder<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
    func set(_ v: Value) { value.withLock { $0 = v } }
    func get() -> Value { value.withLock { $0 } }
}
