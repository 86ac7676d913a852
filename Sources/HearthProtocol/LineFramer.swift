#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Incremental, bounded newline framing. Feed byte chunks of any size; complete lines come out without
/// their `\n` and without one trailing `\r`. Blank lines (empty or only spaces, tabs, `\r`) are skipped.
///
/// A line whose content exceeds `maxLineBytes` produces one `.tooLong(bytes:)` event when its newline
/// arrives (bytes = its full content length), and is never buffered beyond the limit: its bytes are
/// dropped as they arrive. Events therefore do not depend on how the input was split. The size check
/// comes before the blank check.
///
/// A line found whole inside one chunk is handed out without copying; otherwise it is assembled in one
/// reused buffer. Each byte is scanned once (`memchr`), so long lines fed in small chunks cost O(n).
public struct LineFramer {
    public enum Event {
        /// A complete line; the buffer is only valid during the callback.
        case line(UnsafeRawBufferPointer)
        /// A line longer than `maxLineBytes` was discarded.
        case tooLong(bytes: Int)
    }

    public let maxLineBytes: Int
    private var pending: [UInt8] = []
    private var discarding = false
    private var discarded = 0
    private var discardedEndsWithCR = false

    /// Pending capacity above this is released after the line is delivered.
    private static let keptCapacity = 64 * 1024

    public init(maxLineBytes: Int = 16 * 1024 * 1024) {
        precondition(maxLineBytes > 0, "maxLineBytes must be positive")
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes of the current unfinished line received so far (buffered or being discarded).
    public var unfinishedLineBytes: Int { discarding ? discarded : pending.count }

    /// True while the current unfinished line is already known to be too long.
    public var isDiscardingLine: Bool { discarding }

    /// Feeds one chunk, calling `body` for each event it completes, in order.
    public mutating func feed<E: Error>(_ chunk: UnsafeRawBufferPointer, _ body: (Event) throws(E) -> Void) throws(E) {
        guard var p = chunk.baseAddress else { return }
        var remaining = chunk.count
        while remaining > 0 {
            guard let nl = memchr(p, 10, remaining) else {
                absorb(UnsafeRawBufferPointer(start: p, count: remaining))
                return
            }
            let n = UnsafeRawPointer(nl) - p
            let segment = UnsafeRawBufferPointer(start: p, count: n)
            p = UnsafeRawPointer(nl) + 1
            remaining -= n + 1
            if !discarding && pending.isEmpty {
                try deliver(segment, body)
                continue
            }
            absorb(segment)
            try finishLine(body)
        }
    }

    /// Feeds an array of bytes (see `feed(_:_:)` for an unsafe buffer).
    public mutating func feed<E: Error>(_ chunk: [UInt8], _ body: (Event) throws(E) -> Void) throws(E) {
        let r: Result<Void, E> = chunk.withUnsafeBytes { b in Result { () throws(E) in try feed(b, body) } }
        try r.get()
    }

    /// Ends the input: an unfinished last line is delivered as if a newline followed it.
    public mutating func finish<E: Error>(_ body: (Event) throws(E) -> Void) throws(E) {
        guard discarding || !pending.isEmpty else { return }
        try finishLine(body)
    }

    private mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        if !discarding && pending.count + bytes.count > maxLineBytes + 1 {
            // Even without a trailing \r the content is over the limit: stop buffering.
            discarding = true
            discarded = pending.count
            pending = []
        }
        if discarding {
            discarded += bytes.count
            discardedEndsWithCR = bytes[bytes.count - 1] == 13
        } else {
            pending.append(contentsOf: bytes)
        }
    }

    private mutating func finishLine<E: Error>(_ body: (Event) throws(E) -> Void) throws(E) {
        if discarding {
            let bytes = discarded - (discardedEndsWithCR ? 1 : 0)
            discarding = false
            discarded = 0
            discardedEndsWithCR = false
            try body(.tooLong(bytes: bytes))
            return
        }
        defer {
            if pending.capacity > LineFramer.keptCapacity { pending = [] } else { pending.removeAll(keepingCapacity: true) }
        }
        let r: Result<Void, E> = pending.withUnsafeBytes { b in Result { () throws(E) in try deliver(b, body) } }
        try r.get()
    }

    /// Strips one trailing \r, then applies the size and blank checks.
    private func deliver<E: Error>(_ raw: UnsafeRawBufferPointer, _ body: (Event) throws(E) -> Void) throws(E) {
        var n = raw.count
        if n > 0 && raw[n - 1] == 13 { n -= 1 }
        if n > maxLineBytes {
            try body(.tooLong(bytes: n))
            return
        }
        var i = 0
        while i < n {
            let c = raw[i]
            if c != 32 && c != 9 && c != 13 { break }
            i += 1
        }
        if i == n { return }
        try body(.line(UnsafeRawBufferPointer(rebasing: raw[0..<n])))
    }
}
