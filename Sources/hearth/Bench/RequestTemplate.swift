#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A prebuilt request line (with its newline) whose key number and sequence number are decimal fields
/// of fixed width patched in place, so producing a request is one copy and a few digit stores: no
/// allocation, no JSON encoding.
final class RequestTemplate {
    private let bytes: UnsafeMutableRawBufferPointer
    private let keyField: (offset: Int, width: Int)?
    private let seqField: (offset: Int, width: Int)?

    var count: Int { bytes.count }

    /// `parts` are joined; `.key` and `.seq` mark the patched fields.
    init(_ parts: [Part]) {
        var line: [UInt8] = []
        var key: (Int, Int)?
        var seq: (Int, Int)?
        for part in parts {
            switch part {
            case .text(let t): line += Array(t.utf8)
            case .key(let width): key = (line.count, width); line += Array(repeating: 48, count: width)
            case .seq: seq = (line.count, SequenceField.width); line += Array(String(SequenceField.base).utf8)
            }
        }
        line.append(10)
        bytes = .allocate(byteCount: line.count, alignment: 16)
        bytes.copyBytes(from: line)
        keyField = key
        seqField = seq
    }

    deinit { bytes.deallocate() }

    enum Part {
        case text(String)
        /// A zero-padded key number of this many digits.
        case key(width: Int)
        /// A 10-digit number (a valid JSON integer, never with a leading zero).
        case seq
    }

    /// Copies the line into `dst` with `key` and `seq` patched in; returns its length.
    @inline(__always)
    func write(into dst: UnsafeMutableRawPointer, key: UInt64 = 0, seq: UInt64 = 0) -> Int {
        memcpy(dst, bytes.baseAddress!, bytes.count)
        if let k = keyField { RequestTemplate.digits(key, into: dst + k.offset, width: k.width) }
        if let s = seqField { RequestTemplate.digits(SequenceField.value(seq), into: dst + s.offset, width: s.width) }
        return bytes.count
    }

    @inline(__always)
    static func digits(_ value: UInt64, into p: UnsafeMutableRawPointer, width: Int) {
        var v = value
        var i = width - 1
        while i >= 0 {
            p.storeBytes(of: 48 &+ UInt8(truncatingIfNeeded: v % 10), toByteOffset: i, as: UInt8.self)
            v /= 10
            i -= 1
        }
    }
}

/// The document counter field: 10 digits from 1000000000, wrapping before it would grow to 11.
enum SequenceField {
    static let width = 10
    static let base: UInt64 = 1_000_000_000
    @inline(__always) static func value(_ n: UInt64) -> UInt64 { base + n % 8_999_999_999 }
}

/// The benchmark's documents and their paths: `<collection>/k<zero-padded n>` for n in 0..<keys, and a
/// data object of exactly `docSize` bytes of JSON with a few typical fields, keys already in the daemon's
/// canonical (sorted) order, padded with a string field.
struct BenchDocuments: Sendable {
    let collection: String
    let keys: Int
    let docSize: Int
    let keyWidth: Int

    static let fullFields = #"{"active":true,"email":"user@example.com","name":"Bench Document","pad":"PAD","score":42.5,"seq":SEQ,"tags":["bench","load"]}"#
    static let minimalFields = #"{"pad":"PAD","seq":SEQ}"#
    static var minimumSize: Int { minimalFields.utf8.count - 6 + SequenceField.width }

    init(collection: String, keys: Int, docSize: Int) {
        self.collection = collection
        self.keys = keys
        self.docSize = docSize
        keyWidth = String(max(0, keys - 1)).count
    }

    /// Template parts of the data object (with a `.seq` field).
    var dataParts: [RequestTemplate.Part] {
        let full = BenchDocuments.fullFields
        let fixed = full.utf8.count - 6 + SequenceField.width
        let shape = docSize >= fixed ? full : BenchDocuments.minimalFields
        let padLength = docSize - (shape.utf8.count - 6 + SequenceField.width)
        let padded = shape.replacingFirst("PAD", with: String(repeating: "x", count: max(0, padLength)))
        let halves = padded.splitOnce("SEQ")!
        return [.text(halves.0), .seq, .text(halves.1)]
    }

    /// The path text before the key number.
    var pathPrefix: String { "\(collection)/k" }

    func setTemplate() -> RequestTemplate {
        RequestTemplate([.text(#"{"op":"set","path":""# + pathPrefix), .key(width: keyWidth), .text(#"","data":"#)] + dataParts + [.text("}")])
    }

    func getTemplate() -> RequestTemplate {
        RequestTemplate([.text(#"{"op":"get","path":""# + pathPrefix), .key(width: keyWidth), .text(#""}"#)])
    }
}

extension String {
    /// The text with the first occurrence of `target` replaced (unchanged if absent).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let (a, b) = splitOnce(target) else { return self }
        return a + replacement + b
    }

    /// The text before and after the first occurrence of `separator`, or nil if absent.
    func splitOnce(_ separator: String) -> (String, String)? {
        let s = Array(utf8), t = Array(separator.utf8)
        guard !t.isEmpty, t.count <= s.count else { return nil }
        for i in 0...(s.count - t.count) where Array(s[i..<(i + t.count)]) == t {
            return (String(decoding: s[..<i], as: UTF8.self), String(decoding: s[(i + t.count)...], as: UTF8.self))
        }
        return nil
    }
}
