import HearthModel
import Testing

struct ParseCase: Sendable, CustomTestStringConvertible {
    let text: String
    let micros: Int64
    let canonical: String
    var testDescription: String { text }
}

let validTimestamps: [ParseCase] = [
    ParseCase(text: "1970-01-01T00:00:00Z", micros: 0, canonical: "1970-01-01T00:00:00.000000Z"),
    ParseCase(text: "1970-01-01T00:00:00.000000Z", micros: 0, canonical: "1970-01-01T00:00:00.000000Z"),
    ParseCase(text: "2026-11-29T12:00:00.123456Z", micros: 1_795_953_600_123_456, canonical: "2026-11-29T12:00:00.123456Z"),
    ParseCase(text: "2024-02-29T12:34:56.789Z", micros: 1_709_210_096_789_000, canonical: "2024-02-29T12:34:56.789000Z"),
    // Fraction digits 0..9; beyond the sixth they are truncated, not rounded.
    ParseCase(text: "2024-01-01T00:00:00.1Z", micros: 1_704_067_200_100_000, canonical: "2024-01-01T00:00:00.100000Z"),
    ParseCase(text: "2024-01-01T00:00:00.12Z", micros: 1_704_067_200_120_000, canonical: "2024-01-01T00:00:00.120000Z"),
    ParseCase(text: "2024-01-01T00:00:00.123Z", micros: 1_704_067_200_123_000, canonical: "2024-01-01T00:00:00.123000Z"),
    ParseCase(text: "2024-01-01T00:00:00.1234Z", micros: 1_704_067_200_123_400, canonical: "2024-01-01T00:00:00.123400Z"),
    ParseCase(text: "2024-01-01T00:00:00.12345Z", micros: 1_704_067_200_123_450, canonical: "2024-01-01T00:00:00.123450Z"),
    ParseCase(text: "2024-01-01T00:00:00.123456Z", micros: 1_704_067_200_123_456, canonical: "2024-01-01T00:00:00.123456Z"),
    ParseCase(text: "2024-01-01T00:00:00.1234567Z", micros: 1_704_067_200_123_456, canonical: "2024-01-01T00:00:00.123456Z"),
    ParseCase(text: "2024-01-01T00:00:00.12345678Z", micros: 1_704_067_200_123_456, canonical: "2024-01-01T00:00:00.123456Z"),
    ParseCase(text: "2024-01-01T00:00:00.123456789Z", micros: 1_704_067_200_123_456, canonical: "2024-01-01T00:00:00.123456Z"),
    ParseCase(text: "2024-01-01T00:00:00.999999999Z", micros: 1_704_067_200_999_999, canonical: "2024-01-01T00:00:00.999999Z"),
    ParseCase(text: "2024-01-01T00:00:00.000000999Z", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    // Offsets are converted to UTC.
    ParseCase(text: "2024-01-01T02:00:00+02:00", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    ParseCase(text: "2024-01-01T00:00:00-05:30", micros: 1_704_087_000_000_000, canonical: "2024-01-01T05:30:00.000000Z"),
    ParseCase(text: "2024-01-01T00:00:00+00:00", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    ParseCase(text: "2024-01-01T00:00:00-00:00", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    ParseCase(text: "2024-03-01T01:00:00+02:00", micros: 1_709_247_600_000_000, canonical: "2024-02-29T23:00:00.000000Z"),
    ParseCase(text: "2023-12-31T23:30:00.5-01:00", micros: 1_704_069_000_500_000, canonical: "2024-01-01T00:30:00.500000Z"),
    ParseCase(text: "2024-01-01T05:30:00.25+05:30", micros: 1_704_067_200_250_000, canonical: "2024-01-01T00:00:00.250000Z"),
    // Lower-case t and z, and a space for T.
    ParseCase(text: "2024-01-01t00:00:00z", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    ParseCase(text: "2024-01-01 00:00:00Z", micros: 1_704_067_200_000_000, canonical: "2024-01-01T00:00:00.000000Z"),
    // Leap years.
    ParseCase(text: "2024-02-29T00:00:00Z", micros: 1_709_164_800_000_000, canonical: "2024-02-29T00:00:00.000000Z"),
    ParseCase(text: "2000-02-29T00:00:00Z", micros: 951_782_400_000_000, canonical: "2000-02-29T00:00:00.000000Z"),
    ParseCase(text: "1600-02-29T00:00:00Z", micros: -11_670_998_400_000_000, canonical: "1600-02-29T00:00:00.000000Z"),
    ParseCase(text: "1900-03-01T00:00:00Z", micros: -2_203_891_200_000_000, canonical: "1900-03-01T00:00:00.000000Z"),
    // Negative epoch times.
    ParseCase(text: "1969-12-31T23:59:59.5Z", micros: -500_000, canonical: "1969-12-31T23:59:59.500000Z"),
    ParseCase(text: "1969-12-31T23:59:59.999999Z", micros: -1, canonical: "1969-12-31T23:59:59.999999Z"),
    ParseCase(text: "1969-12-31T23:59:59Z", micros: -1_000_000, canonical: "1969-12-31T23:59:59.000000Z"),
    ParseCase(text: "1969-07-20T20:17:40Z", micros: -14_182_940_000_000, canonical: "1969-07-20T20:17:40.000000Z"),
    ParseCase(text: "1000-06-15T08:09:10.000001Z", micros: -30_595_938_649_999_999, canonical: "1000-06-15T08:09:10.000001Z"),
    ParseCase(text: "1999-12-31T23:59:59.999999Z", micros: 946_684_799_999_999, canonical: "1999-12-31T23:59:59.999999Z"),
    // The range ends.
    ParseCase(text: "0001-01-01T00:00:00Z", micros: Timestamp.minMicros, canonical: "0001-01-01T00:00:00.000000Z"),
    ParseCase(text: "0001-01-01T01:00:00+01:00", micros: Timestamp.minMicros, canonical: "0001-01-01T00:00:00.000000Z"),
    ParseCase(text: "9999-12-31T23:59:59.999999Z", micros: Timestamp.maxMicros, canonical: "9999-12-31T23:59:59.999999Z"),
    ParseCase(text: "9999-12-31T23:59:59.999999999Z", micros: Timestamp.maxMicros, canonical: "9999-12-31T23:59:59.999999Z"),
    ParseCase(text: "9999-12-31T22:59:59.999999-01:00", micros: Timestamp.maxMicros, canonical: "9999-12-31T23:59:59.999999Z"),
]

let invalidTimestamps: [String] = [
    "",
    "2024",
    "2024-01-01",
    "2024-01-01T00:00:00",            // missing zone
    "2024-01-01T00:00:00.123",        // missing zone after fraction
    "2024-01-01T00:00:00.123456789",
    "2024-01-01T12:00:00.Z",          // empty fraction
    "2024-01-01T12:00:00.+01:00",
    "2024-01-01T12:00:00,5Z",         // comma fraction
    "2023-02-29T00:00:00Z",           // not a leap year
    "1900-02-29T00:00:00Z",           // divisible by 100, not by 400
    "2100-02-29T00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-06-31T00:00:00Z",
    "2024-09-31T00:00:00Z",
    "2024-11-31T00:00:00Z",
    "2024-01-32T00:00:00Z",
    "2024-00-10T00:00:00Z",
    "2024-13-01T00:00:00Z",
    "2024-01-00T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T23:60:00Z",
    "2024-01-01T23:59:60Z",           // leap seconds are not representable
    "2024-1-01T00:00:00Z",
    "2024-01-1T00:00:00Z",
    "2024-01-01T0:00:00Z",
    "24-01-01T00:00:00Z",
    "+2024-01-01T00:00:00Z",
    "-2024-01-01T00:00:00Z",
    "2024/01/01T00:00:00Z",
    "2024-01-01X00:00:00Z",
    "2024-01-01T00-00-00Z",
    "2024-01-01T0a:00:00Z",
    "2O24-01-01T00:00:00Z",           // letter O
    "２０２４-01-01T00:00:00Z",         // full-width digits
    "2024-01-01T00:00:00Zjunk",       // trailing junk
    "2024-01-01T00:00:00Z ",
    " 2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00ZZ",
    "2024-01-01T00:00:00UTC",
    "2024-01-01T00:00:00+02",         // incomplete offset
    "2024-01-01T00:00:00+0200",
    "2024-01-01T00:00:00+02:00:00",
    "2024-01-01T00:00:00+2:00",
    "2024-01-01T00:00:00+24:00",
    "2024-01-01T00:00:00+02:60",
    "2024-01-01T00:00:00+02:00Z",
    "2024-01-01T00:00:00 +02:00",
    "2024-01-01T00:00:00.12a3Z",
    "0000-12-31T23:59:59Z",           // before the range
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00+00:01",      // 0000-12-31T23:59Z
    "0001-01-01T00:59:59.999999+01:00",
    "9999-12-31T23:59:59-00:01",      // 10000-01-01T00:00:59Z
    "9999-12-31T23:00:00-01:00",
    "10000-01-01T00:00:00Z",
]

@Suite("Timestamp")
struct TimestampTests {
    @Test("parses RFC 3339 and formats the canonical UTC form", arguments: validTimestamps)
    func parse(c: ParseCase) throws {
        let t = try #require(Timestamp.parse(c.text), "\(c.text) should parse")
        #expect(t.micros == c.micros, "\(c.text) → \(t.micros) micros, expected \(c.micros)")
        #expect(t.rfc3339 == c.canonical)
        #expect(t.description == c.canonical)
        #expect(t.isInRange)
        // The canonical form parses back to the same instant.
        #expect(Timestamp.parse(t.rfc3339) == t)
    }

    @Test("rejects malformed or out-of-range text", arguments: invalidTimestamps)
    func reject(text: String) {
        let t = Timestamp.parse(text)
        #expect(t == nil, "\"\(text)\" parsed as \(t.map { "\($0.micros) (\($0.rfc3339))" } ?? "")")
    }

    @Test("formats micros", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000Z"),
        (1, "1970-01-01T00:00:00.000001Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (-999_999, "1969-12-31T23:59:59.000001Z"),
        (-1_000_000, "1969-12-31T23:59:59.000000Z"),
        (-1_000_001, "1969-12-31T23:59:58.999999Z"),
        (-86_400_000_000, "1969-12-31T00:00:00.000000Z"),
        (-86_400_000_001, "1969-12-30T23:59:59.999999Z"),
        (86_399_999_999, "1970-01-01T23:59:59.999999Z"),
        (951_868_800_000_000, "2000-03-01T00:00:00.000000Z"),
        (951_868_799_999_999, "2000-02-29T23:59:59.999999Z"),
        (4_107_542_400_000_000, "2100-03-01T00:00:00.000000Z"),
        (Timestamp.minMicros, "0001-01-01T00:00:00.000000Z"),
        (Timestamp.minMicros + 1, "0001-01-01T00:00:00.000001Z"),
        (Timestamp.maxMicros, "9999-12-31T23:59:59.999999Z"),
        (-62_104_147_200_000_000, "0001-12-31T00:00:00.000000Z"),
    ] as [(Int64, String)])
    func format(micros: Int64, expected: String) {
        let t = Timestamp(micros: micros)
        #expect(t.rfc3339 == expected)
        #expect(Timestamp.parse(expected) == t)
        // writeRFC3339 writes the same 27 bytes.
        var buf = [UInt8](repeating: 0, count: 27)
        buf.withUnsafeMutableBufferPointer { t.writeRFC3339(into: $0.baseAddress!) }
        #expect(String(decoding: buf, as: UTF8.self) == expected)
    }

    @Test("every day from 1999-12-25 to 2001-01-05 round-trips at several times of day")
    func dayRoundTrip() {
        let start: Int64 = 946_080_000   // 1999-12-25T00:00:00Z
        for day in Int64(0)..<378 {
            for sod in [Int64(0), 1, 43_200, 86_399] {
                let t = Timestamp(micros: (start + day * 86_400 + sod) * 1_000_000 + 123)
                let s = t.rfc3339
                #expect(Timestamp.parse(s) == t, "\(t.micros) → \(s)")
            }
        }
    }

    @Test("sampled round trips across the whole range")
    func sampledRoundTrip() {
        var rng = SplitMix(seed: 42)
        for _ in 0..<2_000 {
            let micros = Int64.random(in: Timestamp.minMicros...Timestamp.maxMicros, using: &rng)
            let t = Timestamp(micros: micros)
            #expect(Timestamp.parse(t.rfc3339) == t, "\(micros) → \(t.rfc3339)")
        }
    }

    @Test("seconds and microsOfSecond floor toward negative infinity", arguments: [
        (Int64(0), Int64(0), Int64(0)),
        (1, 0, 1),
        (999_999, 0, 999_999),
        (1_000_000, 1, 0),
        (-1, -1, 999_999),
        (-500_000, -1, 500_000),
        (-1_000_000, -1, 0),
        (-1_000_001, -2, 999_999),
        (Timestamp.minMicros, -62_135_596_800, 0),
        (Timestamp.maxMicros, 253_402_300_799, 999_999),
    ] as [(Int64, Int64, Int64)])
    func secondsSplit(micros: Int64, seconds: Int64, frac: Int64) {
        let t = Timestamp(micros: micros)
        #expect(t.seconds == seconds)
        #expect(t.microsOfSecond == frac)
    }

    @Test("init(seconds:nanos:) truncates nanoseconds to microseconds")
    func initSecondsNanos() {
        #expect(Timestamp(seconds: 1, nanos: 999_999_999).micros == 1_999_999)
        #expect(Timestamp(seconds: 1, nanos: 1_999).micros == 1_000_001)
        #expect(Timestamp(seconds: -1, nanos: 500_000_000).micros == -500_000)
        #expect(Timestamp(seconds: 0).micros == 0)
    }

    @Test("range and ordering")
    func rangeAndOrder() {
        #expect(Timestamp(micros: Timestamp.minMicros).isInRange)
        #expect(Timestamp(micros: Timestamp.maxMicros).isInRange)
        #expect(!Timestamp(micros: Timestamp.minMicros - 1).isInRange)
        #expect(!Timestamp(micros: Timestamp.maxMicros + 1).isInRange)
        #expect(Timestamp(micros: -1) < Timestamp(micros: 0))
        #expect(!(Timestamp(micros: 0) < Timestamp(micros: 0)))
        #expect(Timestamp.parse("2024-01-01T00:00:00+01:00")! < Timestamp.parse("2024-01-01T00:00:00Z")!)
    }
}
