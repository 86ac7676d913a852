import Foundation
import HearthTesting
import Testing

/// `hearth migrate departments` against a real hearthd: 450 legacy department documents (only `name`) and
/// 20 already migrated ones (m00-m09 with equal names, m10-m19 where `departmentName` was renamed).
@Suite(.serialized) final class CLIMigrateTests {
    let daemon: DaemonProcess
    let wire: WireClient

    init() throws {
        daemon = try DaemonProcess()
        wire = try daemon.connect()
        var writes: [[String: Any]] = []
        for i in 0..<450 {
            writes.append(["op": "set", "path": "departments/\(legacyID(i))", "data": ["name": "Dept \(i)", "memberCount": i % 7]])
        }
        let first = try wire.call(["op": "commit", "writes": writes])
        guard first.isOK else { throw TestFailure("seed failed: \(first)") }
        writes = (0..<20).map { i in
            let id = String(format: "m%02d", i)
            return ["op": "set", "path": "departments/\(id)",
                    "data": ["departmentId": id, "name": "Old \(i)", "departmentName": i < 10 ? "Old \(i)" : "Renamed \(i)"]]
        }
        let second = try wire.call(["op": "commit", "writes": writes])
        guard second.isOK else { throw TestFailure("seed failed: \(second)") }
    }

    func legacyID(_ i: Int) -> String { String(format: "d%04d", i) }

    func migrate(_ args: String...) throws -> CLIProcess.Result {
        try CLIProcess.run(["migrate", "departments"] + args + ["--port", String(daemon.port)], timeout: 120)
    }

    func data(_ id: String) throws -> [String: Any] {
        let r = try wire.call(["op": "get", "path": "departments/\(id)"])
        return ((r["doc"] as? [String: Any])?["data"] as? [String: Any]) ?? [:]
    }

    /// How many departments have `field` as a string.
    func countWith(_ field: String) throws -> Int {
        let r = try wire.call(["op": "count", "collection": "departments", "where": [[field, ">=", ""]]])
        return r["count"] as? Int ?? -1
    }

    @Test func dryRunChangesNothing() throws {
        let r = try migrate("--step", "backfill", "--dry-run")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("page 1: 200 scanned, 200 would update, last id d0199"), "\(r.stdout)")
        #expect(r.stdout.contains("page 3: 70 scanned, 50 would update, last id m19"), "\(r.stdout)")
        #expect(r.stdout.contains("470 scanned, 450 would update"), "\(r.stdout)")
        #expect(try countWith("departmentName") == 20)
        #expect(try countWith("departmentId") == 20)
        #expect(try data("d0000")["departmentName"] == nil)
    }

    @Test func backfillSetsBothFieldsAndIsIdempotent() throws {
        let r = try migrate("--step", "backfill")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("page 1: 200 scanned, 200 updated, last id d0199"), "\(r.stdout)")
        #expect(r.stdout.contains("page 2: 200 scanned, 200 updated, last id d0399"), "\(r.stdout)")
        #expect(r.stdout.contains("page 3: 70 scanned, 50 updated, last id m19"), "\(r.stdout)")
        #expect(r.stdout.contains("done: 3 page(s), 470 scanned, 450 updated"), "\(r.stdout)")
        #expect(try countWith("departmentName") == 470)
        #expect(try countWith("departmentId") == 470)
        let d = try data("d0123")
        #expect(d["departmentName"] as? String == "Dept 123")
        #expect(d["name"] as? String == "Dept 123")
        #expect(d["departmentId"] as? String == "d0123")
        #expect(d["memberCount"] as? Int == 123 % 7)
        #expect(try data("m15")["departmentName"] as? String == "Renamed 15")  // never overwritten

        let again = try migrate("--step", "backfill")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("470 scanned, 0 updated"), "\(again.stdout)")
    }

    @Test func resumeAfterContinuesAfterTheID() throws {
        let r = try migrate("--step", "backfill", "--resume-after", "d0299", "--page", "100")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("resuming after d0299"), "\(r.stdout)")
        #expect(r.stdout.contains("page 1: 100 scanned, 100 updated, last id d0399"), "\(r.stdout)")
        #expect(r.stdout.contains("170 scanned, 150 updated"), "\(r.stdout)")
        #expect(try data("d0299")["departmentName"] == nil)
        #expect(try data("d0300")["departmentName"] as? String == "Dept 300")
        #expect(try countWith("departmentName") == 170)
    }

    @Test func concurrentEditIsNotOverwritten() throws {
        // Sent on a second connection after page 1 was read, before its commit: the commit's updateTime
        // precondition for d0010 fails, the page is re-read and retried, and the edit survives.
        setenv("HEARTH_MIGRATE_TEST_BEFORE_COMMIT",
               #"{"op":"update","path":"departments/d0010","data":{"departmentName":"Edited meanwhile"}}"#, 1)
        defer { unsetenv("HEARTH_MIGRATE_TEST_BEFORE_COMMIT") }
        let r = try migrate("--step", "backfill", "--page", "50")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("page 1: FAILED_PRECONDITION"), "\(r.stdout)")
        #expect(r.stdout.contains("page 1: 50 scanned, 50 updated, last id d0049"), "\(r.stdout)")
        #expect(r.stdout.contains("1 retried page(s)"), "\(r.stdout)")
        let edited = try data("d0010")
        #expect(edited["departmentName"] as? String == "Edited meanwhile")
        #expect(edited["departmentId"] as? String == "d0010")
        #expect(edited["name"] as? String == "Dept 10")
        #expect(try data("d0011")["departmentName"] as? String == "Dept 11")
        #expect(try countWith("departmentName") == 470)
    }

    @Test func dropLegacyRemovesNameOnlyWhereEqual() throws {
        let d5 = try wire.call(["op": "update", "path": "departments/d0005", "data": ["departmentName": "Changed"]])
        #expect(d5.isOK)
        let notYet = try migrate("--step", "drop-legacy", "--dry-run")
        #expect(notYet.status == 0)
        #expect(notYet.stdout.contains("left alone: d0000: departmentName is missing"), "\(notYet.stdout)")

        #expect(try migrate("--step", "backfill").status == 0)
        let r = try migrate("--step", "drop-legacy")
        #expect(r.status == 0, "\(r.stderr)")
        // 449 backfilled legacy documents + m00-m09; d0005 and m10-m19 differ.
        #expect(r.stdout.contains("470 scanned, 459 updated, 11 left alone"), "\(r.stdout)")
        #expect(r.stdout.contains(#"left alone: d0005: name="Dept 5" differs from departmentName="Changed""#), "\(r.stdout)")
        #expect(r.stdout.contains("left alone: m15"), "\(r.stdout)")
        #expect(try data("d0001")["name"] == nil)
        #expect(try data("d0001")["departmentName"] as? String == "Dept 1")
        #expect(try data("m03")["name"] == nil)
        #expect(try data("m15")["name"] as? String == "Old 15")
        #expect(try data("d0005")["name"] as? String == "Dept 5")
        #expect(try countWith("name") == 11)
    }

    @Test func usageAndConnectionExitCodes() throws {
        #expect(try migrate("--step", "sideways").status == 2)
        #expect(try migrate().status == 2)
        #expect(try migrate("--step", "backfill", "--page", "501").status == 2)
        #expect(try CLIProcess.run(["migrate", "teams", "--step", "backfill"]).status == 2)
        let refused = try CLIProcess.run(["migrate", "departments", "--step", "backfill", "--port", "1"])
        #expect(refused.status == 3, "\(refused.stderr)")
        let help = try CLIProcess.run(["migrate", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--resume-after"))
    }
}
