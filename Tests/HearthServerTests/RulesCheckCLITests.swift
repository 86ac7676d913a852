import Foundation
import HearthTesting
import Testing

/// `hearth rules check FILE`: compiles offline; `FILE: ok (N rules, M functions)` or the error with its
/// position and exit code 2.
@Suite struct RulesCheckCLITests {
    func write(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "hearth-rules-\(UUID().uuidString).rules"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func validFile() throws {
        let path = try write("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                function signedIn() { return request.auth != null; }
                match /users/{userId} {
                  allow read: if signedIn() && request.auth.uid == userId;
                  allow write: if false;
                }
              }
            }
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try CLIProcess.run(["rules", "check", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "\(path): ok (2 rules, 1 function)\n")
    }

    @Test func badFile() throws {
        let path = try write("rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n    match /a/{b} { allow read: if b.foo(); }\n  }\n}\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try CLIProcess.run(["rules", "check", path])
        #expect(r.status == 2)
        #expect(r.stdout == "\(path):4:37: method 'foo' is not supported\n")
    }

    @Test func missingFileAndBadAction() throws {
        let missing = try CLIProcess.run(["rules", "check", "/nonexistent/firestore.rules"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("/nonexistent/firestore.rules: cannot read: No such file or directory"), "\(missing.stderr)")
        let action = try CLIProcess.run(["rules", "lint", "x.rules"])
        #expect(action.status == 2)
        #expect(action.stderr.contains("Unknown rules action 'lint'"), "\(action.stderr)")
    }
}
