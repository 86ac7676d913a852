#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HearthRules

/// `hearth rules check FILE`: compiles a Firestore Security Rules file offline, as `hearthd --rules` would load
/// it. Prints `FILE: ok (N rules, M functions)`, or the error as `file:line:column: message` and exits 2.
enum RulesCommand {
    static let discussion = """
        check FILE compiles a rules file offline (no daemon needed), with the same compiler hearthd uses to \
        load --rules: it prints 'FILE: ok (N rules, M functions)' and exits 0, or prints the first error as \
        file:line:column: message and exits 2. Anything outside the supported subset of the Firestore Security \
        Rules language is an error naming what is not supported; see docs/rules.md.

        test CASES runs allow/deny cases against a running daemon started with the rules and an admin key         (give the key with --admin-key-file or HEARTH_ADMIN_KEY). CASES is a JSON file:         {"setup":[requests run as the admin], "cases":[{"name":..., "as":{"uid":"alice","token":{claims}} or         null, "request":{...}, "expect":"allow" or "deny"}]}. Each case is run as its user; deny means the         answer was PERMISSION_DENIED. Prints ok or FAIL per case and exits 1 when any case failed. Cases that         write really write: use a daemon on test data. See docs/security.md.
        """

    static func run(_ a: ParsedArguments) throws -> Int32 {
        let action = a.positionals[0]
        guard action == "check" || action == "test" else {
            throw UsageError("Unknown rules action '\(action)' (expected: check or test).")
        }
        guard a.positionals.count == 2 else { throw UsageError("rules \(action) needs exactly one FILE.") }
        let file = a.positionals[1]
        if action == "test" {
            let connection = try ConnectionOptions(a)
            switch readFile(file) {
            case .success(let text): return try RulesTest.run(try RulesTest.parse(Data(text.utf8), file: file), connection: connection)
            case .failure(let reason):
                Console.error("\(file): cannot read: \(reason)")
                return ExitCode.usage
            }
        }
        let source: String
        switch readFile(file) {
        case .success(let text): source = text
        case .failure(let reason):
            Console.error("\(file): cannot read: \(reason)")
            return ExitCode.usage
        }
        do {
            let rules = try Rules.compile(source, file: file)
            let r = rules.ruleCount, f = rules.functionCount
            Console.line("\(file): ok (\(r) rule\(r == 1 ? "" : "s"), \(f) function\(f == 1 ? "" : "s"))")
            return ExitCode.ok
        } catch {
            Console.line(error.description)
            return ExitCode.usage
        }
    }

    struct ReadFailure: Error { var reason: String }

    static func readFile(_ path: String) -> Result<String, ReadFailure> {
        guard let f = fopen(path, "rb") else { return .failure(ReadFailure(reason: String(cString: strerror(errno)))) }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&buffer, 1, buffer.count, f)
            if n > 0 { bytes.append(contentsOf: buffer[0..<n]) }
            if n < buffer.count {
                if ferror(f) != 0 { return .failure(ReadFailure(reason: String(cString: strerror(errno)))) }
                break
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ReadFailure(reason: "the file is not valid UTF-8"))
        }
        return .success(text)
    }
}

extension RulesCommand.ReadFailure: CustomStringConvertible {
    var description: String { reason }
}
