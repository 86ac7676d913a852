import Foundation

/// A PostgreSQL cluster of one test's own (`Tests/Postgres/cluster.sh`), for what cannot be done to the shared
/// one: stopping and starting it. `remove()` it when done.
public final class PrivateCluster: @unchecked Sendable {
    public let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pg-\(UUID().uuidString)").path
    public let dsn: String

    public init() throws {
        let started = try CLIProcess.run(["start", directory], timeout: 120, binary: PostgresTestCluster.scriptPath())
        guard started.status == 0 else { throw TestFailure("cluster.sh start failed: \(started.stderr)") }
        dsn = started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server (fast shutdown), keeping its files, as an operator's restart does.
    public func stop() throws { try control("halt") }
    /// Starts it again on the same port.
    public func start() throws { try control("resume") }

    private func control(_ action: String) throws {
        let r = try CLIProcess.run([action, directory], timeout: 120, binary: PostgresTestCluster.scriptPath())
        guard r.status == 0 else { throw TestFailure("cluster.sh \(action) failed: \(r.stderr)") }
    }

    public func remove() { _ = try? CLIProcess.run(["stop", directory], timeout: 120, binary: PostgresTestCluster.scriptPath()) }
}
