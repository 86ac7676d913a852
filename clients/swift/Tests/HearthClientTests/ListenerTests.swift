import Foundation
import HearthTesting
import Testing
import HearthClient

/// Listeners against the real daemon. Disabled at runtime while hearthd does not implement `listen` yet
/// (see `ServerSupport.listen`); the scripted-server tests cover the client side meanwhile.
@Suite(.serialized, .enabled(if: ServerSupport.listen, "hearthd does not implement the listen op yet"))
struct ListenerTests {
    static var settings: HearthSettings {
        var s = HearthSettings()
        s.heartbeatInterval = 0.1
        return s
    }

    static func describe(_ c: DocumentChange) -> String {
        let i = { (v: UInt) in v == DocumentChange.notFound ? "-" : "\(v)" }
        return "\(c.type) \(c.document.documentID) \(i(c.oldIndex)) \(i(c.newIndex))"
    }

    /// Checks a listener's snapshot sequence: each snapshot's changes, applied to the previous snapshot's
    /// documents, give its documents; no snapshot after the first repeats the state before it.
    static func checkConsistent(_ snaps: [QuerySnapshot]) {
        var state: [String] = []
        var previous: [String: Timestamp?] = [:]
        for (i, s) in snaps.enumerated() {
            for c in s.documentChanges {
                if c.oldIndex != DocumentChange.notFound { state.remove(at: Int(c.oldIndex)) }
                if c.newIndex != DocumentChange.notFound { state.insert(c.document.reference.path, at: Int(c.newIndex)) }
            }
            #expect(state == s.documents.map(\.reference.path), "snapshot \(i) is its changes applied to the one before")
            let now = Dictionary(uniqueKeysWithValues: s.documents.map { ($0.reference.path, $0.updateTime) })
            if i > 0 { #expect(now != previous || !s.documentChanges.isEmpty, "snapshot \(i) changes something") }
            previous = now
        }
    }

    @Test func initialSnapshotThenOneSnapshotPerWriteAndRemove() async throws {
        let env = try TestEnv(settings: Self.settings)
        let docs = env.db.collection("docs")
        let batch = env.db.batch()
        for (id, order) in [("a", 1), ("b", 2), ("c", 3)] { batch.setData(["order": order], forDocument: docs.document(id)) }
        try await batch.commit()

        let rec = Recorder<QuerySnapshot>()
        let reg = docs.order(by: "order").addSnapshotListener(rec.callback)
        let first = try await rec.wait(for: 1)[0]
        #expect(first.documents.map(\.documentID) == ["a", "b", "c"])
        #expect(first.documentChanges.map(Self.describe) == ["added a - 0", "added b - 1", "added c - 2"])

        try await docs.document("b").updateData(["order": 4])
        let second = try await rec.wait(for: 2)[1]
        #expect(second.documentChanges.map(Self.describe) == ["modified b 1 2"])
        #expect(second.documents.map(\.documentID) == ["a", "c", "b"])

        try await docs.document("c").delete()
        let third = try await rec.wait(for: 3)[2]
        #expect(third.documentChanges.map(Self.describe) == ["removed c 1 -"])

        try await env.db.collection("elsewhere").document("x").setData(["order": 0])
        reg.remove()
        try await docs.document("a").updateData(["order": 9])
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(rec.values.count == 3, "an unrelated write sends nothing; nothing arrives after remove()")
        Self.checkConsistent(rec.values)
    }

    @Test func documentListener() async throws {
        let env = try TestEnv(settings: Self.settings)
        let ref = env.db.document("people/p1")
        let rec = Recorder<DocumentSnapshot>()
        let reg = ref.addSnapshotListener(rec.callback)
        #expect(try await rec.wait(for: 1)[0].exists == false)
        try await ref.setData(["n": 1])
        #expect(try await rec.wait(for: 2)[1].get("n") as? Int == 1)
        try await ref.delete()
        #expect(try await rec.wait(for: 3)[2].exists == false)
        reg.remove()

        var received: [Int] = []
        let stream = Task {
            var seen: [Int] = []
            for try await snap in ref.snapshots {
                seen.append(snap.get("n") as? Int ?? 0)
                if seen.last == 2 { break }
            }
            return seen
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        try await ref.setData(["n": 2])
        received = try await stream.value
        #expect(received.last == 2)
    }

    @Test func invalidListenerQueryReportsTheErrorOnce() async throws {
        let env = try TestEnv(settings: Self.settings)
        let rec = Recorder<QuerySnapshot>()
        _ = env.db.collection("x").whereField("a", isEqualTo: 1).order(by: "b").addSnapshotListener(rec.callback)
        let error = try await rec.waitForError()
        #expect((error as? HearthError)?.code == .failedPrecondition)
    }

    /// The daemon is killed with SIGKILL and restarted on the same port and data dir; writes happen while
    /// the client is disconnected. The listener resumes: its callbacks show every state once, in order,
    /// without gaps or repeats, ending exactly at the query's result.
    @Test(arguments: [false, true])
    func resumesAfterDaemonCrash(pastRetention: Bool) async throws {
        let port = try freePort()
        let daemon = try DaemonProcess(extraArgs: ["--port", "\(port)", "--retention-bytes", "200000"])
        let db = Hearth(port: port, settings: Self.settings)
        defer { db.terminate() }
        let col = db.collection("r")
        for (id, v) in [("a", 1), ("b", 2), ("c", 3)] { try await col.document(id).setData(["v": v]) }
        let rec = Recorder<QuerySnapshot>()
        let reg = col.order(by: "v").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        try await rec.wait(for: 1)
        try await col.document("a").updateData(["v": 10])
        try await rec.wait(for: 2)

        daemon.kill9()
        try await Task.sleep(nanoseconds: 800_000_000)   // the client keeps retrying with backoff
        try daemon.start()
        #expect(daemon.port == port)
        // Writes while the client is (most likely) still waiting to reconnect.
        let w = try daemon.connect()
        #expect(try w.request(#"{"op":"set","path":"r/d","data":{"v":0}}"#).isOK)
        #expect(try w.request(#"{"op":"delete","path":"r/b"}"#).isOK)
        #expect(try w.request(#"{"op":"update","path":"r/c","data":{"v":20}}"#).isOK)
        if pastRetention {
            let big = String(repeating: "x", count: 50_000)
            for i in 0..<8 { #expect(try w.request(#"{"op":"set","path":"filler/f\#(i)","data":{"s":"\#(big)"}}"#).isOK) }
            // Retention prunes as the store applies the fillers to SQLite, up to ~100 ms after their
            // acknowledgement: wait for that, so a resume from here (the client's, most likely) is past retention.
            #expect(try w.waitForAppliedBacklog() == 0)
        }
        try await col.document("e").setData(["v": 5])   // through the client: it reconnects
        let expected = ["d", "e", "a", "c"]
        try await rec.wait { $0.last?.documents.map(\.documentID) == expected }
        let fresh = try await col.order(by: "v").getDocuments()
        #expect(fresh.documents.map(\.documentID) == expected)
        let last = try #require(rec.values.last)
        #expect(last.documents.map { $0.get("v") as? Int } == fresh.documents.map { $0.get("v") as? Int })
        Self.checkConsistent(rec.values)
    }

    /// The listens a relay saw that resume (carry `resumeAfter`).
    static func resumedListens(_ relay: LineRelay) -> [[String: Any]] {
        relay.requests.filter { $0["op"] as? String == "listen" && $0["resumeAfter"] != nil }
    }

    /// The daemon restarts on the same data dir (so the same history) and takes writes before the client can
    /// reach it again: the listens that resume name that history beside their seq, and the daemon answers
    /// with the net changes (no reset); the app sees one snapshot with exactly those changes.
    @Test func resumeAfterARestartNamesTheHistoryAndGetsTheNetChanges() async throws {
        let daemon = try DaemonProcess()
        let relay = try LineRelay(targetPort: daemon.port)
        defer { relay.stop() }
        let history = try daemon.connect().request(#"{"op":"hello"}"#)["history"] as? String
        #expect(history?.count == 16)
        let db = Hearth(port: relay.port, settings: Self.settings)
        defer { db.terminate() }
        let col = db.collection("h")
        for (id, v) in [("a", 1), ("b", 2)] { try await col.document(id).setData(["v": v]) }
        let rec = Recorder<QuerySnapshot>(), docRec = Recorder<DocumentSnapshot>()
        let reg = col.order(by: "v").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        let docReg = col.document("a").addSnapshotListener(docRec.callback)
        defer { docReg.remove() }
        #expect(try await rec.wait(for: 1)[0].documents.map(\.documentID) == ["a", "b"])
        #expect(try await docRec.wait(for: 1)[0].get("v") as? Int == 1)

        relay.targetPort = nil   // the client cannot reconnect until the writes below are in
        daemon.stop()
        try daemon.start()       // the same data dir, on another port
        let w = try daemon.connect()
        #expect(try w.request(#"{"op":"hello"}"#)["history"] as? String == history)
        #expect(try w.request(#"{"op":"set","path":"h/c","data":{"v":3}}"#).isOK)
        #expect(try w.request(#"{"op":"update","path":"h/a","data":{"v":4}}"#).isOK)
        relay.targetPort = daemon.port

        try await rec.wait { $0.last?.documents.map(\.documentID) == ["b", "c", "a"] }
        try await docRec.wait { $0.last?.get("v") as? Int == 4 }
        #expect(rec.values.count == 2 && docRec.values.count == 2, "one snapshot each for the resume")
        #expect(Set(rec.values[1].documentChanges.map { "\($0.type) \($0.document.documentID)" }) == ["added c", "modified a"])
        Self.checkConsistent(rec.values)
        let resumed = Self.resumedListens(relay)
        // At least one resume per listener (a client that reached the relay while it had no daemon behind it
        // resumed once more), each naming the history.
        #expect(resumed.count >= 2 && resumed.allSatisfy { $0["history"] as? String == history }, "\(resumed)")
        #expect(!relay.responses.contains { $0["reset"] as? Bool == true }, "the daemon resumed without a reset")
    }

    /// The daemon behind the client's address is replaced by one on a fresh data dir (another history) whose
    /// seqs have already passed the listeners' resume points and whose result has the same size: from a seq
    /// alone it would send a diff of unrelated commits (nothing) and the app would keep the old documents.
    /// With the history it resets: the app sees the new database's state, as changes from what it had.
    @Test func aDaemonReplacedByAFreshDatabaseResetsListeners() async throws {
        let old = try DaemonProcess()
        let relay = try LineRelay(targetPort: old.port)
        defer { relay.stop() }
        let db = Hearth(port: relay.port, settings: Self.settings)
        defer { db.terminate() }
        let col = db.collection("f")
        for (id, v) in [("a", 1), ("b", 2), ("c", 3)] { try await col.document(id).setData(["v": v]) }
        let rec = Recorder<QuerySnapshot>(), gone = Recorder<DocumentSnapshot>(), changed = Recorder<DocumentSnapshot>()
        let regs = [col.order(by: "v").addSnapshotListener(rec.callback),
                    col.document("a").addSnapshotListener(gone.callback),
                    col.document("b").addSnapshotListener(changed.callback)]
        defer { for r in regs { r.remove() } }
        #expect(try await rec.wait(for: 1)[0].documents.map(\.documentID) == ["a", "b", "c"])
        #expect(try await gone.wait(for: 1)[0].exists)
        #expect(try await changed.wait(for: 1)[0].get("v") as? Int == 2)
        let oldInfo = try old.connect().request(#"{"op":"hello"}"#)
        let oldSeq = try #require(oldInfo["seq"] as? Int)   // no resume point is beyond it

        let fresh = try DaemonProcess()
        let w = try fresh.connect()
        for line in [#"{"op":"set","path":"f/b","data":{"v":20}}"#, #"{"op":"set","path":"f/d","data":{"v":10}}"#,
                     #"{"op":"set","path":"f/e","data":{"v":30}}"#] {
            #expect(try w.request(line).isOK)
        }
        var i = 0
        while try #require(w.request(#"{"op":"ping"}"#)["seq"] as? Int) <= oldSeq {   // unrelated commits
            #expect(try w.request(#"{"op":"set","path":"filler/f\#(i)","data":{}}"#).isOK)
            i += 1
        }
        let newHistory = try #require(w.request(#"{"op":"hello"}"#)["history"] as? String)
        #expect(newHistory != oldInfo["history"] as? String)
        relay.targetPort = nil
        old.stop()
        relay.targetPort = fresh.port

        let expected = ["d=10", "b=20", "e=30"]
        let state = { (s: QuerySnapshot) in s.documents.map { "\($0.documentID)=\($0.get("v") as? Int ?? -1)" } }
        try await rec.wait { $0.last.map(state) == expected }
        try await gone.wait { $0.last?.exists == false }
        try await changed.wait { $0.last?.get("v") as? Int == 20 }
        #expect(rec.values.count == 2, "the reset is one snapshot")
        #expect(Set(rec.values[1].documentChanges.map { "\($0.type) \($0.document.documentID)" })
                == ["removed a", "removed c", "added d", "added e", "modified b"])
        Self.checkConsistent(rec.values)
        let resumed = Self.resumedListens(relay)
        // The first resume of each listener carries the old history (a loaded machine may make the client
        // reconnect again afterwards, with the new history it then holds).
        #expect(resumed.count >= 3 && resumed.prefix(3).allSatisfy { $0["history"] as? String == oldInfo["history"] as? String }, "\(resumed)")
        #expect(relay.responses.filter { $0["reset"] as? Bool == true }.count >= 3, "the daemon reset all three")

        // Live on the new database.
        #expect(try w.request(#"{"op":"delete","path":"f/d"}"#).isOK)
        try await rec.wait { $0.last.map(state) == ["b=20", "e=30"] }
        #expect(rec.values.last?.documentChanges.map(Self.describe) == ["removed d 0 -"])
        Self.checkConsistent(rec.values)
    }

    /// Random writes from another connection while a limited, ordered listener runs; midway the client's
    /// connection is dropped (it resumes). Every snapshot is consistent and the last equals a fresh query.
    @Test func randomWritesConvergeThroughADrop() async throws {
        let env = try TestEnv(settings: Self.settings)
        let col = env.db.collection("rnd")
        let query = col.order(by: "v", descending: true).limit(to: 7)
        let rec = Recorder<QuerySnapshot>()
        let reg = query.addSnapshotListener(rec.callback)
        defer { reg.remove() }
        try await rec.wait(for: 1)
        let writer = Hearth(port: env.daemon.port)
        defer { writer.terminate() }
        var rng = SystemRandomNumberGenerator()
        for i in 0..<300 {
            let ref = writer.collection("rnd").document("d\(Int.random(in: 0..<30, using: &rng))")
            if Int.random(in: 0..<6, using: &rng) == 0 {
                try await ref.delete()
            } else {
                try await ref.setData(["v": Int.random(in: 0..<50, using: &rng), "w": i])
            }
            if i == 150 { env.db.setEndpoint(host: "127.0.0.1", port: env.daemon.port) }
        }
        let fresh = try await query.getDocuments()
        let expected = fresh.documents.map { "\($0.documentID)=\($0.get("v") as? Int ?? -1)" }
        try await rec.wait { $0.last.map { $0.documents.map { "\($0.documentID)=\($0.get("v") as? Int ?? -1)" } } == expected }
        Self.checkConsistent(rec.values)
    }
}
