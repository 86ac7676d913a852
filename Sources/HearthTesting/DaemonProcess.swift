import Foundation

/// A real `hearthd` process on an ephemeral port in a private data directory, for tests at the top altitude.
/// The binary is `$HEARTHD_BIN`, or `hearthd` beside the running test executable (SwiftPM's build dir).
public final class DaemonProcess: @unchecked Sendable {
    public let dataDir: String
    public let extraArgs: [String]
    /// Text the log shows once the daemon is ready, when not the start line (e.g. with `--quiet`, which hides
    /// it); the port is then unknown (0).
    public let readyText: String?
    public private(set) var port: Int = 0
    private var process: SpawnedProcess?
    private let logCondition = NSCondition()
    private var logText = ""
    private let ownsDataDir: Bool

    /// Starts the daemon and waits until it is listening (or, with `readyText`, until its log shows that).
    public init(dataDir: String? = nil, extraArgs: [String] = [], readyText: String? = nil) throws {
        if let dataDir {
            self.dataDir = dataDir
            ownsDataDir = false
        } else {
            self.dataDir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
            ownsDataDir = true
        }
        self.extraArgs = extraArgs
        self.readyText = readyText
        try start()
    }

    deinit {
        if let p = process, p.isRunning { p.signal(SIGKILL); p.wait() }
        if ownsDataDir { try? FileManager.default.removeItem(atPath: dataDir) }
    }

    public static func binaryPath() -> String {
        if let env = ProcessInfo.processInfo.environment["HEARTHD_BIN"], !env.isEmpty { return env }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("hearthd").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return ".build/debug/hearthd"
    }

    /// Everything the daemon has logged so far.
    public var log: String { logCondition.withLock { logText } }

    /// Waits until the log contains `text` at least `occurrences` times (a barrier on what the daemon says it
    /// did); false if it did not within `timeout` seconds or the daemon closed its stderr first.
    @discardableResult
    public func waitForLog(_ text: String, occurrences: Int = 1, timeout: Double = 20) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        logCondition.lock()
        defer { logCondition.unlock() }
        while Self.count(text, in: logText) < occurrences {
            if logClosed || !logCondition.wait(until: deadline) { return Self.count(text, in: logText) >= occurrences }
        }
        return true
    }

    /// Counts what every daemon of this test process has logged: a barrier on "some daemon said something
    /// since", for a test that watches several (`ClusterNodes.committer`).
    private static let anyLog = NSCondition()
    nonisolated(unsafe) private static var anyLogLines = 0

    /// How many pieces of log all daemons have written so far.
    public static var loggedSoFar: Int { anyLog.withLock { anyLogLines } }

    /// Waits until some daemon logs after `mark` (a `loggedSoFar`), or until `deadline`.
    public static func waitForAnyLog(after mark: Int, until deadline: Date) {
        anyLog.lock()
        defer { anyLog.unlock() }
        while anyLogLines <= mark { if !anyLog.wait(until: deadline) { return } }
    }

    /// How many times `text` occurs in the log.
    public func logCount(_ text: String) -> Int { Self.count(text, in: log) }

    private static func count(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    private var logClosed = false

    /// Runs `hearthd args...` (with `prefix` before the binary, e.g. a command that changes user) to its exit,
    /// for starts that must fail; waits up to `timeout` seconds. Returns the exit status and what it printed on
    /// stderr.
    public static func runToExit(_ args: [String], prefix: [String] = [], timeout: Double = 30) throws -> (status: Int32, stderr: String) {
        let command = prefix.isEmpty ? [binaryPath()] + args : prefix + [binaryPath()] + args
        let r = try SpawnedProcess.run(command[0], Array(command.dropFirst()), stdin: nil, timeout: timeout, environment: nil,
                                       what: "hearthd \(args.joined(separator: " "))")
        return (r.status, r.stderr)
    }

    /// `waitForLog(_:timeout:)` under the name some tests use.
    @discardableResult
    public func waitForLog(containing text: String, timeout: Double = 10) -> Bool {
        waitForLog(text, timeout: timeout)
    }

    /// (Re)starts the process on a new ephemeral port (the same data dir), waiting for its listening line.
    public func start() throws {
        // The log pipe is close-on-exec: only this daemon gets its write end (as its stderr), so the reader
        // sees the end of the log when this daemon exits, whatever other children the tests start meanwhile.
        var fds: [Int32] = [0, 0]
        guard hearth_pipe2(&fds, O_CLOEXEC) == 0 else { throw TestFailure("pipe2 failed: errno \(errno)") }
        let fd = fds[0], writeEnd = fds[1]
        let ready = DispatchSemaphore(value: 0)
        let portBox = PortBox()
        let logStart = log.utf8.count
        let readyText = self.readyText
        logCondition.withLock { logClosed = false }
        let child: SpawnedProcess
        do {
            child = try SpawnedProcess(path: DaemonProcess.binaryPath(),
                                       arguments: ["--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir] + extraArgs,
                                       stderrFD: writeEnd)
        } catch {
            close(fd)
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        // The log is read by a thread of its own with blocking reads until the end of the file, and closes the
        // descriptor then. (A dispatch source watching the pipe could outlive the descriptor, and a closed
        // descriptor still watched by one, its number reused, crashes libdispatch's event loop.)
        Thread.detachNewThread { [weak self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }   // the end of the log (or an error: nothing more can be read)
                guard let self else { continue }   // keep reading to the end: the daemon may still write
                let text = String(decoding: buffer[0..<n], as: UTF8.self)
                let all = self.logCondition.withLock { () -> String in
                    self.logText += text
                    self.logCondition.broadcast()
                    return self.logText
                }
                DaemonProcess.anyLog.withLock {
                    DaemonProcess.anyLogLines += 1
                    DaemonProcess.anyLog.broadcast()
                }
                let fresh = String(decoding: Array(all.utf8).dropFirst(logStart), as: UTF8.self)
                if let readyText {
                    if !portBox.ready && fresh.contains(readyText) { portBox.ready = true; ready.signal() }
                } else if portBox.port == 0, let r = fresh.range(of: "listening on 127.0.0.1:") {
                    let digits = fresh[r.upperBound...].prefix { $0.isNumber }
                    if let port = Int(digits) { portBox.port = port; portBox.ready = true; ready.signal() }
                }
            }
            close(fd)
            self?.logCondition.withLock { self?.logClosed = true; self?.logCondition.broadcast() }
            ready.signal()
        }
        process = child
        if ready.wait(timeout: .now() + 20) == .timedOut || !portBox.ready {
            throw TestFailure("hearthd did not start \(readyText.map { "(waiting for \"\($0)\")" } ?? "listening"); log:\n\(log)")
        }
        port = portBox.port
    }

    /// SIGTERM, then waits for exit; returns the exit status (128 + the signal when a signal ended it).
    @discardableResult
    public func stop() -> Int32 {
        guard let p = process else { return 0 }
        p.signal(SIGTERM)
        let status = p.wait()
        process = nil
        waitForLogEnd()
        return status
    }

    /// SIGKILL: the crash case.
    public func kill9() {
        guard let p = process else { return }
        p.signal(SIGKILL)
        p.wait()
        process = nil
        waitForLogEnd()
    }

    /// Waits (at most 5 s) until the stderr reader has seen the end of the log, so its pipe can go safely.
    private func waitForLogEnd() {
        let deadline = Date().addingTimeInterval(5)
        logCondition.lock()
        defer { logCondition.unlock() }
        while !logClosed { if !logCondition.wait(until: deadline) { break } }
    }

    public var isRunning: Bool { process?.isRunning ?? false }
    public var pid: Int32 { process?.pid ?? 0 }

    /// A new connection to this daemon.
    public func connect() throws -> WireClient { try WireClient(port: port) }
}

private final class OutputBox: @unchecked Sendable {
    private let lock = NSLock()
    private var bytes = Data()
    var data: Data {
        get { lock.withLock { bytes } }
        set { lock.withLock { bytes = newValue } }
    }
    var text: String { String(decoding: data, as: UTF8.self) }
}

private final class PortBox: @unchecked Sendable {
    var port = 0
    var ready = false
}

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// glibc's pipe2 (not in Swift's Glibc module): a pipe whose descriptors are close-on-exec from the start.
@_silgen_name("pipe2")
func hearth_pipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
