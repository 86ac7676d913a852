import Foundation

/// A real `hearthd` process on an ephemeral port in a private data directory, for tests at the top altitude.
/// The binary is `$HEARTHD_BIN`, or `hearthd` beside the running test executable (SwiftPM's build dir).
public final class DaemonProcess: @unchecked Sendable {
    public let dataDir: String
    public let extraArgs: [String]
    public private(set) var port: Int = 0
    private var process: Process?
    private var stderrPipe: Pipe?
    private let logLock = NSCondition()
    private var logText = ""
    private let ownsDataDir: Bool

    /// Starts the daemon and waits until it is listening.
    public init(dataDir: String? = nil, extraArgs: [String] = []) throws {
        if let dataDir {
            self.dataDir = dataDir
            ownsDataDir = false
        } else {
            self.dataDir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
            ownsDataDir = true
        }
        self.extraArgs = extraArgs
        try start()
    }

    deinit {
        if let p = process, p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
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
    public var log: String { logLock.withLock { logText } }

    /// Waits until the log contains `text` (woken by each chunk the daemon writes to stderr, not by polling),
    /// or `timeout` seconds pass; true when it does. Lines a daemon writes reach `log` a little after it
    /// wrote them: wait for a line written after those you check (its last, `hearthd: stopped`, after `stop()`).
    @discardableResult
    public func waitForLog(containing text: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        logLock.lock()
        defer { logLock.unlock() }
        while !logText.contains(text) {
            guard logLock.wait(until: deadline) else { return logText.contains(text) }
        }
        return true
    }

    /// (Re)starts the process on a new ephemeral port (the same data dir), waiting for its listening line.
    public func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: DaemonProcess.binaryPath())
        p.arguments = ["--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir] + extraArgs
        let pipe = Pipe()
        p.standardError = pipe
        p.standardOutput = FileHandle.nullDevice
        let ready = DispatchSemaphore(value: 0)
        let portBox = PortBox()
        let logStart = log.utf8.count
        pipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let data = h.availableData
            guard !data.isEmpty, let self else { h.readabilityHandler = nil; ready.signal(); return }
            let text = String(decoding: data, as: UTF8.self)
            let all = self.logLock.withLock { () -> String in
                self.logText += text
                self.logLock.broadcast()
                return self.logText
            }
            let fresh = String(decoding: Array(all.utf8).dropFirst(logStart), as: UTF8.self)
            if portBox.port == 0, let r = fresh.range(of: "listening on 127.0.0.1:") {
                let digits = fresh[r.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits) { portBox.port = port; ready.signal() }
            }
        }
        try p.run()
        process = p
        stderrPipe = pipe
        if ready.wait(timeout: .now() + 20) == .timedOut || portBox.port == 0 {
            throw TestFailure("hearthd did not start listening; log:\n\(log)")
        }
        port = portBox.port
    }

    /// SIGTERM, then waits for exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        guard let p = process else { return 0 }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        process = nil
        return p.terminationStatus
    }

    /// SIGKILL: the crash case.
    public func kill9() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        process = nil
    }

    public var isRunning: Bool { process?.isRunning ?? false }
    public var pid: Int32 { process?.processIdentifier ?? 0 }

    /// A new connection to this daemon.
    public func connect() throws -> WireClient { try WireClient(port: port) }
}

private final class PortBox: @unchecked Sendable { var port = 0 }

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
