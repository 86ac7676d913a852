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
        let env = ProcessInfo.processInfo.environment
            .filter { $0.key != "HEARTH_TOKEN" && $0.key != "HEARTH_ADMIN_KEY" }
            .merging(environment) { $1 }
        let r = try SpawnedProcess.run(binary ?? binaryPath(), args, stdin: stdin, timeout: timeout, environment: env,
                                       what: "hearth \(args.joined(separator: " "))")
        return Result(status: r.status, stdout: r.stdout, stderr: r.stderr)
    }
}
