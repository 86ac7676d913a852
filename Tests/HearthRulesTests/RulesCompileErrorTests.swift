import HearthModel
import Testing
@testable import HearthRules

@Suite("Rules: compile errors")
struct RulesCompileErrorTests {
    /// `body` goes on line 4, column 1.
    static func wrapped(_ body: String) -> String {
        "rules_version = '2';\nservice cloud.firestore {\nmatch /databases/{database}/documents {\n\(body)\n}\n}\n"
    }

    static func expectError(_ source: String, _ line: Int, _ column: Int, _ message: String) {
        do {
            _ = try Rules.compile(source, file: "bad.rules")
            Issue.record("compiled, expected \(line):\(column): \(message)\n\(source)")
        } catch {
            #expect(error.file == "bad.rules")
            #expect(error.line == line && error.column == column, "\(error) (expected \(line):\(column))")
            #expect(error.message.contains(message), "\(error)")
            #expect(error.description == "bad.rules:\(error.line):\(error.column): \(error.message)")
        }
    }

    @Test("unsupported constructs and semantic errors, with their positions", arguments: [
        ("match /a/{b} { allow read: if foo; }", 31, "unknown name 'foo'"),
        ("match /a/{b} { allow read: if 'a'.foo(); }", 35, "method 'foo' is not supported"),
        ("match /a/{b} { allow read: if hashing.md5('a'); }", 39, "hashing.md5 is not supported"),
        ("match /a/{b} { allow read: if math.foo(1); }", 36, "function 'math.foo' is not supported"),
        ("match /a/{b} { allow read: if b is text; }", 33, "unknown type 'text' after 'is'"),
        ("match /a/{b} { allow raed: if true; }", 22, "unknown method 'raed'"),
        ("match /a/{b} { let x = 1; }", 16, "'let' is supported only inside function bodies"),
        ("match /a/{b}/{c=**}/{d=**} { allow read; }", 21, "only one recursive wildcard"),
        ("match /a/{b} { match /c/{b} { allow read; } }", 25, "path variable 'b' is already bound"),
        ("match /a/{b} { allow read: if f(1); }", 31, "unknown function 'f'"),
        ("function f(x) { return f(x); } match /a/{b} { allow read: if f(1); }", 1, "function 'f' is recursive"),
        ("function f(x) { return x; } match /a/{b} { allow read: if f(1, 2); }", 59, "function 'f' takes 1 argument, not 2"),
        ("match /a/{b} { allow read: if 'x'.matches('['); }", 43, "invalid regular expression '['"),
        // RE2's syntax, as Firestore's: lookaround, counts over 1,000 and \C are refused, with RE2's reason.
        ("match /a/{b} { allow read: if 'x'.matches('(?=x)x'); }", 43, "invalid regular expression '(?=x)x' (RE2: invalid perl operator: (?="),
        ("match /a/{b} { allow read: if 'x'.matches('x{1,1001}'); }", 43, "(RE2: invalid repetition size: {1,1001})"),
        ("match /a/{b} { allow read: if 'x'.matches('\\\\C'); }", 43, "(RE2: \\C (any byte) is not supported"),
        ("match /a/{b} { allow read: if request.writeFields.size() > 0; }", 39, "request.writeFields is not supported"),
        ("match /a/{b} { allow read: if request.auth.name == 1; }", 44, "request.auth.name is not supported"),
        ("match /a/{b} { function f() { return 1; } function f() { return 2; } }", 43, "function 'f' is already declared"),
        ("match /a/{b} { allow read: if math; }", 31, "'math' is a namespace"),
        ("match /a/{b} { allow read: if 'a'.size(1); }", 35, "size() takes 0 arguments, not 1"),
        ("match /a/{b} { allow read: if {1: 2} == 1; }", 32, "map keys must be strings"),
    ] as [(String, Int, String)])
    func unsupported(_ body: String, _ column: Int, _ message: String) {
        Self.expectError(Self.wrapped(body), 4, column, message)
    }

    @Test("syntax errors, with their positions", arguments: [
        ("match /a/{b} { allow read if true; }", 4, 27, "expected ':' or ';', found 'if'"),
        ("match /a/{b} { allow read: if a = 1; }", 4, 33, "'=' is not a comparison"),
        ("match /a/{b} { allow read: if 1 +; }", 4, 34, "expected an expression, found ';'"),
        ("match /a/{b} { allow read: if 'abc; }", 4, 31, "unterminated string literal"),
        ("match /a/{b} { allow read: if b'abc' == 1; }", 4, 31, "bytes literals (b'...') are not supported"),
        ("match /a/{b} { allow read: if 1 & 2; }", 4, 33, "'&' is not an operator"),
        ("match /a/{b} { allow read: if (1 == 1; }", 4, 38, "expected ')', found ';'"),
        ("match a/{b} { allow read; }", 4, 7, "expected a path starting with '/'"),
        ("match /a/{b { allow read; }", 4, 12, "expected '}' to close the path variable"),
        ("match /a/{b} { allow read: if 'a' /* open", 4, 35, "unterminated /* comment"),
        ("match /a/{b} { allow read: if get(/databases//x); }", 4, 46, "expected a path segment or $(expression) after '/'"),
        ("match /a/{b} { allow read: if true; }\n}\n}\n}", 7, 1, "expected the end of the file after the service block"),
        ("match /a/{b} { allow read: if 1 @ 2; }", 4, 33, "unexpected character '@'"),
    ] as [(String, Int, Int, String)])
    func syntax(_ body: String, _ line: Int, _ column: Int, _ message: String) {
        Self.expectError(Self.wrapped(body), line, column, message)
    }

    @Test("file structure errors", arguments: [
        ("service firebase.storage { }", 1, 9, "service 'firebase.storage' is not supported"),
        ("rules_version = '3'; service cloud.firestore {}", 1, 17, "rules_version '3' is not supported"),
        ("service cloud.firestore { match /users/{u} { allow read; } }", 1, 34, "the top-level match must be /databases/{database}/documents"),
        ("service cloud.firestore { match /databases/{d}/documents { match /a/{r=**}/b { allow read; } } }", 1, 69, "must be the last segment"),
        ("service cloud.firestore { allow read; }", 1, 27, "'allow' must be inside a 'match' block"),
        ("match /a { }", 1, 1, "expected 'service'"),
        ("", 1, 1, "expected 'service', found the end of the file"),
        ("service cloud.firestore {\n  match /databases/{d}/documents {\n    allow read: if true;\n", 4, 1, "expected 'match', 'allow', 'function' or '}', found the end of the file"),
    ] as [(String, Int, Int, String)])
    func structure(_ source: String, _ line: Int, _ column: Int, _ message: String) {
        Self.expectError(source, line, column, message)
    }

    static let valid = """
        rules_version = '2';
        service cloud.firestore {
          function signedIn() { return request.auth != null; }
          match /databases/{database}/documents {
            function owns(d) { let o = d.data.owner; return signedIn() && o == request.auth.uid; }
            match /users/{userId} {
              allow read: if signedIn() && request.auth.uid == userId;
              allow update: if owns(resource) && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name', "age"]);
            }
            match /{path=**}/posts/{post} {
              allow list: if resource.data.public == true && request.query.limit <= 50;
              allow create: if request.resource.data.title.matches('[A-Za-z ]{1,80}') && request.time < timestamp.date(2100, 1, 1);
            }
            match /d/{d}/m/{m} {
              allow create: if getAfter(/databases/$(database)/documents/d/$(d)).data.n == get(/databases/$(database)/documents/d/$(d)).data.n + 1
                ? true : exists(/databases/$(database)/documents/admins/$(request.auth.uid));
              allow delete: if [1, 2.5, 'x', {'k': [null]}].size() == 4 && -1 < 0 && !(1 in []);
            }
          }
        }
        """

    @Test("every truncation of a valid file is a RulesError with a position inside the file, never a crash")
    func truncations() {
        let source = Self.valid
        let compiled = compileRules(source)
        #expect(compiled.ruleCount == 6)
        #expect(compiled.functionCount == 2)
        let scalars = Array(source.unicodeScalars)
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).count
        for n in 0..<scalars.count {
            var prefix = String.UnicodeScalarView()
            prefix.append(contentsOf: scalars[0..<n])
            do {
                _ = try Rules.compile(String(prefix), file: "t.rules")
                Issue.record("a truncation at \(n) compiled")
            } catch {
                #expect(error.line >= 1 && error.line <= lines && error.column >= 1, "\(n): \(error)")
            }
        }
    }

    @Test("random single-character mutations never crash and fail with a position")
    func mutations() {
        var rng = SplitMix(seed: 12)
        let scalars = Array(Self.valid.unicodeScalars)
        let replacements: [UnicodeScalar] = ["{", "}", "(", ")", "/", "$", "'", "\"", "=", "*", ";", ":", ".", ",", "[", "]", "!", "&", "|", "\n", " ", "é", "0", "x"]
        var failures = 0
        for _ in 0..<2000 {
            var copy = scalars
            let i = Int(rng.next() % UInt64(copy.count))
            copy[i] = replacements[Int(rng.next() % UInt64(replacements.count))]
            var text = String.UnicodeScalarView()
            text.append(contentsOf: copy)
            do {
                _ = try Rules.compile(String(text), file: "m.rules")
            } catch {
                failures += 1
                #expect(error.line >= 1 && error.column >= 1)
            }
        }
        #expect(failures > 0)
    }
}

/// A small deterministic generator for the mutation test.
struct SplitMix {
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
