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

    @Test func duplicateKeysAreRefusedByDefault() {
        let p = JSONParser()
        defer { withExtendedLifetime(p) {} }
        expectError("duplicate key \"a\"") { _ = try p.parse(#"{"a":1,"a":2}"#) }
        expectError("duplicate key \"x\" in data.a") { _ = try p.parse(#"{"data":{"a":{"x":1,"x":2}}}"#) }
        #expect(throws: Never.self) { _ = try p.parse(#"{"a":1,"b":{"a":2}}"#) }
    }

    @Test func aLenientParserReturnsTheDocumentAndReportsTheKey() throws {
        let p = JSONParser(rejectsDuplicateKeys: false)
        defer { withExtendedLifetime(p) {} }
        let r = try p.parse(#"{"id":7,"op":"get","op":"set"}"#)
        #expect(r["op"]?.string == "get")
        #expect(r["id"]?.int64 == 7)
        #expect(p.duplicateKey == DuplicateKey(key: "op", location: []))
        #expect(p.duplicateKey?.isTopLevel == true)
        #expect(p.duplicateKey?.message == "duplicate key \"op\"")
        _ = try p.parse(#"{"op":"get"}"#)
        #expect(p.duplicateKey == nil)
        _ = try p.parse(#"{"a":1,"a":2}"#)
        #expect(throws: HearthError.self) { _ = try p.parse(#"{"op":"get""#) }
        #expect(p.duplicateKey == nil)
    }

    /// Where the first repeated key is found, at any depth, in any container.
    static let duplicateCases: [(json: String, key: String?, location: String)] = [
        (#"{}"#, nil, ""),
        (#"[{"a":1},{"a":2}]"#, nil, ""),
        (#"{"a":1,"b":{"a":1},"c":[{"a":1}]}"#, nil, ""),
        (#"{"a":1,"a":1}"#, "a", ""),
        (#"{"path":"x","data":{},"path":"y"}"#, "path", ""),
        (#"{"a":1,"\u0061":2}"#, "a", ""),                      // equal once unescaped
        ("{\"\u{E9}\":1,\"e\u{301}\":2}", nil, ""),                // NFC and NFD are different keys
        (#"{"":1,"":2}"#, "", ""),
        (#"{"n":1.5,"m":-3,"u":18446744073709551615,"n":true}"#, "n", ""),   // two-word numbers are skipped
        (#"{"writes":[{"op":"set"},{"op":"set","path":"a/b","path":"c/d"}]}"#, "path", "writes[1]"),
        (#"{"data":{"a":{"b":[1,{"x":1,"x":2}]}}}"#, "x", "data.a.b[1]"),
        (#"{"query":{"where":["a","==",1],"limit":1,"limit":2}}"#, "limit", "query"),
        (#"{"data":{"first name":{"k":1,"k":2}}}"#, "k", "data.`first name`"),
        (#"[[],[{"q":1}],[{"q":1,"r":2,"q":3}]]"#, "q", "[2][0]"),
        // Outer objects are checked before the ones inside them.
        (#"{"a":{"x":1,"x":2},"b":1,"b":2}"#, "b", ""),
        // Within one object, the first repetition in document order.
        (#"{"b":1,"a":1,"a":2,"b":2}"#, "a", ""),
    ]

    @Test(arguments: duplicateCases.indices)
    func duplicateKeysAreFoundAtEveryDepth(_ i: Int) throws {
        let c = Self.duplicateCases[i]
        let p = JSONParser(rejectsDuplicateKeys: false)
        defer { withExtendedLifetime(p) {} }
        _ = try p.parse(c.json)
        #expect(p.duplicateKey?.key == c.key, "\(c.json)")
        if c.key != nil { #expect(p.duplicateKey?.locationText == c.location, "\(c.json)") }
    }

    /// Objects with more keys than the pairwise check handles are sorted; the reported key is still the first
    /// repetition in document order.
    @Test func largeObjects() throws {
        let p = JSONParser(rejectsDuplicateKeys: false)
        defer { withExtendedLifetime(p) {} }
        func object(_ keys: [String]) -> String { "{" + keys.map { "\"\($0)\":0" }.joined(separator: ",") + "}" }
        let unique = (0..<5000).map { "k\($0)" }
        _ = try p.parse(object(unique))
        #expect(p.duplicateKey == nil)
        _ = try p.parse(#"{"data":"# + object(unique + ["k4999", "k17", "k17"]) + "}")
        #expect(p.duplicateKey == DuplicateKey(key: "k4999", location: [.key("data")]))
        _ = try p.parse(object(Array(unique[0..<20]) + ["k3"]))
        #expect(p.duplicateKey?.key == "k3")
        _ = try p.parse(object(Array(unique[0..<20].reversed()) + ["k19", "k0"]))
        #expect(p.duplicateKey?.key == "k19")
    }

    /// Random documents (few distinct keys, so repeats are common; objects of up to 40 members, so both the
    /// pairwise and the sorted check run) against a plain walk of the parsed document: an object's keys
    /// before the objects inside it, members and elements in document order.
    @Test(arguments: 0..<4)
    func randomDocumentsAgreeWithAPlainWalk(seed: UInt64) throws {
        var r = SplitMix64(seed: seed)
        let keys = ["a", "b", "ab", "ba", "\\u0061", "k1", "k2", "k10", "long_key_name", "é", "e\\u0301", ""]
        func document(_ depth: Int) -> String {
            switch r.next() % (depth > 3 ? 2 : 5) {
            case 0: return String(r.next() % 100)
            case 1: return "\"s\""
            case 2, 3:
                let n = Int(r.next() % (r.next() % 4 == 0 ? 40 : 6))
                let members = (0..<n).map { _ in "\"\(keys[Int(r.next() % UInt64(keys.count))])\":\(document(depth + 1))" }
                return "{" + members.joined(separator: ",") + "}"
            default:
                return "[" + (0..<Int(r.next() % 4)).map { _ in document(depth + 1) }.joined(separator: ",") + "]"
            }
        }
        func reference(_ v: JSONRef, _ location: [DuplicateKey.Step]) -> DuplicateKey? {
            if v.isObject {
                var seen: [[UInt8]] = []
                for m in v.members {
                    let k = Array(m.keyBytes)
                    if seen.contains(k) { return DuplicateKey(key: m.key, location: location) }
                    seen.append(k)
                }
                for m in v.members {
                    if let d = reference(m.value, location + [.key(m.key)]) { return d }
                }
            } else if v.isArray {
                for (i, e) in v.elements.enumerated() {
                    if let d = reference(e, location + [.index(i)]) { return d }
                }
            }
            return nil
        }
        let p = JSONParser(rejectsDuplicateKeys: false)
        defer { withExtendedLifetime(p) {} }
        var found = 0
        for _ in 0..<400 {
            let json = "{\"doc\":" + document(0) + "}"
            let root = try p.parse(json)
            let expected = reference(root, [])
            #expect(p.duplicateKey == expected, "\(json)")
            if expected != nil { found += 1 }
        }
        #expect(found > 50 && found < 350, "a mix of documents with and without repeats (\(found))")
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

/// A small seeded generator for reproducible random documents.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
