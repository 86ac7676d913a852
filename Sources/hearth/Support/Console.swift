#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing to the standard streams through stdio streams of our own on descriptors 1 and 2 (one buffer
/// per stream, so output stays in order). Used from one thread at a time (the main thread).
enum Console {
    nonisolated(unsafe) private static let outFile = fdopen(1, "w")
    nonisolated(unsafe) private static let errFile = fdopen(2, "w")

    /// Writes `text` to standard output (no newline added).
    static func out(_ text: String) {
        fputs(text, outFile)
    }

    /// Writes `text` and a newline to standard output.
    static func line(_ text: String) {
        fputs(text, outFile)
        fputs("\n", outFile)
    }

    /// Writes `text` and a newline to standard error, flushing standard output first so the two interleave
    /// in the order they were produced.
    static func error(_ text: String) {
        fflush(outFile)
        fputs(text, errFile)
        fputs("\n", errFile)
        fflush(errFile)
    }

    /// Writes `text` to standard error as is, flushed (progress lines).
    static func status(_ text: String) {
        fputs(text, errFile)
        fflush(errFile)
    }

    static func flush() {
        fflush(outFile)
    }

    /// True when file descriptor `fd` is a terminal.
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }
}

/// Exit codes of every `hearth` subcommand.
enum ExitCode {
    static let ok: Int32 = 0
    /// The server answered with an error (or, for bench, some requests failed).
    static let serverError: Int32 = 1
    /// Bad command line.
    static let usage: Int32 = 2
    /// Could not connect, or the connection broke or timed out.
    static let connection: Int32 = 3
}

/// Formats numbers for people: thousands separators and fixed decimals, without Foundation.
enum NumberText {
    /// `1234567` → `"1,234,567"`.
    static func grouped(_ v: Int) -> String {
        let digits = String(v.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return v < 0 ? "-" + out : out
    }

    /// `fixed(3.14159, 2)` → `"3.14"` (rounded half away from zero).
    static func fixed(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return "\(v)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (v.magnitude * scale).rounded()
        let whole = Int(scaled / scale)
        let frac = Int(scaled - Double(whole) * scale)
        var text = String(whole)
        if decimals > 0 {
            var f = String(frac)
            while f.count < decimals { f = "0" + f }
            text += "." + f
        }
        return (v < 0 && scaled != 0 ? "-" : "") + text
    }

    /// A limit as people write it: `0.1`, `3600`, `604800`, `1000000000` (no exponent, no trailing `.0`).
    static func plain(_ v: Double) -> String {
        if v == v.rounded(), v.magnitude < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

    /// Microseconds as milliseconds with 3 decimals: `1234` → `"1.234"`.
    static func millis(micros: UInt64) -> String { fixed(Double(micros) / 1000, 3) }

    /// Bytes as MiB with one decimal.
    static func mebibytes(_ bytes: Int) -> String { fixed(Double(bytes) / 1_048_576, 1) + " MiB" }
}
