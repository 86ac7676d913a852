import Foundation
import HearthTesting
import Testing

/// `requestId` over TCP: a write sent again with the same ID is answered as the first was (same seq, update
/// time, transform results, the same new document ID for `add`) and `"duplicate":true`, and applied once,
/// whether the first is still pending (pipelined) or long durable, and after a restart.
@Suite(.serialized) final class RetriedWriteTests {
    let daemon: DaemonProcess
    init() throws { daemon = try DaemonProcess() }

    @Test func aRetriedWriteIsAnsweredAndAppliedOnce() throws {
        let c = try daemon.connect()
        #expect(try c.request(#"{"op":"set","path":"r/a","data":{"n":0}}"#).isOK)
        let bump = #"{"op":"commit","requestId":"bump-1","writes":[{"op":"update","path":"r/a","data":{"n":{"$increment":5}}}]}"#
        let first = try c.request(bump)
        #expect(first.isOK && first["duplicate"] == nil, "\(first)")
        let again = try c.request(bump)
        #expect(again["duplicate"] as? Bool == true, "\(again)")
        #expect(again["seq"] as? Int == first["seq"] as? Int && again["commitTime"] as? String == first["commitTime"] as? String)
        #expect(canonical(again["results"] ?? []) == canonical(first["results"] ?? []))
        let doc = try c.request(#"{"op":"get","path":"r/a"}"#)["doc"] as? [String: Any]
        #expect((doc?["data"] as? [String: Any])?["n"] as? Int == 5, "applied once: \(String(describing: doc))")

        // add: the retry names the document the first created.
        let add = #"{"op":"add","requestId":"add-1","collection":"r","data":{"k":1}}"#
        let made = try c.request(add), remade = try c.request(add)
        #expect(made["docId"] as? String != nil && remade["docId"] as? String == made["docId"] as? String, "\(made) \(remade)")
        #expect(try c.request(#"{"op":"count","collection":"r"}"#)["count"] as? Int == 2)

        // Pipelined: the retry arrives while the first is pending.
        let set = #"{"op":"set","id":"P","requestId":"set-9","path":"r/b","data":{"v":9}}"#
        try c.send(set + "\n" + set)
        let p1 = try c.readObject(), p2 = try c.readObject()
        #expect(p1.isOK && p2["duplicate"] as? Bool == true && p1["seq"] as? Int == p2["seq"] as? Int, "\(p1) \(p2)")
        #expect(p1["updateTime"] as? String == p2["updateTime"] as? String)

        // After a restart the commit log or the store still knows it.
        daemon.stop()
        try daemon.start()
        let c2 = try daemon.connect()
        let late = try c2.request(bump)
        #expect(late["duplicate"] as? Bool == true && late["seq"] as? Int == first["seq"] as? Int, "\(late)")
        let n = try c2.request(#"{"op":"get","path":"r/a"}"#)["doc"] as? [String: Any]
        #expect((n?["data"] as? [String: Any])?["n"] as? Int == 5)
    }

    @Test func aBadRequestIDIsRefused() throws {
        let c = try daemon.connect()
        for (id, what) in [("\"\"", "1 to 128 bytes, got 0"), ("\"\(String(repeating: "x", count: 129))\"", "1 to 128 bytes, got 129"),
                           ("7", "must be a string")] {
            let r = try c.request(#"{"op":"set","requestId":\#(id),"path":"r/x","data":{}}"#)
            #expect(r.errorCode == "INVALID_ARGUMENT" && r.errorMessage?.contains(what) == true && r.errorMessage?.hasPrefix("set: field \"requestId\"") == true, "\(r)")
        }
        let bad = try c.request(#"{"op":"commit","requestId":"","writes":[{"op":"delete","path":"r/x"}]}"#)
        #expect(bad.errorCode == "INVALID_ARGUMENT", "\(bad)")
        #expect(try c.request(#"{"op":"get","path":"r/x"}"#)["doc"] is NSNull)
    }
}
