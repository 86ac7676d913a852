import HearthLoop

/// At most one log line a second for one kind of event that a client can cause at will (failed TLS
/// handshakes, say): the first line is logged whole, the rest of that second only counted, and the count logged
/// when the second is over. Loop thread.
final class LogThrottle {
    private let loop: EventLoop
    private let logger: Logger
    /// What the count line says after the number: "more TLS connections failed".
    private let summary: String
    private var unlogged = 0
    private var timer: LoopTimer?

    init(loop: EventLoop, logger: Logger, summary: String) {
        self.loop = loop
        self.logger = logger
        self.summary = summary
    }

    func note(_ line: String) {
        guard timer == nil else { unlogged += 1; return }
        logger.info(line)
        timer = loop.timer(after: 1000) { [unowned self] in
            self.timer = nil
            if self.unlogged > 0 {
                self.logger.info("\(self.unlogged) \(self.summary) in the last second")
                self.unlogged = 0
            }
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}
