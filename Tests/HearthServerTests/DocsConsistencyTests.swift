import Foundation
import HearthModel
import HearthTesting
import Testing

/// docs/protocol.md documents exactly the error codes the server uses and every op `help` lists.
@Suite struct DocsConsistencyTests {
    static var repoRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static func protocolDoc() throws -> String {
        try String(contentsOf: repoRoot.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
    }

    @Test func everyErrorCodeIsDocumentedWithItsSummaryAndNoOther() throws {
        let doc = try Self.protocolDoc()
        let rows = doc.split(separator: "\n").filter { $0.hasPrefix("| `") }
        var documented: [String] = []
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let code = cells.first.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "`")) } ?? ""
            guard cells.count >= 2, !code.isEmpty, code.allSatisfy({ $0.isUppercase || $0 == "_" }) else { continue }
            guard let known = ErrorCode(rawValue: code) else { Issue.record("docs list unknown code \(code)"); continue }
            #expect(cells[1] == known.summary, "summary of \(code) in docs/protocol.md")
            documented.append(code)
        }
        #expect(Set(documented) == Set(ErrorCode.allCases.map(\.rawValue)))
    }

    @Test func everyOpIsDocumented() throws {
        let doc = try Self.protocolDoc() + (try String(contentsOf: Self.repoRoot.appendingPathComponent("docs/queries.md"), encoding: .utf8))
        let daemon = try DaemonProcess()
        let help = try daemon.connect().request(#"{"op":"help"}"#)
        let ops = ((help["ops"] as? [[String: Any]]) ?? []).compactMap { $0["op"] as? String }
        #expect(ops.count >= 10)
        for op in ops { #expect(doc.contains("`\(op)"), "docs/protocol.md documents \(op)") }
    }

    /// The code docs/protocol.md's limits table gives for an oversized document is the code the daemon
    /// answers a 2 MiB document with, and the guide that talks about it says the same.
    @Test func theDocumentSizeErrorCodeIsTheOneDocumented() throws {
        let doc = try Self.protocolDoc()
        let row = doc.split(separator: "\n").first { $0.hasPrefix("| a document |") }
        let documented = row?.split(separator: "|").last?.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
        let daemon = try DaemonProcess()
        let big = String(repeating: "x", count: 2 * 1_048_576)
        let r = try daemon.connect().request(#"{"op":"set","path":"c/big","data":{"s":""# + big + #""}}"#)
        #expect(r.errorCode == documented, "daemon: \(r.errorCode ?? "ok"), docs/protocol.md: \(documented ?? "no row")")
        let guide = try String(contentsOf: Self.repoRoot.appendingPathComponent("docs/guides/call-records.md"), encoding: .utf8)
        #expect(documented == "INVALID_ARGUMENT" && guide.contains("refused with `invalidArgument`"))
        #expect(!doc.contains("document size, output budget"), "RESOURCE_EXHAUSTED is not for document size")
    }

    /// README names every Debian package `make` installs (the Makefile's DEBS), netcat for the quick
    /// start's `nc` among them.
    @Test func theReadmeNamesThePackagesMakeInstalls() throws {
        let makefile = try String(contentsOf: Self.repoRoot.appendingPathComponent("Makefile"), encoding: .utf8)
        let readme = try String(contentsOf: Self.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let line = makefile.split(separator: "\n").first { $0.hasPrefix("DEBS") }
        let debs = line.map { $0.split(separator: "=", maxSplits: 1).last!.split(separator: " ").map(String.init) } ?? []
        #expect(debs.contains("python3") && debs.contains("netcat-openbsd"), "\(debs)")
        for p in debs { #expect(readme.contains(p), "README.md does not name \(p)") }
        #expect(readme.contains("nc 127.0.0.1 7411"))
    }
}
