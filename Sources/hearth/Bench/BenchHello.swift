import HearthCrypto
import HearthLoop
import HearthProtocol

/// Opens bench connections on a loop: connects and, when the run has credentials, sends the hello first
/// and hands the connection over only once the daemon accepted it. Every bench connection (load phase,
/// measured phase, workload and listen runners) is opened here.
enum BenchHello {
    /// Connects to `host:port`; `done` gets the connection (paused, its callbacks free for the caller) or a
    /// message: "cannot connect to ...", "the daemon refused the hello: UNAUTHENTICATED: ...".
    static func connect(_ loop: EventLoop, host: String, port: Int, credentials: Credentials, tls: TLSContext? = nil,
                        _ done: @escaping (Result<TCPConnection, BenchConnectFailure>) -> Void) {
        let connected: (Result<TCPConnection, LoopError>) -> Void = { outcome in
            switch outcome {
            case .failure(let e):
                done(.failure(BenchConnectFailure("cannot connect to \(host):\(port): \(e.message)")))
            case .success(let c):
                guard let hello = credentials.helloLine else { done(.success(c)); return }
                authenticate(c, hello: hello, credentials: credentials, done)
            }
        }
        if let tls { loop.connectTLS(host: host, port: port, context: tls, connected) } else { loop.connect(host: host, port: port, connected) }
    }

    private static func authenticate(_ c: TCPConnection, hello: [UInt8], credentials: Credentials,
                                     _ done: @escaping (Result<TCPConnection, BenchConnectFailure>) -> Void) {
        var received: [UInt8] = []
        var finished = false
        func finish(_ result: Result<TCPConnection, BenchConnectFailure>) {
            guard !finished else { return }
            finished = true
            c.onRead = nil
            c.onClose = nil
            if case .failure = result { c.abort() } else { c.pauseReading() }
            done(result)
        }
        c.onRead = { bytes in
            received += bytes
            guard let nl = received.firstIndex(of: 10) else { return }
            let response = ServerResponse(line: Array(received[..<nl]))
            if response.ok {
                finish(.success(c))
            } else {
                let refused = HelloRefused(code: response.errorCode, message: response.errorMessage, credentials: credentials)
                finish(.failure(BenchConnectFailure("the daemon refused the hello: \(refused)")))
            }
        }
        c.onClose = { error in
            finish(.failure(BenchConnectFailure("the daemon closed the connection during the hello" + (error.map { ": \($0.message)" } ?? ""))))
        }
        c.startReading()
        c.send(hello + [10])
    }
}

/// Why a bench connection could not be opened, in words.
struct BenchConnectFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
