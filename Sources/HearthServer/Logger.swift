#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthProtocol

/// One line per notable event, on stderr, with its RFC 3339 time and level. Text (the default):
/// `2026-11-29T12:00:00.123456Z hearthd info: listening on ...`, fields after the message as `key=value`;
/// JSON (`--log-format json`): one object per line, `{"time":...,"level":...,"msg":...}` and the fields.
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

    /// How lines are written: readable text, or one JSON object per line.
    public enum Format: String, Sendable, CaseIterable {
        case text, json

        public init?(name: String) { self.init(rawValue: name) }
    }

    /// The lowest level written; nil writes nothing.
    public var minimum: Level?
    public var format: Format
    /// Where a finished line goes (stderr unless a test captures it).
    private let sink: @Sendable (String) -> Void

    /// A logger writing `minimum` and above to stderr (nil: nothing), or to `sink`.
    public init(minimum: Level? = .info, format: Format = .text, sink: (@Sendable (String) -> Void)? = nil) {
        self.minimum = minimum
        self.format = format
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
        sink(Logger.line(level, message(), [], format: format, time: Logger.now()))
    }

    /// A line with fields: after the message as `key=value` (text), or as members of the object (JSON).
    public func log(_ level: Level, _ message: String, _ fields: [(String, LogValue)]) {
        guard isEnabled(level) else { return }
        sink(Logger.line(level, message, fields, format: format, time: Logger.now()))
    }

    /// The wall-clock time now.
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(micros: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
    }

    /// One finished line (with its newline) in `format`.
    public static func line(_ level: Level, _ message: String, _ fields: [(String, LogValue)], format: Format,
                            time: Timestamp) -> String {
        switch format {
        case .text:
            var text = "\(time.rfc3339) hearthd \(level.name): \(message)"
            for (k, v) in fields { text += " \(k)=\(v.text)" }
            return text + "\n"
        case .json:
            var w = JSONWriter(capacity: 256)
            w.beginObject()
            w.key("time"); w.string(time.rfc3339)
            w.key("level"); w.string(level.name)
            w.key("msg"); w.string(message)
            for (k, v) in fields {
                w.key(k)
                switch v {
                case .string(let s): w.string(s)
                case .int(let i): w.int(i)
                case .number(let d): w.double(d)
                }
            }
            w.endObject()
            w.newline()
            return String(decoding: w.bytes, as: UTF8.self)
        }
    }

    private static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// A field of a log line.
public enum LogValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case number(Double)

    /// As a text line shows it: numbers bare, strings bare unless empty or holding a space, quote, `=` or a
    /// control character (then in JSON quotes).
    var text: String {
        switch self {
        case .int(let i): return String(i)
        case .number(let d): return String(d)
        case .string(let s):
            if !s.isEmpty && !s.utf8.contains(where: { $0 <= 0x20 || $0 == 0x22 || $0 == 0x3D || $0 == 0x7F }) { return s }
            var w = JSONWriter(capacity: s.utf8.count + 2)
            w.string(s)
            return String(decoding: w.bytes, as: UTF8.self)
        }
    }
}

/// "1 connection", "2 connections": a count and its noun (plural with an s).
func counted(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
