import HearthModel
import HearthProtocol
import Testing

@Suite struct JSONParserTests {
    @Test func scalars() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            #expect(try p.parse("null").kind == .null)
            #expect(try p.parse("null").isNull)
            #expect(try p.parse("true").bool == true)
            #expect(try p.parse("false").bool == false)
            #expect(try p.parse("42").int64 == 42)
            #expect(try p.parse("-7").int64 == -7)
            #expect(try p.parse("-0").int64 == 0)
            #expect(try p.parse("9223372036854775807").int64 == Int64.max)
            #expect(try p.parse("-9223372036854775808").int64 == Int64.min)
            #expect(try p.parse("1.5").double == 1.5)
            #expect(try p.parse("1e3").double == 1000)
            #expect(try p.parse("1E+3").kind == .double)
            #expect(try p.parse("-0.0").double?.sign == .minus)
            #expect(try p.parse("42").double == nil)
            #expect(try p.parse("42").number == 42)
            #expect(try p.parse("\"hi\"").string == "hi")
            #expect(try p.parse("\"hi\"").int64 == nil)
        }
    }

    @Test func bigIntegersAreDoubles() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            let u = try p.parse("9223372036854775808")
            #expect(u.kind == .double)
            #expect(u.double == 9223372036854775808.0)
            #expect(u.int64 == nil)
            #expect(try p.parse("18446744073709551615").double == 18446744073709551615.0)
            // Beyond uint64: simdjson's DOM parser rejects these; the parser reparses them as doubles.
            #expect(try p.parse("18446744073709551616").double == 18446744073709551616.0)
            #expect(try p.parse("-9223372036854775809").double == -9223372036854775809.0)
            let r = try p.parse("{\"a\":123456789012345678901234567890,\"b\":\"123456789012345678901234567890\",\"c\":1}")
            #expect(r["a"]?.double == 1.2345678901234568e29)
            #expect(r["b"]?.string == "123456789012345678901234567890")
            #expect(r["c"]?.int64 == 1)
        }
    }

    @Test func strings() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            #expect(try p.parse(#""a\"b\\c\/d\n\t\r\b\f""#).string == "a\"b\\c/d\n\t\r\u{8}\u{C}")
            #expect(try p.parse(#""\u00e9\ud83d\ude00""#).string == "é😀")
            #expect(try p.parse("\"é😀\"").string == "é😀")
            let s = try p.parse("\"\"")
            #expect(s.string == "")
            #expect(s.stringBytes?.count == 0)
            let r = try p.parse("\"abc\"")
            #expect(r.withStringBytes { Array($0) } == Array("abc".utf8))
            #expect(r.stringEquals("abc"))
            #expect(!r.stringEquals("abd"))
            #expect(try p.parse("1").withStringBytes { $0.count } == nil)
        }
    }

    @Test func containers() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            let r = try p.parse(#"{"op":"set","n":[1,[2,3],{"x":null}],"e":{},"f":[],"op2":1.5}"#)
            #expect(r.kind == .object)
            #expect(r.count == 5)
            #expect(r["op"]?.string == "set")
            #expect(r["op2"]?.double == 1.5)
            #expect(r["missing"] == nil)
            #expect(r.members.map(\.key) == ["op", "n", "e", "f", "op2"])
            let n = try #require(r["n"])
            #expect(n.kind == .array)
            #expect(n.count == 3)
            let els = Array(n.elements)
            #expect(els.count == 3)
            #expect(els[0].int64 == 1)
            #expect(els[1].elements.map { $0.int64 } == [2, 3])
            #expect(els[2]["x"]?.isNull == true)
            #expect(r["e"]?.count == 0)
            #expect(r["e"]?.members.map(\.key) == [])
            #expect(r["f"]?.count == 0)
            #expect(Array(r["f"]!.elements).isEmpty)
            // Lookup and iteration on the wrong kind are empty, not traps.
            #expect(n["x"] == nil)
            #expect(Array(r.elements).isEmpty)
            #expect(r["op"]!.count == 0)
        }
    }

    @Test func duplicateKeysLookUpTheFirst() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            let r = try p.parse(#"{"a":1,"a":2}"#)
            #expect(r["a"]?.int64 == 1)
            #expect(r.count == 2)
        }
    }

    @Test func notAnObjectIsNotAParserError() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            #expect(try p.parse("[1]").kind == .array)
            #expect(try p.parse("  \"x\"  ").kind == .string)
            #expect(JSONRef.Kind.array.name == "array")
        }
    }

    @Test func parserIsReusableAndBuffersShrink() throws {
        let p = JSONParser(retainedCapacity: 1024)
        defer { withExtendedLifetime(p) {} }
        do {
            let big = "[" + Array(repeating: "\"0123456789\"", count: 20_000).joined(separator: ",") + "]"
            #expect(try p.parse(big).count == 20_000)
            #expect(try p.parse("{\"a\":1}")["a"]?.int64 == 1)
            #expect(try p.parse(big).count == 20_000)
            #expect(try p.parse([UInt8]("[true]".utf8)).elements.map(\.bool) == [true])
        }
    }

    @Test func paddedInput() throws {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        do {
            var buf = Array("{\"k\":\"v\"}".utf8)
            let n = buf.count
            buf += [UInt8](repeating: 0, count: JSONParser.padding)
            let v = try buf.withUnsafeBytes { b in try p.parse(padded: UnsafeRawBufferPointer(rebasing: b[0..<n]))["k"]?.string }
            #expect(v == "v")
        }
    }
}
