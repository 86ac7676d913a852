import Foundation
import HearthTesting
import Testing

/// listCollections, deleteRecursive, TTL policies and compact against a real hearthd; the admin clearance
/// of each under rules.
@Suite(.serialized) final class AdminOpsTests {
    /// Reads lines until one has `"id": id` (a response), collecting the pushed lines before it.
    func response(_ c: WireClient, id: String, pushes: inout [[String: Any]], timeout: Double = 60) throws -> [String: Any] {
        while true {
            let o = try c.readObject(timeout: timeout)
            if o["id"] as? String == id && o["ok"] != nil { return o }
            pushes.append(o)
        }
    }

    @Test func listCollectionsAtTheRootAndUnderADocumentSorted() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        for p in ["b/1", "a/1", "a/1/x/1", "a/1/x-y/1", "a/1/x/1/deep/1", "a/2/z/1", "c-d/1/e/1", "é/1", "B/1"] {
            #expect(try c.request(#"{"op":"set","path":"\#(p)","data":{}}"#).isOK)
        }
        let root = try c.request(#"{"op":"listCollections"}"#)
        #expect(root["collections"] as? [String] == ["B", "a", "b", "c-d", "é"], "\(root)")
        #expect(try c.request(#"{"op":"listCollections","path":"a/1"}"#)["collections"] as? [String] == ["x", "x-y"])
        #expect(try c.request(#"{"op":"listCollections","path":"a/1/x/1"}"#)["collections"] as? [String] == ["deep"])
        #expect(try c.request(#"{"op":"listCollections","path":"a/3"}"#)["collections"] as? [String] == [])
        // A collection that holds only deeper documents still counts (c-d/1 does not exist).
        #expect(try c.request(#"{"op":"listCollections","path":"c-d/1"}"#)["collections"] as? [String] == ["e"])
        let bad = try c.request(#"{"op":"listCollections","path":"a"}"#)
        #expect(bad.errorCode == "INVALID_ARGUMENT")
        #expect(bad.errorMessage?.hasPrefix("listCollections: field \"path\"") == true, "\(bad)")
    }

    @Test func recursiveDeleteInBatchesWithProgressWhileListenersSeeItAndOthersAreServed() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        var writes: [String] = []
        for i in 0..<1200 { writes.append(#"{"op":"set","path":"t/\#(i / 100)/items/\#(i)","data":{"n":\#(i)}}"#) }
        for chunk in stride(from: 0, to: writes.count, by: 400) {
            #expect(try c.request(#"{"op":"commit","writes":[\#(writes[chunk..<chunk + 400].joined(separator: ","))]}"#).isOK)
        }
        for i in 0..<10 { #expect(try c.request(#"{"op":"set","path":"t/\#(i)","data":{"parent":true}}"#).isOK) }
        #expect(try c.request(#"{"op":"set","path":"keep/1","data":{"k":1}}"#).isOK)
        let listener = try daemon.connect()
        #expect(try listener.request(#"{"op":"listen","query":{"collectionGroup":"items"},"id":"L"}"#).isOK)
        _ = try listener.readObject()   // the first snapshot

        let deleter = try daemon.connect()
        try deleter.send(#"{"op":"deleteRecursive","path":"t","batchSize":100,"progress":true,"id":"D"}"#)
        // Another client keeps being served while the delete runs.
        #expect(try c.request(#"{"op":"get","path":"keep/1"}"#).isOK)
        var pushes: [[String: Any]] = []
        let done = try response(deleter, id: "D", pushes: &pushes)
        #expect(done.isOK, "\(done)")
        #expect(done["deleted"] as? Int == 1210)
        let progress = pushes.filter { $0["type"] as? String == "progress" }.compactMap { $0["deleted"] as? Int }
        #expect(progress.count >= 12, "\(progress)")
        #expect(progress == progress.sorted() && progress.last == 1210)
        #expect(progress.allSatisfy { $0 > 0 })

        // The listener saw every item removed, by ordinary commits.
        var removed = 0
        while removed < 1200 {
            let e = try listener.readObject()
            for ch in (e["changes"] as? [[String: Any]]) ?? [] where ch["type"] as? String == "removed" { removed += 1 }
        }
        #expect(removed == 1200)
        #expect(try c.request(#"{"op":"listCollections"}"#)["collections"] as? [String] == ["keep"])
        // A read on the deleting connection after the delete sees it.
        #expect((try deleter.request(#"{"op":"get","path":"t/3"}"#)["doc"]) is NSNull)

        let bad = try c.request(#"{"op":"deleteRecursive","path":"t","batchSize":501}"#)
        #expect(bad.errorCode == "INVALID_ARGUMENT" && bad.errorMessage?.contains("1 to 500") == true, "\(bad)")
        #expect(try c.request(#"{"op":"deleteRecursive","path":"nothing/here/at"}"#)["deleted"] as? Int == 0)
    }

    @Test func ttlExpiryIsSeenByAListener() throws {
        let daemon = try DaemonProcess(extraArgs: ["--ttl-sweep-ms", "50"])
        let c = try daemon.connect()
        #expect(try c.request(#"{"op":"set","path":"u/1/sessions/old","data":{"expireAt":{"$timestamp":"2020-01-01T00:00:00Z"}}}"#).isOK)
        #expect(try c.request(#"{"op":"set","path":"u/1/sessions/new","data":{"expireAt":{"$timestamp":"2999-01-01T00:00:00Z"}}}"#).isOK)
        #expect(try c.request(#"{"op":"set","path":"u/1/sessions/none","data":{"expireAt":"not a timestamp"}}"#).isOK)
        let listener = try daemon.connect()
        #expect(try listener.request(#"{"op":"listen","query":{"collection":"u/1/sessions"},"id":"L"}"#).isOK)
        let first = try listener.readObject()
        #expect((first["changes"] as? [Any])?.count == 3, "\(first)")

        let set = try c.request(#"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":1}"#)
        #expect(set.isOK, "\(set)")
        let event = try listener.readObject(timeout: 20)
        let changes = event["changes"] as? [[String: Any]] ?? []
        #expect(changes.count == 1 && changes[0]["type"] as? String == "removed", "\(event)")
        #expect((changes.first?["doc"] as? [String: Any])?["path"] as? String == "u/1/sessions/old", "\(event)")
        #expect(try c.request(#"{"op":"get","path":"u/1/sessions/new"}"#)["doc"] is [String: Any])
        #expect(try c.request(#"{"op":"get","path":"u/1/sessions/none"}"#)["doc"] is [String: Any])
        let list = try c.request(#"{"op":"ttl","action":"list"}"#)
        #expect((list["policies"] as? [[String: Any]])?.first?["field"] as? String == "expireAt")
        // The policy is durable with the catalog: it survives a restart.
        daemon.stop()
        try daemon.start()
        let again = try daemon.connect().request(#"{"op":"ttl","action":"list"}"#)
        #expect((again["policies"] as? [[String: Any]])?.count == 1, "\(again)")
        let removed = try daemon.connect().request(#"{"op":"ttl","action":"remove","collectionGroup":"sessions"}"#)
        #expect(removed.isOK)
        let missing = try daemon.connect().request(#"{"op":"ttl","action":"remove","collectionGroup":"sessions"}"#)
        #expect(missing.errorCode == "NOT_FOUND")
        let bad = try daemon.connect().request(#"{"op":"ttl","action":"set","collectionGroup":"a/b","field":"x"}"#)
        #expect(bad.errorCode == "INVALID_ARGUMENT", "\(bad)")
    }

    @Test func compactGivesSpaceBackAndTheDaemonKeepsServing() throws {
        // A change log that keeps nothing, so the deleted documents' images go too.
        let daemon = try DaemonProcess(extraArgs: ["--retention-bytes", "0"])
        let c = try daemon.connect()
        let big = String(repeating: "x", count: 4000)
        for i in 0..<10 {
            let writes = (0..<100).map { #"{"op":"set","path":"big/\#(i * 100 + $0)","data":{"s":"\#(big)"}}"# }
            #expect(try c.request(#"{"op":"commit","writes":[\#(writes.joined(separator: ","))]}"#).isOK)
        }
        #expect(try c.request(#"{"op":"deleteRecursive","path":"big"}"#)["deleted"] as? Int == 1000)
        #expect(try c.request(#"{"op":"set","path":"prune/1","data":{}}"#).isOK)
        let r = try c.request(#"{"op":"compact","id":1}"#)
        #expect(r.isOK, "\(r)")
        #expect(r["method"] as? String == "full vacuum")
        #expect((r["bytesAfter"] as! Int) < (r["bytesBefore"] as! Int), "\(r)")
        let second = try c.request(#"{"op":"compact","id":2}"#)
        #expect(second["method"] as? String == "incremental vacuum")
        #expect(try c.request(#"{"op":"set","path":"after/1","data":{"n":1}}"#).isOK)
    }

    @Test func adminOpsNeedTheAdminUnderRules() throws {
        let d = try SecureDaemon(rules: "rules_version = '2';\nservice cloud.firestore { match /databases/{db}/documents { match /{doc=**} { allow read, write: if true; } } }")
        let user = try d.client("alice")
        for line in [#"{"op":"stats"}"#, #"{"op":"listCollections"}"#, #"{"op":"deleteRecursive","path":"a"}"#,
                     #"{"op":"ttl","action":"list"}"#, #"{"op":"compact"}"#] {
            let r = try user.request(line)
            #expect(r.errorCode == "PERMISSION_DENIED", "\(line): \(r)")
        }
        let admin = try d.admin()
        #expect(try admin.request(#"{"op":"stats"}"#).isOK)
        #expect(try admin.request(#"{"op":"listCollections"}"#).isOK)
    }
}
