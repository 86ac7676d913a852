import HearthLoop
import HearthModel

/// `GET /metrics` over HTTP/1.1 on a listener of its own, served by the loop: one request per connection
/// (answered with `Connection: close`), its head at most 8 KiB and complete within 10 s, else the connection
/// is answered with an error status or closed. Everything but `GET`/`HEAD /metrics` answers 404 (another
/// path), 405 (another method) or 400 (not HTTP).
///
/// Lifetimes: the exchanges' timers and connection callbacks refer to the endpoint unowned; `close()` cancels
/// and detaches them all, so the server must call it before it lets the endpoint go.
final class MetricsEndpoint {
    private let loop: EventLoop
    private let logger: Logger
    private let render: () -> String
    private var listener: TCPListener?
    private var open: [ObjectIdentifier: Exchange] = [:]
    static let timeoutMs: UInt64 = 10_000
    /// Connections served at once; more are closed at once.
    static let maxOpen = 64

    private final class Exchange {
        let conn: TCPConnection
        var buffer: [UInt8] = []
        var timer: LoopTimer?
        var answered = false
        init(conn: TCPConnection) { self.conn = conn }
    }

    /// Serves the connections `listener` accepts (handed to `accepted`; the listener is bound by `ServerSocket`).
    init(loop: EventLoop, logger: Logger, listener: TCPListener, render: @escaping () -> String) {
        self.loop = loop
        self.logger = logger
        self.listener = listener
        self.render = render
    }

    var port: Int { listener?.port ?? 0 }

    /// Stops serving: the listener closes and every open exchange is aborted. Each exchange's callbacks are
    /// detached first: a connection's close completes in a later loop turn, when the endpoint may be gone
    /// (the server drops it right after this), so nothing of it may still call back into the endpoint.
    func close() {
        listener?.close()
        listener = nil
        for e in open.values {
            e.timer?.cancel()
            e.timer = nil
            e.conn.onRead = nil
            e.conn.onClose = nil
            e.conn.abort()
        }
        open.removeAll()
    }

    func accepted(_ conn: TCPConnection) {
        guard open.count < MetricsEndpoint.maxOpen else { conn.abort(); return }
        let e = Exchange(conn: conn)
        let key = ObjectIdentifier(conn)
        open[key] = e
        e.timer = loop.timer(after: MetricsEndpoint.timeoutMs) { [unowned self] in
            self.answer(e, HTTPRequestHead.response(to: .bad(status: 408, reason: "Request Timeout"), metrics: { "" }))
        }
        conn.onRead = { [unowned self] bytes in
            guard !e.answered else { return }
            e.buffer.append(contentsOf: bytes)
            let parsed = HTTPRequestHead.parse(e.buffer)
            if parsed != .incomplete { self.answer(e, HTTPRequestHead.response(to: parsed, metrics: self.render)) }
        }
        conn.onClose = { [unowned self] _ in
            e.timer?.cancel()
            e.conn.onRead = nil
            e.conn.onClose = nil
            self.open[key] = nil
        }
        conn.startReading()
    }

    private func answer(_ e: Exchange, _ response: [UInt8]) {
        guard !e.answered else { return }
        e.answered = true
        e.timer?.cancel()
        e.timer = nil
        e.conn.pauseReading()
        e.conn.send(response)
        e.conn.close()
    }
}
