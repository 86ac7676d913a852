import Foundation

/// Runs the `hearth` command-line binary for tests and captures what it printed.
/// The binary is `$HEARTH_BIN`, or `hearth` beside the running test executable (SwiftPM's build dir),
/// found the same way `DaemonProcess.binaryPath()` finds `hearthd`.
public enum CLIProcess {
    /// Exit status and output of one run.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public static func binaryPath() -> String {
        if let env = ProcessInfo.processInfo.environment["HEARTH_BIN"], !env.isEmpty { return env }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("hearth").path
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue,
               FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
            dir = dir.deletingLastPathComponent()
        }
        return ".build/debug/hearth"
    }

    /// Runs `hearth args...` (or another binary, such as `DaemonProcess.binaryPath()`), feeding `stdin`
    /// (then end of input; no input at all when nil), and waits up to `timeout` seconds; a run that takes
    /// longer is killed and reported as a `TestFailure`. The child gets this process's environment without
    /// `HEARTH_TOKEN` / `HEARTH_ADMIN_KEY` (tests stay anonymous unless they ask), plus `environment`.
    public static func run(_ args: [String], stdin: String? = nil, timeout: Double = 60, binary: String? = nil,
                           environment: [String: String] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary ?? binaryPath())
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment
            .filter { $0.key != "HEARTH_TOKEN" && $0.key != "HEARTH_ADMIN_KEY" }
            .merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        let outData = Collector(), errData = Collector()
        let readers = DispatchGroup()
        for (pipe, sink) in [(out, outData), (err, errData)] {
            DispatchQueue.global().async(group: readers) { sink.append(pipe.fileHandleForReading.readDataToEndOfFile()) }
        }
        let exited = DispatchSemaphore(value: 0)
        p.terminationHandler = { _ in exited.signal() }
        try p.run()
        if let stdin { try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            _ = readers.wait(timeout: .now() + 5)
            throw TestFailure("hearth \(args.joined(separator: " ")) did not finish within \(timeout) s; stderr:\n\(errData.text)")
        }
        p.waitUntilExit()
        _ = readers.wait(timeout: .now() + 10)
        return Result(status: p.terminationStatus, stdout: outData.text, stderr: errData.text)
    }
}

/// Bytes gathered from a pipe's handler thread.
private final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
