/// A point in time with microsecond precision, as Hearth stores it: microseconds since the Unix epoch (UTC).
/// The range is Firestore's: 0001-01-01T00:00:00Z through 9999-12-31T23:59:59.999999Z.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var micros: Int64

    public static let minMicros: Int64 = -62_135_596_800_000_000   // 0001-01-01T00:00:00Z
    public static let maxMicros: Int64 = 253_402_300_799_999_999   // 9999-12-31T23:59:59.999999Z

    public init(micros: Int64) { self.micros = micros }

    public init(seconds: Int64, nanos: Int32 = 0) {
        self.micros = seconds &* 1_000_000 &+ Int64(nanos / 1000)
    }

    public var seconds: Int64 { micros >= 0 ? micros / 1_000_000 : -((-micros + 999_999) / 1_000_000) }
    public var microsOfSecond: Int64 { micros - seconds * 1_000_000 }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.micros < b.micros }

    public var isInRange: Bool { micros >= Timestamp.minMicros && micros <= Timestamp.maxMicros }

    /// RFC 3339 in UTC with exactly six fractional digits: `2026-11-29T12:00:00.123456Z`.
    public var description: String { rfc3339 }

    public var rfc3339: String {
        var buf = [UInt8](repeating: 0, count: 27)
        buf.withUnsafeMutableBufferPointer { writeRFC3339(into: $0.baseAddress!) }
        return String(decoding: buf, as: UTF8.self)
    }

    /// Writes the 27-byte RFC 3339 form into `p` (which must have room for 27 bytes).
    public func writeRFC3339(into p: UnsafeMutablePointer<UInt8>) {
        let secs = seconds
        let frac = micros - secs * 1_000_000
        let days = secs >= 0 ? secs / 86_400 : -((-secs + 86_399) / 86_400)
        let sod = secs - days * 86_400
        let (y, m, d) = CivilDate.date(days: days)
        func put(_ v: Int64, _ width: Int, _ at: Int) {
            var v = v
            var i = at + width - 1
            while i >= at { p[i] = UInt8(48 + v % 10); v /= 10; i -= 1 }
        }
        put(y, 4, 0); p[4] = 45
        put(m, 2, 5); p[7] = 45
        put(d, 2, 8); p[10] = 84
        put(sod / 3600, 2, 11); p[13] = 58
        put(sod / 60 % 60, 2, 14); p[16] = 58
        put(sod % 60, 2, 17); p[19] = 46
        put(frac, 6, 20); p[26] = 90
    }

    /// Parses RFC 3339 (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `t`/`z` accepted in lower case, a space
    /// accepted for `T`). Fraction digits beyond the sixth are truncated. Returns nil when malformed or out of range.
    public static func parse(_ text: String) -> Timestamp? {
        var text = text
        return text.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    public static func parse(bytes s: UnsafeRawBufferPointer) -> Timestamp? {
        let n = s.count
        guard n >= 20 else { return nil }
        func digits(_ at: Int, _ count: Int) -> Int64? {
            var v: Int64 = 0
            for i in at..<(at + count) {
                let c = s[i]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        guard let year = digits(0, 4), s[4] == 45, let month = digits(5, 2), s[7] == 45, let day = digits(8, 2),
              s[10] == 84 || s[10] == 116 || s[10] == 32,
              let hour = digits(11, 2), s[13] == 58, let minute = digits(14, 2), s[16] == 58, let second = digits(17, 2)
        else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        var i = 19
        var frac: Int64 = 0
        if i < n && s[i] == 46 {
            i += 1
            var count = 0
            while i < n, s[i] >= 48, s[i] <= 57 {
                if count < 6 { frac = frac * 10 + Int64(s[i] - 48) }
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
            if count < 6 { for _ in count..<6 { frac *= 10 } }
        }
        guard i < n else { return nil }
        var offset: Int64 = 0
        if s[i] == 90 || s[i] == 122 {
            i += 1
        } else if s[i] == 43 || s[i] == 45 {
            guard i + 6 == n, let oh = digits(i + 1, 2), s[i + 3] == 58, let om = digits(i + 4, 2), oh <= 23, om <= 59
            else { return nil }
            offset = (oh * 3600 + om * 60) * (s[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == n else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        let t = Timestamp(micros: secs * 1_000_000 + frac)
        return t.isInRange ? t : nil
    }

}
