import Foundation
import HearthTesting
import Testing

/// The real daemon over TCP: requests pipelined in one write, snapshots exact at their seq, and resume tokens
/// that cannot lie (a history ID beside the seq).
@Suite struct PipelinedSnapshotTests {
    func changes(_ e: [String: Any]) -> [String] {
        (e["changes"] as? [[String: Any]] ?? []).map {
            "\($0["type"] ?? "?") \(($0["doc"] as? [String: Any])?["path"] ?? "?")"
        }
    }

    /// Reads lines until `done` holds for what has arrived; returns every line.
    func read(_ c: WireClient, until done: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        var lines: [[String: Any]] = []
        while !done(lines) { lines.append(try c.readObject()) }
        return lines
    }

    func has(_ lines: [[String: Any]], id: Int) -> Bool { lines.contains { $0["id"] as? Int == id } }
    func snapshots(_ lines: [[String: Any]], sub: String) -> [[String: Any]] {
        lines.filter { $0["sub"] as? String == sub && $0["type"] as? String == "snapshot" }
    }

    /// The issue's reproductions: B listens to `c`; A pipelines a write (or a delete) and a listen in one
    /// write. A's first snapshot is the state after its own write, and the next change applies to it.
    @Test func aListenPipelinedBehindAWriteOrADeleteIsExact() throws {
        let daemon = try DaemonProcess()
        let b = try daemon.connect()
        #expect(try b.request(#"{"op":"listen","query":{"collection":"c"}}"#).isOK)
        _ = try b.readObject()
        let a = try daemon.connect()
        try a.sendRaw(Array((#"{"op":"set","path":"c/x","data":{"v":1},"id":1}"# + "\n" + #"{"op":"listen","query":{"collection":"c"},"id":2}"# + "\n").utf8))
        let lines = try read(a) { has($0, id: 2) && !snapshots($0, sub: "1").isEmpty }
        let first = try #require(snapshots(lines, sub: "1").first)
        #expect(first["seq"] as? Int == 1)
        #expect(first["size"] as? Int == 1)
        #expect(changes(first) == ["added c/x"])
        try a.send(#"{"op":"set","path":"c/x","data":{"v":2},"id":3}"#)
        let next = try read(a) { has($0, id: 3) && !snapshots($0, sub: "1").isEmpty }
        #expect(snapshots(next, sub: "1").map(changes) == [["modified c/x"]])

        try a.sendRaw(Array((#"{"op":"delete","path":"c/x","id":4}"# + "\n" + #"{"op":"listen","query":{"collection":"c"},"id":5}"# + "\n").utf8))
        let after = try read(a) { has($0, id: 5) && !snapshots($0, sub: "2").isEmpty }
        let second = try #require(snapshots(after, sub: "2").first)
        #expect(second["size"] as? Int == 0)
        #expect(changes(second).isEmpty)
        #expect(snapshots(after, sub: "1").map(changes) == [["removed c/x"]])
    }

    @Test func resumeTokensCarryTheirHistory() throws {
        let dir = NSTemporaryDirectory() + "hearth-history-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon = try DaemonProcess(dataDir: dir)
        let c = try daemon.connect()
        let hello = try c.request(#"{"op":"hello"}"#)
        let history = try #require(hello["history"] as? String)
        #expect(history.count == 16 && HexCheck.isHex(history))
        for i in 1...3 { #expect(try c.request(#"{"op":"set","path":"num/a","data":{"i":\#(i)}}"#).isOK) }

        // The issue's reproduction: a seq from the future was answered as "up to date".
        let future = try c.request(#"{"op":"listen","path":"num/a","resumeAfter":999999999}"#)
        #expect(future["history"] as? String == history)
        let futureSnap = try c.readObject()
        #expect(futureSnap["reset"] as? Bool == true)
        #expect((futureSnap["doc"] as? [String: Any])?["path"] as? String == "num/a")
        #expect(try c.request(#"{"op":"listen","query":{"collection":"num"},"resumeAfter":999999999,"history":"\#(history)"}"#).isOK)
        let q = try c.readObject()
        #expect(q["reset"] as? Bool == true && q["size"] as? Int == 1 && changes(q) == ["added num/a"])

        // Another history: a reset even for a seq this database has.
        let other = history == "0000000000000001" ? "0000000000000002" : "0000000000000001"
        #expect(try c.request(#"{"op":"listen","query":{"collection":"num"},"resumeAfter":1,"history":"\#(other)"}"#).isOK)
        #expect(try c.readObject()["reset"] as? Bool == true)
        // The same history: a diff.
        #expect(try c.request(#"{"op":"listen","query":{"collection":"num"},"resumeAfter":3,"history":"\#(history)"}"#).isOK)
        let same = try c.readObject()
        #expect(same["reset"] == nil && same["initial"] as? Bool == false && changes(same).isEmpty)

        // Bad tokens are refused, naming the field.
        let bad = try c.request(#"{"op":"listen","path":"num/a","resumeAfter":1,"history":"xyz"}"#)
        #expect(bad.errorCode == "INVALID_ARGUMENT" && bad.errorMessage?.contains("history") == true)
        let alone = try c.request(#"{"op":"listen","path":"num/a","history":"\#(history)"}"#)
        #expect(alone.errorCode == "INVALID_ARGUMENT" && alone.errorMessage?.contains("resumeAfter") == true)

        // A restart keeps the history; a new data dir is another one.
        _ = daemon.stop()
        try daemon.start()
        let again = try daemon.connect()
        #expect(try again.request(#"{"op":"hello"}"#)["history"] as? String == history)
        let fresh = try DaemonProcess()
        let f = try fresh.connect()
        #expect(try f.request(#"{"op":"set","path":"num/a","data":{"i":9}}"#).isOK)
        #expect(try f.request(#"{"op":"listen","query":{"collection":"num"},"resumeAfter":1,"history":"\#(history)"}"#)["history"] as? String != history)
        let wiped = try f.readObject()
        #expect(wiped["reset"] as? Bool == true && changes(wiped) == ["added num/a"])
    }
}

enum HexCheck {
    static func isHex(_ s: String) -> Bool { s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) } }
}
