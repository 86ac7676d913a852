import Foundation
import HearthTesting
import Testing

/// `hearth backup` against a daemon under write load: the copy starts as a daemon and holds exactly the
/// documents of the seq the backup answered with, no write after it and every write up to it.
@Suite(.serialized) final class BackupTests {
    /// Writes `counter/<k>` = {n} in a loop on its own connection and records every acknowledged seq.
    final class Writer: @unchecked Sendable {
        let port: Int
        let lock = NSCondition()
        var acks: [(seq: Int, path: String, n: Int)] = []
        var stop = false
        var failure: String?
        let finished = DispatchSemaphore(value: 0)
        init(port: Int) { self.port = port }

        func run() {
            defer { finished.signal() }
            do {
                let c = try WireClient(port: port)
                var n = 0
                while !lock.withLock({ stop }) {
                    n += 1
                    let path = "counter/k\(n % 97)"
                    let r = try c.call(["op": "set", "path": path, "data": ["n": n]])
                    guard r.isOK, let seq = r["seq"] as? Int else { throw TestFailure("set failed: \(r)") }
                    lock.withLock { acks.append((seq, path, n)); lock.broadcast() }
                }
            } catch {
                lock.withLock { failure = "\(error)"; lock.broadcast() }
            }
        }

        /// Waits until `count` writes are acknowledged (a barrier, not a sleep).
        func waitForAcks(_ count: Int) throws {
            try lock.withLock {
                while acks.count < count && failure == nil {
                    guard lock.wait(until: Date().addingTimeInterval(30)) else { throw TestFailure("writer stalled at \(acks.count)") }
                }
                if let failure { throw TestFailure(failure) }
            }
        }
    }

    @Test func backupUnderWriteLoadHoldsExactlyItsSeq() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.connect()
        // 2,000 documents besides the ones the writer changes.
        for batch in 0..<4 {
            let writes = (0..<500).map { i in ["op": "set", "path": "base/d\(batch * 500 + i)", "data": ["i": batch * 500 + i, "pad": String(repeating: "x", count: 200)]] as [String: Any] }
            #expect(try client.call(["op": "commit", "writes": writes]).isOK)
        }
        let writer = Writer(port: daemon.port)
        let thread = Thread { writer.run() }
        thread.start()
        try writer.waitForAcks(50)

        let dir = NSTemporaryDirectory() + "hearth-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let backup = try CLIProcess.run(["backup", dir, "--json", "--port", String(daemon.port)])
        #expect(backup.status == 0, "\(backup.stderr)")
        let answer = try JSONSerialization.jsonObject(with: Data(backup.stdout.utf8)) as? [String: Any] ?? [:]
        let seq = try #require(answer["seq"] as? Int)
        let before = writer.lock.withLock { writer.acks.count }
        try writer.waitForAcks(before + 50)   // writes that follow the backup must be absent from it
        writer.lock.withLock { writer.stop = true }
        #expect(writer.finished.wait(timeout: .now() + 30) == .success)
        #expect(writer.lock.withLock { writer.failure } == nil)

        // The copy: a data directory of its own, mode 0600, no LOCK, passing hearth check.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(files == ["hearth.db"])
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/hearth.db")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let check = try CLIProcess.run(["check", "--data-dir", dir])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")

        // The model: the writer's acknowledged writes up to the backup's seq, in seq order.
        var model: [String: Int] = [:]
        let acks = writer.lock.withLock { writer.acks }
        #expect(acks.contains { $0.seq > seq }, "no write landed after the backup")
        for a in acks.sorted(by: { $0.seq < $1.seq }) where a.seq <= seq { model[a.path] = a.n }

        let copy = try DaemonProcess(dataDir: dir)
        let c = try copy.connect()
        let ping = try c.call(["op": "ping"])
        #expect(ping["seq"] as? Int == seq)
        let export = try CLIProcess.run(["export", "--collection", "counter", "--port", String(copy.port)])
        #expect(export.status == 0, "\(export.stderr)")
        var found: [String: Int] = [:]
        for line in export.stdout.split(separator: "\n").dropFirst() {
            let doc = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            found[doc["path"] as? String ?? ""] = (doc["data"] as? [String: Any])?["n"] as? Int
        }
        #expect(found == model)
        let count = try c.call(["op": "count", "collection": "base"])
        #expect(count["count"] as? Int == 2000)
        _ = copy.stop()
    }

    @Test func backupRefusesADataDirectoryAndAnExistingStore() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        let own = try c.call(["op": "backup", "dir": daemon.dataDir])
        #expect(own.errorCode == "ALREADY_EXISTS", "\(own)")
        #expect(own.errorMessage?.contains("already holds a store") == true)
        let relative = try c.call(["op": "backup", "dir": "relative/dir"])
        #expect(relative.errorCode == "INVALID_ARGUMENT")
        let dir = NSTemporaryDirectory() + "hearth-backup-" + UUID().uuidString
        // A NUL would cut the path short where the system reads it: refused, and nothing is created.
        let cut = try c.call(["op": "backup", "dir": dir + "\u{0}more"])
        #expect(cut.errorCode == "INVALID_ARGUMENT" && cut.errorMessage?.contains("NUL") == true, "\(cut)")
        #expect(!FileManager.default.fileExists(atPath: dir))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Progress lines come first, then the answer.
        try c.send(#"{"op":"backup","id":5,"dir":"\#(dir)"}"#)
        var progress = 0
        var answer = try c.readObject()
        while answer["ok"] == nil {
            #expect(answer["type"] as? String == "progress" && answer["id"] as? Int == 5 && answer["total"] as? Int ?? 0 > 0, "\(answer)")
            progress += 1
            answer = try c.readObject()
        }
        #expect(answer.isOK && answer["id"] as? Int == 5, "\(answer)")
        #expect(progress >= 1)
        let again = try c.call(["op": "backup", "dir": dir])
        #expect(again.errorCode == "ALREADY_EXISTS", "\(again)")
        #expect(again.errorMessage?.hasPrefix("backup: ") == true)
    }
}
