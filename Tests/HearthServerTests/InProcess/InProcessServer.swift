import Foundation
@testable import HearthEngine
import HearthLoop
import HearthModel
@testable import HearthServer
import HearthStorage

/// A connection without a socket: what the session sends is collected, what the test writes is fed to the
/// session as one read, and the output can be made to look unsent (a slow subscriber).
final class FakeConnection: ClientConnection {
    let peer: String
    var onRead: ((UnsafeRawBufferPointer) -> Void)?
    var onDrain: (() -> Void)?
    var onClose: ((LoopError?) -> Void)?
    var onEndOfInput: (() -> Void)?
    var pendingOutputBytes = 0
    var outputNotTaken: Int { pendingOutputBytes }
    private(set) var reading = false
    private(set) var closed = false
    private(set) var output: [UInt8] = []
    private var cursor = 0

    init(peer: String) { self.peer = peer }

    func startReading() { reading = true }
    func pauseReading() { reading = false }
    func resumeReading() { reading = true }
    func send(_ bytes: UnsafeRawBufferPointer) { if !closed { output.append(contentsOf: bytes); held(bytes.count) } }
    func send(_ bytes: [UInt8]) { if !closed { output.append(contentsOf: bytes); held(bytes.count) } }

    /// While true, what is sent counts as unsent (`pendingOutputBytes` grows): a client that does not read.
    var holdsOutput = false
    private func held(_ n: Int) { if holdsOutput { pendingOutputBytes += n } }

    /// The client reads everything held: nothing is unsent any more, and the session hears of the drain.
    func drainHeld() {
        pendingOutputBytes = 0
        onDrain?()
    }
    func close() { closeRequested() }
    func close(deadlineMs: UInt64?) { closeRequested() }
    /// When set, `close` only records the request, as a real connection does while it flushes its output;
    /// `completeClose()` finishes it.
    var defersClose = false
    private func closeRequested() {
        if !defersClose { finish() }
    }
    func completeClose() { finish() }
    func dropUnsentOutput() -> Int { 0 }   // output is taken at once: nothing is ever unsent
    func abort() { finish() }
    /// The output's length at each `expedite()`.
    private(set) var expeditedAt: [Int] = []
    func expedite() { expeditedAt.append(output.count) }

    private func finish() {
        guard !closed else { return }
        closed = true
        let cb = onClose
        cb?(nil)
    }

    /// Feeds `lines` to the session as one read (each gets a newline): requests pipelined in one write.
    func write(_ lines: [String]) {
        let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
        bytes.withUnsafeBytes { onRead?($0) }
    }

    /// The client shuts down its side (a FIN): nothing more will be read.
    func endInput() {
        reading = false
        let cb = onEndOfInput
        onEndOfInput = nil
        cb?()
    }

    /// True once the session closed the connection.
    var isClosed: Bool { closed }

    /// Feeds bytes as they are (no newline added): a line may stay unfinished.
    func writeRaw(_ text: String) {
        Array(text.utf8).withUnsafeBytes { onRead?($0) }
    }

    /// The lines sent since the last call, parsed.
    func take() -> [[String: Any]] {
        var out: [[String: Any]] = []
        while let nl = output[cursor...].firstIndex(of: 10) {
            let line = Data(output[cursor..<nl])
            cursor = nl + 1
            let obj = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any]
            out.append(obj ?? ["unparsable": String(decoding: line, as: UTF8.self)])
        }
        return out
    }
}

/// The lines a `Logger` wrote, for tests that check what the daemon logs.
final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var captured: [String] = []

    var sink: @Sendable (String) -> Void { { [self] line in lock.withLock { captured.append(line) } } }
    var lines: [String] { lock.withLock { captured } }
    /// The lines containing `text`.
    func lines(containing text: String) -> [String] { lines.filter { $0.contains(text) } }
}

/// The server's sessions, dispatcher, engine and listener hub in this process, over a MemoryStore, with the
/// group commit driven by the test one step at a time: take a batch, land it in the store, publish it.
final class InProcessServer {
    let server: Server
    let store = MemoryStore()
    private let dataDir: String
    private var connections = 0

    init(logger: Logger = Logger(enabled: false), configure: (inout ServerConfig) -> Void = { _ in }) throws {
        dataDir = NSTemporaryDirectory() + "hearth-inprocess-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        var config = ServerConfig()
        config.dataDir = dataDir
        configure(&config)
        server = try Server(config: config, store: store, logger: logger)
    }

    deinit {
        server.closeReaders()
        try? FileManager.default.removeItem(atPath: dataDir)
    }

    /// Runs the loop until every read sent to a reader thread has come back (their responses then go out,
    /// or wait for a publication if they read a batch not yet published).
    func settle() {
        while server.readsInFlight > 0 { server.loop.runOnce() }
    }

    var engine: Engine { server.engine }

    func connect() -> FakeConnection {
        connections += 1
        let c = FakeConnection(peer: "fake:\(connections)")
        server.accept(c)
        return c
    }

    /// The queued commits as the batch in flight (what the loop does before it polls).
    func takeBatch() -> CommitBatch? { engine.takeBatch() }

    /// The writer thread's part: the batch is in the store (and flagged as landed, as `Engine.makeDurable`
    /// does). With `flag: false` the store has it but the flag is not yet set: the instant between the
    /// store's commit and the writer's next statement.
    func land(_ batch: CommitBatch, flag: Bool = true) {
        if flag {
            precondition(Engine.makeDurable(batch, in: store) == nil)
        } else {
            try! store.apply(batch.records)
        }
    }

    /// The loop's part once the writer is done: publication, acknowledgements, woken readers.
    func publish(_ batch: CommitBatch, error: HearthError? = nil) { server.batchLanded(batch, error: error) }

    /// Makes everything queued durable and published.
    func flush() {
        settle()
        while let b = takeBatch() {
            land(b)
            publish(b)
            settle()
        }
    }
}
