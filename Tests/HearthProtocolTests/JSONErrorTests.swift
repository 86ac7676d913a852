import HearthModel
import HearthProtocol
import Testing

@Suite struct JSONErrorTests {
    /// Malformed lines, the byte offset reported, and the start of the reason.
    static let corpus: [(String, Int, String)] = [
        (#"{"a":1"#, 6, "unexpected end of input"),
        (#"{"a":1}x"#, 7, "unexpected 'x' after the JSON value"),
        (#"{"a":1}{"b":2}"#, 7, "unexpected '{' after the JSON value"),
        (#"{"a":"\q"}"#, 6, #"invalid escape sequence '\q'"#),
        (#"{"a":"\u12"}"#, 6, "invalid \\u escape"),
        (#"{"a":"\ud800"}"#, 6, "unpaired surrogate"),
        (#"{"a":"\udc00x"}"#, 6, "unpaired surrogate"),
        (#"{"a":01}"#, 5, "invalid number '01'"),
        (#"{"a":1.}"#, 5, "invalid number"),
        (#"{"a":-}"#, 5, "invalid number"),
        (#"{"a":1e}"#, 5, "invalid number '1e'"),
        (#"{"a":.5}"#, 5, "unexpected '.5'"),
        (#"{"a":1.5x}"#, 5, "invalid number '1.5x'"),
        (#"{"a":1e400}"#, 5, "number 1e400 is out of range"),
        (#"[-1e999]"#, 1, "number -1e999 is out of range"),
        (#"{"a":tru}"#, 5, "invalid literal 'tru'"),
        (#"{"a":nulll}"#, 5, "invalid literal 'nulll'"),
        (#"{"a":"x"#, 5, "unterminated string"),
        (#""abc"#, 0, "unterminated string"),
        (#"{"a" 1}"#, 5, "expected ':' after an object key"),
        (#"{"a":1,}"#, 7, "expected a string key, found '}'"),
        (#"{a:1}"#, 1, "expected a string key, found 'a'"),
        (#"[1,,2]"#, 3, "unexpected ','"),
        (#"[1 2]"#, 3, "expected ',' or ']' in an array"),
        (#"{"a":[1,2}"#, 9, "expected ',' or ']' in an array, found '}'"),
        (#"{"a":1 "b":2}"#, 7, "expected ',' or '}' in an object"),
        ("{\"a\":\"x\ty\"}", 7, "control character 0x09 must be escaped"),
        ("{\"a\":\"x\ny\"}", 7, "control character 0x0A must be escaped"),
        ("{\u{E9}:1}", 1, "expected a string key, found byte 0xC3"),
        ("   ", 3, "no JSON value"),
        ("", 0, "no JSON value"),
    ]

    @Test func corpusOffsetsAndReasons() {
        let p = JSONParser()
        for (input, offset, reason) in Self.corpus {
            do {
                _ = try p.parse(input)
                Issue.record("parsed \(input.debugDescription)")
            } catch {
                #expect(error.code == .invalidArgument)
                let head = "invalid JSON at byte \(offset): "
                #expect(error.message.hasPrefix(head) && error.message.dropFirst(head.count).hasPrefix(reason),
                        "input \(input.debugDescription): \(error.message)")
            }
        }
    }

    /// Found by fuzzing: a new parser's first input empty (no padded buffer yet) crashed in the copy.
    @Test func aNewParsersFirstInputMayBeEmpty() {
        for input in [[UInt8](), [32]] {
            #expect(throws: HearthError.self) { _ = try JSONParser().parse(input) }
            #expect(throws: HearthError.self) { _ = try JSONParser(retainedCapacity: 0).parse(input) }
        }
    }

    @Test func invalidUTF8IsReportedAsSuch() {
        let p = JSONParser()
        let cases: [([UInt8], Int)] = [
            (Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8), 6),
            (Array(#"{"a":"ok","b":"é"#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8), 17),   // overlong '/'
            (Array(#"["x"#.utf8) + [0xED, 0xA0, 0x80] + Array(#""]"#.utf8), 3),           // encoded surrogate
            (Array(#"["x"#.utf8) + [0xE2, 0x82] + Array(#""]"#.utf8), 3),                 // truncated sequence
            (Array(#"["#.utf8) + [0x80] + Array(#"]"#.utf8), 1),                          // outside a string
        ]
        for (bytes, offset) in cases {
            do {
                _ = try p.parse(bytes)
                Issue.record("parsed \(bytes)")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message == "invalid UTF-8 at byte \(offset)", "\(bytes)")
            }
        }
    }

    @Test func nestingLimit() throws {
        let p = JSONParser()
        let ok = String(repeating: "[", count: 1024) + String(repeating: "]", count: 1024)
        #expect(try p.parse(ok).kind == .array)
        let deep = String(repeating: "[", count: 1025) + String(repeating: "]", count: 1025)
        expectError("invalid JSON at byte 1024: nesting deeper than 1024 levels") { _ = try p.parse(deep) }
    }

    @Test func parserRecoversAfterAnError() throws {
        let p = JSONParser()
        expectError("invalid JSON") { _ = try p.parse("{") }
        defer { withExtendedLifetime(p) {} }
        #expect(try p.parse("{\"a\":2}")["a"]?.int64 == 2)
    }
}
