import HearthModel
@testable import HearthProtocol
import Testing

@Suite struct JSONWriterTests {
    /// A writer handed over with `take` keeps the only reference to its buffer: writing on copies nothing (the
    /// buffer stays where it was), and the writer left behind is empty and writes on its own.
    @Test func aTakenWriterOwnsItsBufferAlone() {
        var w = JSONWriter(capacity: 64)
        w.beginArray()
        w.string("first")
        let buffer = w.storage.base
        var taken = w.take()
        #expect(isKnownUniquelyReferenced(&taken.storage))
        taken.endArray()
        #expect(taken.storage.base == buffer)
        #expect(String(decoding: taken.bytes, as: UTF8.self) == #"["first"]"#)
        #expect(w.count == 0)
        w.string("apart")
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""apart""#)
        #expect(String(decoding: taken.bytes, as: UTF8.self) == #"["first"]"#)
        // And back, as a sink gives its writer back.
        var back = taken.take()
        #expect(isKnownUniquelyReferenced(&back.storage))
        #expect(back.storage.base == buffer)
    }

    func written(_ body: (inout JSONWriter) -> Void) -> String {
        var w = JSONWriter(capacity: 16)
        body(&w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// A key written as a literal (copied from where it lives) and the same key held in a String are written
    /// alike, escapes included.
    @Test func literalAndStringKeysAreWrittenAlike() {
        func both(_ literal: (inout JSONWriter) -> Void, _ text: String) -> (String, String) {
            var a = JSONWriter(), b = JSONWriter()
            a.beginObject(); literal(&a); a.int(1); a.key("second"); a.int(2); a.endObject()
            b.beginObject(); b.key(text); b.int(1); b.key(String("second")); b.int(2); b.endObject()
            return (String(decoding: a.bytes, as: UTF8.self), String(decoding: b.bytes, as: UTF8.self))
        }
        let cases: [((inout JSONWriter) -> Void, String, String)] = [
            ({ $0.key("type") }, "type", #"{"type":1,"second":2}"#),
            ({ $0.key("a\"b\\c") }, "a\"b\\c", #"{"a\"b\\c":1,"second":2}"#),
            ({ $0.key("line\nbreak\u{1}") }, "line\nbreak\u{1}", #"{"line\nbreak\u0001":1,"second":2}"#),
            ({ $0.key("caf\u{E9}") }, "caf\u{E9}", "{\"caf\u{E9}\":1,\"second\":2}"),
            ({ $0.key("") }, "", #"{"":1,"second":2}"#),
        ]
        for (literal, text, expected) in cases {
            let (a, b) = both(literal, text)
            #expect(a == expected)
            #expect(b == expected)
        }
    }

    @Test func structureAndCommas() {
        let s = written { w in
            w.beginObject()
            w.key("a"); w.int(1)
            w.key("b"); w.beginArray(); w.bool(true); w.null(); w.beginObject(); w.endObject(); w.beginArray(); w.endArray(); w.endArray()
            w.key("c"); w.raw(Array(#"{"x":[1,2]}"#.utf8))
            w.key("d"); w.string("s")
            w.endObject()
        }
        #expect(s == #"{"a":1,"b":[true,null,{},[]],"c":{"x":[1,2]},"d":"s"}"#)
    }

    @Test func newlineAndReset() {
        var w = JSONWriter()
        w.beginObject(); w.endObject(); w.newline()
        w.beginObject(); w.key("k"); w.uint(UInt64.max); w.endObject(); w.newline()
        #expect(String(decoding: w.bytes, as: UTF8.self) == "{}\n{\"k\":18446744073709551615}\n")
        w.reset()
        w.int(5)
        #expect(w.bytes == Array("5".utf8))
    }

    @Test func integers() {
        let cases: [(Int64, String)] = [(0, "0"), (7, "7"), (-1, "-1"), (10, "10"), (-10, "-10"), (1_234_567_890, "1234567890"),
                                        (Int64.max, "9223372036854775807"), (Int64.min, "-9223372036854775808")]
        for (v, text) in cases { #expect(written { $0.int(v) } == text) }
    }

    @Test func doubles() {
        let cases: [(Double, String)] = [
            (3.0, "3.0"), (0.1, "0.1"), (-0.0, "-0.0"), (0, "0.0"), (1e-300, "1e-300"), (.leastNonzeroMagnitude, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (1e16, "1e+16"), (123456.0, "123456.0"),
            (-2.5, "-2.5"), (1.0 / 3.0, "0.3333333333333333"), (2.5e-5, "2.5e-05"),
            (.nan, #"{"$double":"NaN"}"#), (.infinity, #"{"$double":"Infinity"}"#), (-.infinity, #"{"$double":"-Infinity"}"#),
        ]
        for (v, text) in cases { #expect(written { $0.double(v) } == text) }
        // Doubles in arrays keep their commas, also in the typed form.
        #expect(written { w in w.beginArray(); w.double(1); w.double(.nan); w.double(2); w.endArray() }
            == #"[1.0,{"$double":"NaN"},2.0]"#)
    }

    @Test func stringEscaping() {
        #expect(written { $0.string("a\"b\\c") } == #""a\"b\\c""#)
        #expect(written { $0.string("\n\r\t\u{8}\u{C}\u{0}\u{1F}\u{7F}") } == #""\n\r\t\b\f\u0000\u001f"# + "\u{7F}\"")
        #expect(written { $0.string("é😀\u{2028}/") } == "\"é😀\u{2028}/\"")
        #expect(written { $0.key("k\"") } == #""k\"":"#)
    }

    /// Strings are scanned eight bytes at a time: random strings of every length up to 40 with the bytes that
    /// need escaping at every place (and bytes just around them: 0x1F/0x20, 0x21/0x23, 0x5B/0x5D, multi-byte
    /// UTF-8) are written as the byte-by-byte rule says.
    @Test func escapingMatchesTheByteRuleAtEveryPlace() {
        var rng = SplitMix(state: 11)
        let alphabet: [UInt8] = [0x00, 0x01, 0x08, 0x09, 0x0A, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x61, 0x7F,
                                 0xC3, 0xA9, 0xE2, 0x80, 0xA8]
        func expected(_ bytes: [UInt8]) -> [UInt8] {
            var out: [UInt8] = [0x22]
            for c in bytes {
                switch c {
                case 0x22: out += Array(#"\""#.utf8)
                case 0x5C: out += Array(#"\\"#.utf8)
                case 0x0A: out += Array(#"\n"#.utf8)
                case 0x0D: out += Array(#"\r"#.utf8)
                case 0x09: out += Array(#"\t"#.utf8)
                case 0x08: out += Array(#"\b"#.utf8)
                case 0x0C: out += Array(#"\f"#.utf8)
                case ..<0x20: out += Array(#"\u00"#.utf8) + Array(String(c >> 4, radix: 16).utf8) + Array(String(c & 15, radix: 16).utf8)
                default: out.append(c)
                }
            }
            return out + [0x22]
        }
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 41)
            // Mostly plain letters, so that whole clean words and words with one byte to escape both occur.
            let bytes = (0..<n).map { _ in rng.next() % 4 == 0 ? alphabet[Int(rng.next() % UInt64(alphabet.count))] : 0x61 }
            var w = JSONWriter(capacity: 16)
            bytes.withUnsafeBytes { raw in w.string(bytes: raw) }
            #expect(w.bytes == expected(bytes), "\(bytes)")
        }
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let s = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self) + "é😀"
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        var w = JSONWriter()
        w.string(s)
        #expect(try p.parse(w.bytes).string == s)
    }

    @Test func randomDoublesRoundTripAsDoubles() throws {
        var rng = SplitMix(state: 7)
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        var w = JSONWriter()
        for _ in 0..<20_000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            w.reset()
            w.double(d)
            let r = try p.parse(w.bytes)
            #expect(r.kind == .double)
            #expect(r.double?.bitPattern == d.bitPattern, "\(d)")
        }
    }

    @Test func copiesAreIndependent() {
        var a = JSONWriter()
        a.beginArray()
        var b = a
        b.int(1)
        a.int(2)
        a.endArray()
        b.endArray()
        #expect(String(decoding: a.bytes, as: UTF8.self) == "[2]")
        #expect(String(decoding: b.bytes, as: UTF8.self) == "[1]")
        #expect(a.withBytes { $0.count } == 3)
        #expect(a.count == 3)
    }

    @Test func growsPastItsCapacityAndShrinksOnReset() {
        var w = JSONWriter(capacity: 16)
        let long = String(repeating: "x", count: 3 << 20)
        w.string(long)
        #expect(w.count == long.utf8.count + 2)
        w.reset()
        w.string("a")
        #expect(w.bytes == Array("\"a\"".utf8))
    }
}
