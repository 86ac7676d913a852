#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// One readable line per notable event, on stderr: `2026-11-29T12:00:00.123456Z hearthd: listening on ...`.
public struct Logger: Sendable {
    public var enabled: Bool

    public init(enabled: Bool = true) { self.enabled = enabled }

    public func info(_ message: String) {
        guard enabled else { return }
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let now = Timestamp(micros: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
        let line = "\(now.rfc3339) hearthd: \(message)\n"
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}
