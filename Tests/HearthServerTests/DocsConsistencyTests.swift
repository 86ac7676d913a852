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
}
