import Foundation
import HearthTesting
import Testing
@testable import HearthClient

/// HearthClient used as an app uses it: a separate package that depends on this repository by path
/// (`.package(path: "../hearth")` with `.product(name: "HearthClient", package: "hearth")`, exactly as
/// clients/swift/README.md shows it), built with `swift build` and run against a real daemon.
///
/// - `toplevel`: top-level code (`main.swift`) on the shared instance (`Hearth.hearth()`, its port from
///   `HEARTH_PORT`) awaiting `batch.commit()`, `setData`, `updateData`,
///   `delete`, `addDocument(data:)` and `setData(from:)`. Each must wait for the server (the process exits
///   right after) and throw its error; the test reads back what was written.
/// - `snippet1`...: every ```swift block of docs/clients.md, pasted as the whole `main.swift` of its own
///   executable (only the daemon's port is replaced by the test daemon's).
///
/// The package lives in a fixed directory under the temporary directory, so later runs rebuild only what
/// changed (a first build compiles HearthClient and its TLS dependency: about a minute on two cores).
@Suite(.serialized) struct PackageUseTests {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static let topLevelSource = #"""
    import Foundation
    import HearthClient

    struct Item: Codable { var n: Int }

    let db = Hearth.hearth()   // the shared instance, at HEARTH_HOST / HEARTH_PORT

    let batch = db.batch()
    batch.setData(["n": 1], forDocument: db.document("top/batch"))
    try await batch.commit()
    try await db.document("top/set").setData(["n": 2])
    try await db.document("top/set").setData(["m": 3], merge: true)
    try await db.document("top/set").updateData(["n": 4])
    try await db.document("top/gone").setData(["n": 6])
    try await db.document("top/gone").delete()
    try await db.document("top/codable").setData(from: Item(n: 7))
    let added = try await db.collection("top").addDocument(data: ["n": 5])
    print("added \(added.documentID)")
    do {
        try await db.document("top/missing").updateData(["n": 1])
        print("update of a missing document did not throw")
    } catch let error as HearthError where error.code == .notFound {
        print("update threw notFound")
    }
    """#

    /// The ```swift blocks of a Markdown file, in order.
    static func swiftBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") { current = []; continue }
            if current != nil, line.hasPrefix("```") { blocks.append(current!.joined(separator: "\n")); current = nil; continue }
            current?.append(line)
        }
        return blocks
    }

    /// Writes the package (sources replaced on every run) and builds it; returns its directory.
    static func buildPackage(executables: [String: String]) throws -> URL {
        let fm = FileManager.default
        let tag = repoRoot.path.replacingOccurrences(of: "/", with: "_")
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("hearth-package-use\(tag)")
        let app = base.appendingPathComponent("app")
        let link = base.appendingPathComponent("hearth")
        try fm.createDirectory(at: app, withIntermediateDirectories: true)
        if (try? fm.destinationOfSymbolicLink(atPath: link.path)) != repoRoot.path {
            try? fm.removeItem(at: link)
            try fm.createSymbolicLink(atPath: link.path, withDestinationPath: repoRoot.path)
        }
        try? fm.removeItem(at: app.appendingPathComponent("Sources"))
        var targets: [String] = []
        for (name, source) in executables.sorted(by: { $0.key < $1.key }) {
            let dir = app.appendingPathComponent("Sources/\(name)")
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
            try source.write(to: dir.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)
            targets.append(#"        .executableTarget(name: "\#(name)", dependencies: [.product(name: "HearthClient", package: "hearth")]),"#)
        }
        let manifest = """
        // swift-tools-version:6.0
        import PackageDescription

        let package = Package(
            name: "app",
            platforms: [.macOS(.v14)],
            dependencies: [
                .package(path: "../hearth"),
            ],
            targets: [
        \(targets.joined(separator: "\n"))
            ]
        )

        """
        try manifest.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let build = try run(["swift", "build", "--package-path", app.path], timeout: 900)
        guard build.status == 0 else { throw TestFailure("swift build of the app package failed:\n\(build.output)") }
        #expect(!build.output.contains("no 'async' operations occur within 'await' expression"), "\(build.output)")
        return app
    }

    /// Runs a program (looked up on PATH) and returns its status and stdout + stderr.
    static func run(_ args: [String], environment: [String: String] = [:], timeout: Double) throws -> (status: Int32, output: String) {
        let r = try CLIProcess.run(args, timeout: timeout, binary: "/usr/bin/env", environment: environment)
        return (r.status, r.stdout + r.stderr)
    }

    @Test func topLevelAwaitAndTheDocsSnippetsBuildAndRun() async throws {
        let markdown = try String(contentsOf: Self.repoRoot.appendingPathComponent("docs/clients.md"), encoding: .utf8)
        let blocks = Self.swiftBlocks(markdown)
        #expect(!blocks.isEmpty, "docs/clients.md has no swift block")
        let env = try TestEnv()
        var executables = ["toplevel": Self.topLevelSource]
        for (i, block) in blocks.enumerated() {
            executables["snippet\(i + 1)"] = block.replacingOccurrences(of: "port: 7411", with: "port: \(env.daemon.port)")
        }
        let app = try Self.buildPackage(executables: executables)
        let binDir = app.appendingPathComponent(".build/debug")

        let top = try Self.run([binDir.appendingPathComponent("toplevel").path], environment: ["HEARTH_PORT": String(env.daemon.port)], timeout: 60)
        #expect(top.status == 0, "\(top.output)")
        #expect(top.output.contains("update threw notFound"), "\(top.output)")
        #expect(try await env.db.document("top/batch").getDocument().get("n") as? Int == 1)
        let set = try await env.db.document("top/set").getDocument()
        #expect(set.get("n") as? Int == 4 && set.get("m") as? Int == 3, "\(String(describing: set.data()))")
        #expect(try await env.db.document("top/gone").getDocument().exists == false)
        #expect(try await env.db.document("top/codable").getDocument().get("n") as? Int == 7)
        let addedID = top.output.split(separator: "\n").first { $0.hasPrefix("added ") }.map { String($0.dropFirst(6)) }
        let addedRef = try #require(addedID.map { env.db.collection("top").document($0) }, "\(top.output)")
        #expect(try await addedRef.getDocument().get("n") as? Int == 5)

        for i in blocks.indices {
            let r = try Self.run([binDir.appendingPathComponent("snippet\(i + 1)").path], timeout: 60)
            #expect(r.status == 0, "docs/clients.md swift block \(i + 1) failed:\n\(r.output)")
        }
        // The first block's batch: the department and its creator's membership, written before it exited.
        let departments = try await env.db.collection("departments").whereField("departmentName", isEqualTo: "R&D").getDocuments()
        #expect(departments.count == 1)
        if let id = departments.documents.first?.documentID {
            #expect(try await env.db.document("department_memberships/u1_\(id)").getDocument().exists)
        }
    }
}
