import Foundation

/// A point in time with nanosecond fields, like Firestore's `Timestamp`. Hearth stores timestamps to the
/// microsecond: nanoseconds below that are dropped by the server. Comparable and Codable
/// (`{"seconds":..,"nanoseconds":..}` with other coders; Hearth's own coders pass it through as a timestamp).
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z.
    public let seconds: Int64
    /// Nanoseconds within the second, 0..<1_000_000_000.
    public let nanoseconds: Int32

    /// `nanoseconds` outside 0..<1e9 carries into `seconds`.
    public init(seconds: Int64, nanoseconds: Int32) {
        var s = seconds
        var n = Int64(nanoseconds)
        s += n / 1_000_000_000
        n %= 1_000_000_000
        if n < 0 { n += 1_000_000_000; s -= 1 }
        self.seconds = s
        self.nanoseconds = Int32(n)
    }

    /// The date to the nearest nanosecond.
    public init(date: Date) {
        let t = date.timeIntervalSince1970
        let s = t.rounded(.down)
        var n = ((t - s) * 1e9).rounded()
        if n >= 1e9 { n = 1e9 - 1 }
        self.init(seconds: Int64(s), nanoseconds: Int32(n))
    }

    /// Now (Firestore's `Timestamp()`).
    public init() { self.init(date: Date()) }

    public static func now() -> Timestamp { Timestamp(date: Date()) }

    public func dateValue() -> Date {
        Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// The same instant truncated to the microsecond, as Hearth stores it.
    var truncatedToMicroseconds: Timestamp {
        Timestamp(seconds: seconds, nanoseconds: nanoseconds / 1000 * 1000)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    public var description: String { rfc3339 }

    /// RFC 3339 in UTC with nine fractional digits, e.g. `2026-11-29T12:00:00.123456000Z`.
    public var rfc3339: String {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secOfDay = seconds - days * 86400
        let (y, m, d) = Timestamp.civil(fromDays: days)
        func pad(_ v: Int64, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secOfDay / 3600, 2)):\(pad(secOfDay / 60 % 60, 2)):"
            + "\(pad(secOfDay % 60, 2)).\(pad(Int64(nanoseconds), 9))Z"
    }

    /// Parses RFC 3339 (`Z` or a `±hh:mm` offset, 0–9 fractional digits; more are truncated).
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for c in b[from..<from + count] {
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] | 0x20 == UInt8(ascii: "t"), b[13] == 58, b[16] == 58,
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2),
              let h = num(11, 2), let mi = num(14, 2), let s = num(17, 2),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 61 else { return nil }
        var i = 19
        var nanos: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 9 { nanos = nanos * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanos *= 10 }
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] | 0x20 == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = num(i + 4, 2) {
            offset = (oh * 3600 + om * 60) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Timestamp.days(fromCivil: y, mo, d)
        self.init(seconds: days * 86400 + h * 3600 + mi * 60 + min(s, 59) - offset, nanoseconds: Int32(nanos))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
