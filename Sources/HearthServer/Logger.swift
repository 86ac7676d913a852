#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// One readable line per notable event, on stderr, with its level:
/// `2026-11-29T12:00:00.123456Z hearthd info: listening on ...`.
///
/// Levels: `debug` (connections opening and closing, failures already reported once), `info` (start, stop,
/// index changes, signals), `warn` (something failed and the daemon carries on: a slow subscriber closed, a
/// file it could not write, leaving the disk-full state), `error` (a commit that could not be made durable,
/// the disk-full state). A logger shows its level and the ones above; `--quiet` is `warn`, so failures
/// always show.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warn, error

        /// The name `--log-level` takes and each line shows.
        public var name: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warn: return "warn"
            case .error: return "error"
            }
        }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    /// The lowest level written; nil writes nothing.
    public var minimum: Level?
    /// Where a finished line goes (stderr unless a test captures it).
    private let sink: @Sendable (String) -> Void

    /// A logger writing `minimum` and above to stderr (nil: nothing), or to `sink`.
    public init(minimum: Level? = .info, sink: (@Sendable (String) -> Void)? = nil) {
        self.minimum = minimum
        self.sink = sink ?? Logger.standardError
    }

    /// All of `info` and above when `enabled`, nothing otherwise.
    public init(enabled: Bool) { self.init(minimum: enabled ? .info : nil) }

    /// Whether lines of `level` are written (to skip building an expensive message).
    public func isEnabled(_ level: Level) -> Bool {
        guard let minimum else { return false }
        return level >= minimum
    }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warn(_ message: @autoclosure () -> String) { log(.warn, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let now = Timestamp(micros: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
        sink("\(now.rfc3339) hearthd \(level.name): \(message())\n")
    }

    private static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// "1 connection", "2 connections": a count and its noun (plural with an s).
func counted(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
