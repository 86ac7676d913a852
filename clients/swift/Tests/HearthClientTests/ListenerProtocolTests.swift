import Foundation
import Testing
@testable import HearthClient

/// The client's listener logic driven through exact protocol sequences by a scripted server: change
/// application, routing by sub, heartbeats, resume after a drop, replays, resets, divergence, errors.
@Suite struct ListenerProtocolTests {
    static func settings(heartbeat: Double = 0) -> HearthSettings {
        var s = HearthSettings()
        s.heartbeatInterval = heartbeat
        return s
    }

    static func change(_ type: String, _ path: String, _ data: String, updated: Int, old: Int, new: Int) -> String {
        #"{"type":"\#(type)","doc":\#(fakeDoc(path, data, updated: updated)),"oldIndex":\#(old),"newIndex":\#(new)}"#
    }

    static func snapshot(sub: String, seq: Int, initial: Bool = false, reset: Bool = false, size: Int, _ changes: [String]) -> String {
        #"{"sub":"\#(sub)","type":"snapshot","seq":\#(seq),"initial":\#(initial),\#(reset ? #""reset":true,"# : "")"size":\#(size),"changes":[\#(changes.joined(separator: ","))]}"#
    }

    /// Applies a snapshot's changes to the previous list of paths, one at a time.
    static func apply(_ changes: [DocumentChange], to paths: [String]) -> [String] {
        var out = paths
        for c in changes {
            if c.oldIndex != DocumentChange.notFound { out.remove(at: Int(c.oldIndex)) }
            if c.newIndex != DocumentChange.notFound { out.insert(c.document.reference.path, at: Int(c.newIndex)) }
        }
        return out
    }

    static func describe(_ c: DocumentChange) -> String {
        let i = { (v: UInt) in v == DocumentChange.notFound ? "-" : "\(v)" }
        return "\(c.type) \(c.document.documentID) \(i(c.oldIndex)) \(i(c.newIndex))"
    }

    @Test func queryListenerAppliesResumesIgnoresReplaysAndDiffsResets() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<QuerySnapshot>()
        let reg = db.collection("docs").order(by: "order").addSnapshotListener(rec.callback)

        let c1 = try await server.accept()
        let listen = try await c1.expect("listen")
        #expect(listen["resumeAfter"] == nil)
        #expect((listen["query"] as? [String: Any])?["collection"] as? String == "docs")
        try c1.reply(listen, #""ok":true,"sub":"1""#)
        try c1.send(Self.snapshot(sub: "1", seq: 5, initial: true, size: 3, [
            Self.change("added", "docs/a", #"{"order":1}"#, updated: 1, old: -1, new: 0),
            Self.change("added", "docs/b", #"{"order":2}"#, updated: 1, old: -1, new: 1),
            Self.change("added", "docs/c", #"{"order":3}"#, updated: 1, old: -1, new: 2),
        ]))
        let first = try await rec.wait(for: 1)[0]
        #expect(first.documents.map(\.documentID) == ["a", "b", "c"])
        #expect(first.documentChanges.map(Self.describe) == ["added a - 0", "added b - 1", "added c - 2"])

        try c1.send(Self.snapshot(sub: "1", seq: 6, size: 3, [Self.change("modified", "docs/b", #"{"order":4}"#, updated: 2, old: 1, new: 2)]))
        let second = try await rec.wait(for: 2)[1]
        #expect(second.documents.map(\.documentID) == ["a", "c", "b"])
        #expect(second.documentChanges.map(Self.describe) == ["modified b 1 2"])
        #expect(second.documents[2].get("order") as? Int == 4)

        try c1.send(Self.snapshot(sub: "99", seq: 7, size: 0, []))   // another sub: not ours
        try c1.send(#"{"type":"heartbeat","seq":9}"#)
        try c1.send(#"{"id":12345,"ok":true}"#)                    // a response nobody waits for
        try await Task.sleep(nanoseconds: 100_000_000)
        c1.close()

        let c2 = try await server.accept()
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 9, "resumes after the heartbeat's seq")
        try c2.reply(relisten, #""ok":true,"sub":"4""#)
        // A replay of a commit already applied is dropped.
        try c2.send(Self.snapshot(sub: "4", seq: 6, size: 3, [Self.change("modified", "docs/b", #"{"order":4}"#, updated: 2, old: 1, new: 2)]))
        // The server could not resume: a reset with the whole new state [c', d].
        try c2.send(Self.snapshot(sub: "4", seq: 12, reset: true, size: 2, [
            Self.change("added", "docs/c", #"{"order":3,"x":1}"#, updated: 3, old: -1, new: 0),
            Self.change("added", "docs/d", #"{"order":5}"#, updated: 3, old: -1, new: 1),
        ]))
        let third = try await rec.wait(for: 3)[2]
        #expect(third.documents.map(\.documentID) == ["c", "d"])
        #expect(Self.apply(third.documentChanges, to: second.documents.map(\.reference.path)) == third.documents.map(\.reference.path))
        #expect(third.documentChanges.map(Self.describe) == ["removed a 0 -", "removed b 1 -", "added d - 0", "modified c 1 0"])

        try c2.send(Self.snapshot(sub: "4", seq: 13, size: 1, [Self.change("removed", "docs/d", #"{"order":5}"#, updated: 3, old: 1, new: -1)]))
        let fourth = try await rec.wait(for: 4)[3]
        #expect(fourth.documents.map(\.documentID) == ["c"])
        #expect(fourth.documentChanges.map(Self.describe) == ["removed d 1 -"])

        try c2.send(#"{"sub":"4","type":"error","error":{"code":"RESOURCE_EXHAUSTED","message":"subscriber too slow"}}"#)
        let error = try await rec.waitForError()
        #expect((error as? HearthError)?.code == .resourceExhausted)
        try c2.send(Self.snapshot(sub: "4", seq: 14, size: 0, [Self.change("removed", "docs/c", "{}", updated: 3, old: 0, new: -1)]))
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(rec.values.count == 4 && rec.failures.count == 1, "nothing after the error")
        reg.remove()
    }

    @Test func documentListenerDeduplicatesAcrossResumeAndRemoveUnlistens() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("people/p1").addSnapshotListener(rec.callback)

        let c1 = try await server.accept()
        let listen = try await c1.expect("listen")
        #expect(listen["path"] as? String == "people/p1")
        try c1.reply(listen, #""ok":true,"sub":"s1""#)
        try c1.send(#"{"sub":"s1","type":"snapshot","seq":3,"initial":true,"doc":null}"#)
        try c1.send(#"{"sub":"s1","type":"snapshot","seq":4,"initial":false,"doc":\#(fakeDoc("people/p1", #"{"n":1}"#, updated: 4))}"#)
        let two = try await rec.wait(for: 2)
        #expect(two.map(\.exists) == [false, true])
        #expect(two[1].get("n") as? Int == 1)
        c1.close()

        let c2 = try await server.accept()
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 4)
        try c2.reply(relisten, #""ok":true,"sub":"s2""#)
        // The same state again (as a fresh subscription would send it): not delivered twice.
        try c2.send(#"{"sub":"s2","type":"snapshot","seq":5,"initial":true,"doc":\#(fakeDoc("people/p1", #"{"n":1}"#, updated: 4))}"#)
        try c2.send(#"{"sub":"s2","type":"snapshot","seq":6,"initial":false,"doc":\#(fakeDoc("people/p1", #"{"n":2}"#, updated: 6))}"#)
        let three = try await rec.wait(for: 3)
        #expect(three[2].get("n") as? Int == 2)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(rec.values.count == 3)

        reg.remove()
        let unlisten = try await c2.expect("unlisten")
        #expect(unlisten["sub"] as? String == "s2")
        try c2.reply(unlisten, #""ok":true"#)
        try c2.send(#"{"sub":"s2","type":"snapshot","seq":7,"initial":false,"doc":null}"#)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(rec.values.count == 3, "no callback after remove()")
        c2.close()
        #expect(await server.staysQuiet(for: 0.5), "no reconnect once no listener is left")
    }

    /// A resume names the history of the listener's seq: the one the listen response named for the
    /// subscription whose snapshot set that seq (not one named by a subscription that delivered nothing).
    /// A reset from another history, even at a lower seq, replaces the state, diffed for the app.
    @Test func resumeCarriesTheHistoryOfItsSeqAndAResetReplacesTheState() async throws {
        let (h1, h2) = ("00000000000000a1", "00000000000000b2")
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<QuerySnapshot>()
        let reg = db.collection("docs").order(by: "order").addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let c1 = try await server.accept()
        let listen = try await c1.expect("listen")
        #expect(listen["history"] == nil)
        try c1.reply(listen, #""ok":true,"sub":"1","history":"\#(h1)""#)
        try c1.send(Self.snapshot(sub: "1", seq: 5, initial: true, size: 2, [
            Self.change("added", "docs/a", #"{"order":1}"#, updated: 1, old: -1, new: 0),
            Self.change("added", "docs/b", #"{"order":2}"#, updated: 1, old: -1, new: 1),
        ]))
        let first = try await rec.wait(for: 1)[0]
        c1.close()

        let c2 = try await server.accept()
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 5 && relisten["history"] as? String == h1)
        try c2.reply(relisten, #""ok":true,"sub":"2","history":"\#(h2)""#)
        let ping = Task { try await db.ping() }
        let pingRequest = try await c2.expect("ping")
        try c2.reply(pingRequest, #""ok":true,"seq":1"#)
        _ = try await ping.value   // answered after the listen response, which the client has handled
        c2.close()

        let c3 = try await server.accept()
        let again = try await c3.expect("listen")
        #expect(again["resumeAfter"] as? Int == 5 && again["history"] as? String == h1, "still seq 5 of h1")
        try c3.reply(again, #""ok":true,"sub":"3","history":"\#(h2)""#)
        try c3.send(Self.snapshot(sub: "3", seq: 2, reset: true, size: 2, [
            Self.change("added", "docs/b", #"{"order":2,"x":1}"#, updated: 7, old: -1, new: 0),
            Self.change("added", "docs/d", #"{"order":3}"#, updated: 7, old: -1, new: 1),
        ]))
        let second = try await rec.wait(for: 2)[1]
        #expect(second.documents.map(\.documentID) == ["b", "d"])
        #expect(second.documents[0].get("x") as? Int == 1)
        #expect(Self.apply(second.documentChanges, to: first.documents.map(\.reference.path)) == second.documents.map(\.reference.path))
        #expect(Set(second.documentChanges.map(Self.describe).map { $0.split(separator: " ").prefix(2).joined(separator: " ") })
                == ["removed a", "added d", "modified b"])
        // Later snapshots of the new history apply to the new state (seq 3 is not a replay of seq 5's era).
        try c3.send(Self.snapshot(sub: "3", seq: 3, size: 1, [Self.change("removed", "docs/b", "{}", updated: 7, old: 0, new: -1)]))
        let third = try await rec.wait(for: 3)[2]
        #expect(third.documents.map(\.documentID) == ["d"])
        c3.close()

        let c4 = try await server.accept()
        let last = try await c4.expect("listen")
        #expect(last["resumeAfter"] as? Int == 3 && last["history"] as? String == h2)
    }

    /// A document listener's reset (another history, here at a lower seq) delivers the new document; a reset
    /// to the document the app already has delivers nothing.
    @Test func documentListenerResets() async throws {
        let (h1, h2) = ("00000000000000a1", "00000000000000b2")
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("people/p1").addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let c1 = try await server.accept()
        let listen = try await c1.expect("listen")
        try c1.reply(listen, #""ok":true,"sub":"s1","history":"\#(h1)""#)
        try c1.send(#"{"sub":"s1","type":"snapshot","seq":9,"initial":true,"doc":\#(fakeDoc("people/p1", #"{"n":1}"#, updated: 9))}"#)
        #expect(try await rec.wait(for: 1)[0].get("n") as? Int == 1)
        c1.close()

        let c2 = try await server.accept()
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 9 && relisten["history"] as? String == h1)
        try c2.reply(relisten, #""ok":true,"sub":"s2","history":"\#(h2)""#)
        try c2.send(#"{"sub":"s2","type":"snapshot","seq":3,"initial":false,"reset":true,"doc":null}"#)
        #expect(try await rec.wait(for: 2)[1].exists == false)
        c2.close()

        let c3 = try await server.accept()
        let third = try await c3.expect("listen")
        #expect(third["resumeAfter"] as? Int == 3 && third["history"] as? String == h2)
        try c3.reply(third, #""ok":true,"sub":"s3","history":"\#(h1)""#)
        try c3.send(#"{"sub":"s3","type":"snapshot","seq":12,"initial":false,"reset":true,"doc":null}"#)
        try c3.send(#"{"sub":"s3","type":"snapshot","seq":13,"initial":false,"doc":\#(fakeDoc("people/p1", #"{"n":2}"#, updated: 13))}"#)
        let snaps = try await rec.wait(for: 3)
        #expect(snaps[2].get("n") as? Int == 2, "the reset to the same state delivered nothing")
    }

    @Test func snapshotsThatDoNotFitTriggerAFreshDiffedSubscription() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<QuerySnapshot>()
        let reg = db.collection("q").addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let c = try await server.accept()
        let listen = try await c.expect("listen")
        try c.reply(listen, #""ok":true,"sub":"1""#)
        try c.send(Self.snapshot(sub: "1", seq: 2, initial: true, size: 2, [
            Self.change("added", "q/a", "{}", updated: 1, old: -1, new: 0),
            Self.change("added", "q/b", "{}", updated: 1, old: -1, new: 1),
        ]))
        try await rec.wait(for: 1)
        // A removal at an index where the document is not: the client resubscribes from scratch.
        try c.send(Self.snapshot(sub: "1", seq: 3, size: 1, [Self.change("removed", "q/b", "{}", updated: 1, old: 0, new: -1)]))
        let unlisten = try await c.expect("unlisten")
        #expect(unlisten["sub"] as? String == "1")
        try c.reply(unlisten, #""ok":true"#)
        let fresh = try await c.expect("listen")
        #expect(fresh["resumeAfter"] == nil)
        try c.reply(fresh, #""ok":true,"sub":"2""#)
        try c.send(Self.snapshot(sub: "2", seq: 3, initial: true, size: 2, [
            Self.change("added", "q/a", "{}", updated: 1, old: -1, new: 0),
            Self.change("added", "q/c", "{}", updated: 3, old: -1, new: 1),
        ]))
        let second = try await rec.wait(for: 2)[1]
        #expect(second.documents.map(\.documentID) == ["a", "c"])
        #expect(second.documentChanges.map(Self.describe) == ["removed b 1 -", "added c - 1"])
    }

    @Test func heartbeatsAreRequestedAndSilenceMeansADeadConnection() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(heartbeat: 0.2))
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("h/1").addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let c1 = try await server.accept()
        let hello = try await c1.read()
        #expect(hello["op"] as? String == "hello" && hello["heartbeatMs"] as? Int == 200)
        try c1.reply(hello, #""ok":true"#)
        let listen = try await c1.expect("listen")
        try c1.reply(listen, #""ok":true,"sub":"1""#)
        try c1.send(#"{"sub":"1","type":"snapshot","seq":8,"initial":true,"doc":null}"#)
        try c1.send(#"{"type":"heartbeat","seq":11}"#)
        try await rec.wait(for: 1)
        // Then silence: after three missed periods the client gives up on this connection and resumes.
        let c2 = try await server.accept(timeout: 5)
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 11)
    }

    @Test func aHeartbeatPeriodBelowTheServersFloorIsRaisedToIt() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(heartbeat: 0.01))
        defer { db.terminate() }
        let reg = db.document("h/1").addSnapshotListener { _, _ in }
        defer { reg.remove() }
        let c1 = try await server.accept()
        let hello = try await c1.read()
        #expect(hello["op"] as? String == "hello" && hello["heartbeatMs"] as? Int == 100)
    }

    @Test func aRefusedListenEndsTheListenerWithTheError() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<QuerySnapshot>()
        _ = db.collection("x").whereField("a", in: [1]).order(by: "b").addSnapshotListener(rec.callback)
        let c = try await server.accept()
        let listen = try await c.expect("listen")
        try c.reply(listen, #""ok":false,"error":{"code":"FAILED_PRECONDITION","message":"the query requires an index"}"#)
        let error = try await rec.waitForError()
        #expect((error as? HearthError)?.code == .failedPrecondition)
        #expect(rec.values.isEmpty)
    }

    @Test func listenersWaitForTheServerToComeUp() async throws {
        let port = try freePort()
        let db = Hearth(port: port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("late/doc").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        try await Task.sleep(nanoseconds: 300_000_000)   // a few refused attempts
        #expect(rec.failures.isEmpty)
        let env = try TestEnv(extraArgs: ["--port", "\(port)"])
        _ = env
        // Whether or not the daemon implements listen, the client reaches it: a snapshot or the refusal.
        try await rec.wait(timeout: 10) { _ in !rec.values.isEmpty || !rec.failures.isEmpty }
    }

    /// `setEndpoint` moves the connection: requests and listeners continue on the new address, the
    /// listener resuming where it was.
    @Test func setEndpointMovesListenersAndRequests() async throws {
        let first = try FakeServer(), second = try FakeServer()
        let db = Hearth(port: first.port, settings: Self.settings())
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("m/1").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        let c1 = try await first.accept()
        let listen = try await c1.expect("listen")
        try c1.reply(listen, #""ok":true,"sub":"1""#)
        try c1.send(#"{"sub":"1","type":"snapshot","seq":21,"initial":true,"doc":null}"#)
        try await rec.wait(for: 1)

        db.setEndpoint(host: "127.0.0.1", port: second.port)
        let c2 = try await second.accept()
        let relisten = try await c2.expect("listen")
        #expect(relisten["resumeAfter"] as? Int == 21)
        #expect(relisten["history"] == nil, "the server named no history: none is sent")
        try c2.reply(relisten, #""ok":true,"sub":"1""#)
        let ping = Task { try await db.ping() }
        let p = try await c2.expect("ping")
        try c2.reply(p, #""ok":true,"seq":30"#)
        #expect(try await ping.value == 30)
    }
}
