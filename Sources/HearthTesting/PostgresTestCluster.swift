import Foundation

/// The PostgreSQL server the tests of the PostgreSQL backend use: `$HEARTH_TEST_POSTGRES` (a libpq connection
/// string; `make test` starts a throwaway cluster with `Tests/Postgres/cluster.sh` and sets it), or else a
/// cluster this test process starts with the same script on first use and stops when it exits. Each test
/// makes a schema of its own in it (`freshSchema`), so tests never see each other's data.
public enum PostgresTestCluster {
    /// The connection string, or why there is no server.
    public static func dsn() throws -> String {
        switch shared {
        case .success(let dsn): return dsn
        case .failure(let error): throw error
        }
    }

    /// Runs `sql` with psql in `schema` (for what tests do to the database behind a store's back).
    public static func exec(schema: String, _ sql: String) throws {
        let result = try CLIProcess.run([try dsn(), "-v", "ON_ERROR_STOP=1", "-q", "-c", "SET search_path TO \"\(schema)\"", "-c", sql],
                                        timeout: 60, binary: "/usr/bin/psql")
        guard result.status == 0 else { throw TestFailure("psql failed: \(result.stderr)") }
    }

    /// Drops `schema` and everything in it.
    public static func dropSchema(_ schema: String) throws {
        let result = try CLIProcess.run([try dsn(), "-v", "ON_ERROR_STOP=1", "-q", "-c", "SET client_min_messages TO warning", "-c", "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"],
                                        timeout: 60, binary: "/usr/bin/psql")
        guard result.status == 0 else { throw TestFailure("psql failed: \(result.stderr)") }
    }

    /// A schema name no other test uses.
    public static func freshSchema() -> String {
        "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    private static let shared: Result<String, TestFailure> = {
        if let env = ProcessInfo.processInfo.environment["HEARTH_TEST_POSTGRES"], !env.isEmpty { return .success(env) }
        let script = scriptPath()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pg-\(UUID().uuidString)").path
        do {
            let started = try CLIProcess.run(["start", directory], timeout: 120, binary: script)
            guard started.status == 0 else {
                return .failure(TestFailure("cannot start a PostgreSQL cluster for the tests (\(script)): \(started.stderr)"))
            }
            clusterDirectory = directory
            atexit {
                if let dir = PostgresTestCluster.clusterDirectory {
                    _ = try? CLIProcess.run(["stop", dir], timeout: 120, binary: PostgresTestCluster.scriptPath())
                }
            }
            return .success(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            return .failure(TestFailure("cannot start a PostgreSQL cluster for the tests (\(script)): \(error)"))
        }
    }()

    nonisolated(unsafe) private static var clusterDirectory: String?

    /// Tests/Postgres/cluster.sh in this checkout.
    static func scriptPath() -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent("Tests/Postgres/cluster.sh").path
    }
}
