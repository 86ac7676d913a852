import Foundation
import HearthTesting
import Testing

/// `hearth rules test CASES` against a real daemon: cases run as their users through the admin.
@Suite struct RulesTestCLITests {
    @Test func casesRunAsTheirUsersAndAWrongExpectationFails() throws {
        let s = try SecureDaemon(rules: try WorkloadRulesTCPTests.rules("departments"))
        let cases = s.mint.dir + "/cases.json"
        func write(_ extra: String) throws {
            try """
            {"setup": [{"op": "commit", "writes": [
                {"op": "set", "path": "departments/D1", "data": {"departmentId": "D1", "creatorId": "u1", "memberCount": 1}},
                {"op": "set", "path": "department_memberships/u1_D1", "data": {"userId": "u1", "departmentId": "D1"}}]}],
             "cases": [
                {"name": "member reads", "as": {"uid": "u1"}, "request": {"op": "get", "path": "departments/D1"}, "expect": "allow"},
                {"name": "stranger does not", "as": {"uid": "u2", "token": {"email": "u2@example.com"}}, "request": {"op": "get", "path": "departments/D1"}, "expect": "deny"},
                {"name": "nobody", "as": null, "request": {"op": "listen", "path": "departments/D1"}, "expect": "deny"},
                {"name": "own memberships", "as": {"uid": "u1"}, "request": {"op": "listen", "query": {"collection": "department_memberships", "where": [["userId", "==", "u1"]]}}, "expect": "allow"}\(extra)]}
            """.write(toFile: cases, atomically: true, encoding: .utf8)
        }
        let port = ["--port", String(s.daemon.port)]
        try write("")
        let ok = try CLIProcess.run(["rules", "test", cases, "--admin-key-file", s.adminKeyFile] + port)
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("ok   stranger does not (denied: ") && ok.stdout.contains("4 of 4 cases passed"), "\(ok.stdout)")
        try write(#", {"name": "wrong", "as": {"uid": "u2"}, "request": {"op": "get", "path": "departments/D1"}, "expect": "allow"}"#)
        let failed = try CLIProcess.run(["rules", "test", cases, "--admin-key-file", s.adminKeyFile] + port)
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("FAIL wrong: expected allow, denied: ") && failed.stdout.contains("4 of 5 cases passed"), "\(failed.stdout)")
        let noKey = try CLIProcess.run(["rules", "test", cases] + port)
        #expect(noKey.status == 2 && noKey.stderr.contains("--admin-key-file"), "\(noKey.stderr)")
        try #"{"cases": [{"name": "x", "as": {"uid": "u1"}, "request": {"op": "get"}, "expect": "maybe"}]}"#.write(toFile: cases, atomically: true, encoding: .utf8)
        let bad = try CLIProcess.run(["rules", "test", cases, "--admin-key-file", s.adminKeyFile] + port)
        #expect(bad.status == 2 && bad.stderr.contains("x: \"expect\" must be \"allow\" or \"deny\""), "\(bad.stderr)")
    }
}
