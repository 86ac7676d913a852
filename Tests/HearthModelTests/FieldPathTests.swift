@testable import HearthModel
import Testing

@Suite("FieldPath")
struct FieldPathTests {
    /// The usual form (identifier characters and dots) takes a short path; every string parses to the same
    /// segments, or the same error, as through the general parse. Random strings over the characters that
    /// matter (dots, backticks, escapes, reserved characters, non-ASCII), up to 9 bytes.
    @Test func thePlainFormParsesAsTheGeneralForm() {
        let alphabet: [String] = ["a", "Z", "0", "_", ".", "`", "\\", "~", "*", " ", "é", "-", "b"]
        var rng = SystemRandomNumberGenerator()
        var plain = 0
        for _ in 0..<40_000 {
            let text = (0..<Int.random(in: 0...9, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }.joined()
            if FieldPath.plainSegments(text) != nil { plain += 1 }
            let fast = Result { () throws(HearthError) in try FieldPath.parse(text) }
            let general = Result { () throws(HearthError) in try FieldPath.parseGeneral(text) }
            switch (fast, general) {
            case (.success(let a), .success(let b)): #expect(a.segments == b.segments, "\(text)")
            case (.failure(let a), .failure(let b)): #expect(a.message == b.message, "\(text)")
            default: Issue.record("\(text): \(fast) against \(general)")
            }
        }
        #expect(plain > 1_000, "the plain form was drawn often enough")
        #expect(FieldPath.plainSegments("customerId") == ["customerId"])
        #expect(FieldPath.plainSegments("a1_B.Z9.c") == ["a1_B", "Z9", "c"])
        for text in ["", ".", "a.", ".a", "a..b", "a b", "`a`", "é", "a-b"] { #expect(FieldPath.plainSegments(text) == nil, "\(text)") }
    }

    @Test("parses dotted and backtick-quoted forms", arguments: [
        ("a", ["a"]),
        ("a.b.c", ["a", "b", "c"]),
        ("`a.b`.c", ["a.b", "c"]),
        ("c.`a.b`", ["c", "a.b"]),
        ("a.`b`.c", ["a", "b", "c"]),
        ("`a`", ["a"]),
        ("`a\\`b`", ["a`b"]),               // escaped backtick
        ("`\\``", ["`"]),                    // a lone backtick
        ("`\\`\\``", ["``"]),
        ("`\\\\`", ["\\"]),                  // escaped backslash
        ("`a\\.b`", ["a.b"]),                // escaping a dot is allowed and means the dot
        ("`a\\b`", ["ab"]),                  // escape of an ordinary character yields it
        ("`a b`", ["a b"]),
        ("`1`", ["1"]),
        ("`.`", ["."]),
        ("`..`.x", ["..", "x"]),
        ("`  `", ["  "]),
        ("__name__", ["__name__"]),
        ("a1_B.Z9", ["a1_B", "Z9"]),
        ("`名前`.x", ["名前", "x"]),
        ("名前.x", ["名前", "x"]),            // Hearth accepts non-identifier unquoted text
        ("`😀`.`é`", ["😀", "é"]),
        ("`e\u{301}`", ["e\u{301}"]),
        ("`\\😀`", ["😀"]),                  // escape of a multi-byte character
    ] as [(String, [String])])
    func parse(text: String, segments: [String]) throws {
        let p = try FieldPath.parse(text)
        #expect(p.segments.map(showScalars) == segments.map(showScalars), "parse(\(text))")
    }

    @Test("rejects malformed paths with INVALID_ARGUMENT", arguments: [
        "", ".", "..", "a..b", ".a", "a.", "a.b.", "`unclosed", "a.`b", "a`b`", "a`", "`a`b", "`a`.",
        "``", "a.``", "``.a", "`a\\", "`a`b`c`", "`a``b`",
    ])
    func reject(text: String) {
        do {
            let p = try FieldPath.parse(text)
            Issue.record("\"\(text)\" parsed as \(p.segments.map(showScalars))")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(text), "message \"\(error.message)\" should name the path")
        }
    }

    @Test("Firestore's reserved characters ~ * / [ ] are refused outside backticks, naming the quoted form", arguments: [
        ("a~b", "`a~b`"), ("a*", "`a*`"), ("a/b", "`a/b`"), ("items[0]", "`items[0]`"), ("x]", "`x]`"),
        ("ok.a/b.c", "`a/b`"), ("*", "`*`"), ("a.b~", "`b~`"),
    ] as [(String, String)])
    func reservedCharactersNeedBackticks(text: String, quoted: String) {
        do {
            let p = try FieldPath.parse(text)
            Issue.record("\"\(text)\" parsed as \(p.segments)")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("\"\(text)\""), "\(error.message)")
            #expect(error.message.contains("backticks"), "\(error.message)")
            #expect(error.message.contains(quoted), "\(error.message) suggests \(quoted)")
        }
    }

    @Test("reserved characters inside backticks are plain characters, and round-trip", arguments: [
        ("`a~b`", ["a~b"]), ("`a*`.b", ["a*", "b"]), ("`a/b`", ["a/b"]), ("x.`items[0]`", ["x", "items[0]"]),
        ("`~*/[]`", ["~*/[]"]),
    ] as [(String, [String])])
    func quotedReservedCharacters(text: String, segments: [String]) throws {
        let p = try FieldPath.parse(text)
        #expect(p.segments == segments)
        #expect(try FieldPath.parse(p.description) == p)
    }

    static let canonicalForms: [([String], String)] = [
        (["a"], "a"),
        (["a", "b", "c"], "a.b.c"),
        (["_x9"], "_x9"),
        (["A_b"], "A_b"),
        (["__name__"], "__name__"),
        (["a.b", "c"], "`a.b`.c"),
        (["1a"], "`1a`"),
        (["a-b"], "`a-b`"),
        (["a b"], "`a b`"),
        (["a`b"], "`a\\`b`"),
        (["`"], "`\\``"),
        (["a\\b"], "`a\\\\b`"),
        (["\\`"], "`\\\\\\``"),
        (["名前"], "`名前`"),
        (["é"], "`é`"),
        (["😀", "x"], "`😀`.x"),
        (["."], "`.`"),
        (["$x"], "`$x`"),
        // Backslash and backtick followed by a combining mark: a Character-based replace would miss them.
        (["\\\u{301}"], "`\\\\\u{301}`"),
        (["`\u{301}"], "`\\`\u{301}`"),
        (["a\u{301}`"], "`a\u{301}\\``"),
    ]

    @Test("description is the canonical form and round-trips through parse", arguments: canonicalForms)
    func canonical(segments: [String], text: String) throws {
        let p = FieldPath(segments)
        #expect(showScalars(p.description) == showScalars(text))
        let back = try FieldPath.parse(p.description)
        #expect(back == p, "parse(\(showScalars(p.description))) = \(back.segments.map(showScalars))")
        #expect(back.description == p.description)
    }

    @Test("parsing a non-canonical form and re-describing gives the canonical one", arguments: [
        ("`a`.`b`", "a.b"),
        ("`a\\b`", "ab"),
        ("名前", "`名前`"),
        ("a b", "`a b`"),
    ] as [(String, String)])
    func normalise(text: String, canonical: String) throws {
        #expect(try FieldPath.parse(text).description == canonical)
    }

    @Test("isPrefix includes equality", arguments: [
        ("a", "a.b", true), ("a", "a", true), ("a.b", "a.b.c", true), ("a.b", "a", false),
        ("a", "ab", false), ("a", "b.a", false), ("`a.b`", "a.b", false), ("`é`", "`e\u{301}`.x", false),
    ] as [(String, String, Bool)])
    func isPrefix(a: String, b: String, expected: Bool) throws {
        #expect(try FieldPath.parse(a).isPrefix(of: FieldPath.parse(b)) == expected)
    }

    static let ordered = ["a", "a.b", "a.b.c", "a.z", "`a-b`", "`a.b`", "a0", "aa", "b", "`e\u{301}`", "`é`", "`😀`"]

    @Test("segment-wise UTF-8 order", arguments: ordered.indices)
    func ordering(i: Int) throws {
        let a = try FieldPath.parse(Self.ordered[i])
        for (j, text) in Self.ordered.enumerated() {
            let b = try FieldPath.parse(text)
            #expect((a < b) == (i < j), "\(a) < \(b)")
            #expect((a == b) == (i == j), "\(a) == \(b)")
        }
    }

    @Test("documentID, appending, equality and hashing")
    func misc() throws {
        #expect(FieldPath.documentID.isDocumentID)
        #expect(try FieldPath.parse("__name__").isDocumentID)
        #expect(try !FieldPath.parse("a.__name__").isDocumentID)
        #expect(FieldPath(["a"]).appending("b.c") == FieldPath(["a", "b.c"]))
        #expect(FieldPath(["é"]) != FieldPath(["e\u{301}"]))
        #expect(Set([FieldPath(["é"]), FieldPath(["e\u{301}"]), FieldPath(["é"])]).count == 2)
        #expect(FieldPath(["ab", "c"]).hashValue != FieldPath(["a", "bc"]).hashValue)
    }
}
