#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a connection's byte stream into lines and classifies each from its first keys only, without
/// parsing it: the daemon writes `{"ok":...` or `{"id":<id>,"ok":...` first, and pushed lines carry
/// `type` and never `ok`. Lines found whole inside one chunk are not copied; a line split across chunks is
/// assembled in one reused buffer.
struct ResponseScanner {
    enum Kind {
        case ok
        case error
        case push
    }

    private var carry: [UInt8] = []

    init() { carry.reserveCapacity(4096) }

    /// Feeds one chunk; calls `onLine` for each completed line with its kind and bytes (valid during the call).
    @inline(__always)
    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ onLine: (Kind, UnsafeRawBufferPointer) -> Void) {
        guard var p = chunk.baseAddress else { return }
        var remaining = chunk.count
        while remaining > 0 {
            guard let nl = memchr(p, 10, remaining) else {
                carry.append(contentsOf: UnsafeRawBufferPointer(start: p, count: remaining))
                return
            }
            let n = UnsafeRawPointer(nl) - p
            if carry.isEmpty {
                let line = UnsafeRawBufferPointer(start: p, count: n)
                onLine(ResponseScanner.classify(line), line)
            } else {
                carry.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n))
                carry.withUnsafeBytes { onLine(ResponseScanner.classify($0), $0) }
                carry.removeAll(keepingCapacity: carry.capacity <= 1 << 20)
            }
            p += n + 1
            remaining -= n + 1
        }
    }

    /// Looks at the leading keys: `"ok":t` is ok, `"ok":f` an error, `"type"` (or any other first key) a
    /// push; a leading `"id"` is skipped. Anything that is not an object is an error.
    static func classify(_ line: UnsafeRawBufferPointer) -> Kind {
        let n = line.count
        var i = 0
        while i < n && line[i] == 32 { i += 1 }
        guard i < n, line[i] == UInt8(ascii: "{") else { return .error }
        i += 1
        for _ in 0..<2 {
            guard i + 4 < n, line[i] == 34 else { return .error }
            if line[i + 1] == UInt8(ascii: "o") && line[i + 2] == UInt8(ascii: "k") && line[i + 3] == 34 && line[i + 4] == 58 {
                return i + 5 < n && line[i + 5] == UInt8(ascii: "t") ? .ok : .error
            }
            guard line[i + 1] == UInt8(ascii: "i") && line[i + 2] == UInt8(ascii: "d") && line[i + 3] == 34 && line[i + 4] == 58 else {
                return .push
            }
            i += 5
            i = skipScalar(line, from: i)
            guard i < n, line[i] == UInt8(ascii: ",") else { return .error }
            i += 1
        }
        return .push
    }

    /// Index just past a number or string value starting at `i`.
    private static func skipScalar(_ line: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = line.count
        if i < n && line[i] == 34 {
            i += 1
            while i < n && line[i] != 34 {
                i += line[i] == 92 ? 2 : 1
            }
            return i + 1
        }
        while i < n && line[i] != UInt8(ascii: ",") && line[i] != UInt8(ascii: "}") { i += 1 }
        return i
    }
}
