import Foundation
import HearthAuth
import HearthTesting
import Testing

@Suite struct AdminKeyTests {
    @Test func loadAndMatch() throws {
        let hex = try OpenSSLCommand.run(["rand", "-hex", "32"]).trimmingCharacters(in: .newlines)
        #expect(hex.utf8.count == 64)
        let path = try Fixture.writeFile(Array((hex + "\n").utf8))
        defer { unlink(path) }
        let key = try AdminKey.load(file: path)
        #expect(key.matches(hex))
        #expect(!key.matches(hex + "\n"), "the newline was trimmed from the file, not from candidates")
        #expect(!key.matches(String(hex.dropLast())))
        #expect(!key.matches(String(hex.dropLast()) + (hex.last == "0" ? "1" : "0")))
        #expect(!key.matches(""))
    }

    @Test func badKeysAreRefused() throws {
        let table: [(String, String)] = [
            (String(repeating: "a", count: 31), "holds 31 bytes; a secret needs at least 32"),
            (String(repeating: "a", count: 20) + "\t" + String(repeating: "a", count: 20), "control character"),
            (String(repeating: "a", count: 20) + "\n" + String(repeating: "a", count: 20), "control character"),
        ]
        for (contents, says) in table {
            let path = try Fixture.writeFile(Array(contents.utf8))
            defer { unlink(path) }
            let e = #expect(throws: AuthConfigError.self) { try AdminKey.load(file: path) }
            #expect(e?.message.contains(says) == true && e?.message.contains(path) == true, "\(String(describing: e))")
        }
        let binary = try Fixture.writeFile([UInt8](repeating: 0xFF, count: 40))
        defer { unlink(binary) }
        let e = #expect(throws: AuthConfigError.self) { try AdminKey.load(file: binary) }
        #expect(e?.message.contains("not UTF-8") == true)
        #expect(throws: AuthConfigError.self) { try AdminKey(Array("short".utf8)) }
    }
}
