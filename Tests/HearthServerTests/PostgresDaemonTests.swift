import Foundation
import HearthTesting
import Testing

/// The real `hearthd --postgres`: the protocol over TCP on a store kept in PostgreSQL, a kill -9 under load that
/// loses no acknowledged write, a listener resuming after the restart without a gap or a duplicate, one daemon
/// that commits per schema (another joins as a follower), and clear refusals of what cannot work.
@Suite(.serialized) struct PostgresDaemonTests {
    let schema = PostgresTestCluster.freshSchema()

    func daemon(dataDir: String? = nil) throws -> DaemonProcess {
        try DaemonProcess(dataDir: dataDir, extraArgs: ["--postgres", try PostgresTestCluster.dsn(), "--postgres-schema", schema])
    }

    @Test func writesQueriesAndListenersWorkAndSurviveAKillNine() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let d = try daemon()
        #expect(d.log.contains("store: PostgreSQL at 127.0.0.1:"), "\(d.log)")
        #expect(!d.log.contains("NOTICE"), "\(d.log)")
        let c = try d.connect()
        #expect(try c.request(#"{"op":"set","path":"calls/a","data":{"customer":"c1","day":3}}"#).isOK)
        #expect(try c.request(#"{"op":"set","path":"calls/b","data":{"customer":"c1","day":5}}"#).isOK)
        let tx = try c.request(#"{"op":"commit","writes":[{"op":"update","path":"calls/a","data":{"day":{"$increment":1}},"precondition":{"exists":true}},{"op":"create","path":"calls/c","data":{"customer":"c2","day":1}}]}"#)
        #expect(tx.isOK, "\(tx)")
        let conflict = try c.request(#"{"op":"create","path":"calls/c","data":{"customer":"c2"}}"#)
        #expect(conflict.errorCode == "ALREADY_EXISTS", "\(conflict)")
        // A composite index: its declaration and entries are stored in PostgreSQL with the commits that make them.
        #expect(try c.request(#"{"op":"index","action":"create","collection":"calls","fields":[["customer","asc"],["day","desc"]]}"#).isOK)
        try c.waitUntilIndexesAreReady()
        let query = #"{"op":"query","collection":"calls","where":[["customer","==","c1"]],"orderBy":[["day","desc"]]}"#
        let q = try c.request(query)
        #expect((q["docs"] as? [[String: Any]])?.map { $0["id"] as? String } == ["b", "a"], "\(q)")

        // A listener, then writers under load, then the crash.
        let watcher = try d.connect()
        try watcher.send(#"{"op":"listen","id":"L","query":{"collection":"load"}}"#)
        #expect(try watcher.readObject().isOK)
        let first = try watcher.readObject()
        #expect(first["type"] as? String == "snapshot")
        var seenSeq = first["seq"] as? Int ?? 0
        var seen: [String: Int] = [:]   // id -> highest value the listener delivered
        let acked = Locked<[String: Int]>([:])
        let stop = Locked(false)
        let group = DispatchGroup()
        for w in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                guard let wc = try? d.connect() else { return }
                var i = 0
                while !stop.value && i < 100_000 {
                    i += 1
                    guard let r = try? wc.request(#"{"op":"set","path":"load/w\#(w)","data":{"v":\#(i)}}"#, timeout: 10), r.isOK else { return }
                    acked.update { $0["w\(w)"] = i }
                }
            }
        }
        // Kill once every writer has had 50 writes acknowledged (the listener's deliveries are the barrier).
        while seen.count < 4 || seen.values.contains(where: { $0 < 50 }) {
            let event = try watcher.readObject(timeout: 30)
            guard event["type"] as? String == "snapshot" else { continue }
            seenSeq = event["seq"] as? Int ?? seenSeq
            for change in event["changes"] as? [[String: Any]] ?? [] {
                let doc = change["doc"] as? [String: Any]
                if let id = doc?["id"] as? String, let v = (doc?["data"] as? [String: Any])?["v"] as? Int { seen[id] = v }
            }
        }
        d.kill9()
        stop.update { $0 = true }
        group.wait()
        let before = acked.value

        // Restart on another node directory (the node's files are its own; the data is PostgreSQL's).
        let restarted = try daemon()
        let r = try restarted.connect()
        for (id, v) in before {
            let doc = try r.request(#"{"op":"get","path":"load/\#(id)"}"#)["doc"] as? [String: Any]
            let got = (doc?["data"] as? [String: Any])?["v"] as? Int ?? -1
            #expect(got >= v, "\(id): acknowledged \(v), found \(got)")
        }
        let again = try r.request(query)
        #expect((again["docs"] as? [[String: Any]])?.map { $0["id"] as? String } == ["b", "a"], "the index survived: \(again)")
        // Resuming after the last seq the listener saw delivers what it missed: values only go up from there,
        // and end at what is stored.
        try r.send(#"{"op":"listen","id":"R","query":{"collection":"load"},"resumeAfter":\#(seenSeq)}"#)
        #expect(try r.readObject().isOK)
        let resumed = try r.readObject()
        #expect(resumed["type"] as? String == "snapshot", "\(resumed)")
        #expect((resumed["seq"] as? Int ?? 0) >= seenSeq)
        for change in resumed["changes"] as? [[String: Any]] ?? [] {
            let doc = change["doc"] as? [String: Any]
            if let id = doc?["id"] as? String, let v = (doc?["data"] as? [String: Any])?["v"] as? Int {
                #expect(v > seen[id] ?? 0, "\(id): resumed at \(v), the listener had \(seen[id] ?? 0)")
                #expect(v >= before[id] ?? 0)
            }
        }
        restarted.stop()
    }

    @Test func aSecondDaemonOnTheSameSchemaJoinsAsAFollower() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let first = try daemon()
        defer { first.stop() }
        #expect(first.log.contains("elected committer, term 1"), "\(first.log)")
        // Without --advertise the committer cannot be reached by the others: the follower says so for writes,
        // and serves reads and listeners from the feed.
        let second = try daemon()
        defer { second.stop() }
        #expect(second.waitForLog("following committer"), "\(second.log)")
        let c1 = try first.connect(), c2 = try second.connect()
        let w = try c1.request(#"{"op":"set","path":"c/d","data":{"x":1}}"#)
        #expect(w.isOK)
        let refused = try c2.request(#"{"op":"set","path":"c/e","data":{}}"#)
        #expect(refused.errorCode == "UNAVAILABLE" && refused.errorMessage?.contains("no usable --advertise address") == true, "\(refused)")
        #expect(try c2.request(#"{"op":"hello","minSeq":\#(w["seq"] as? Int ?? 0)}"#).isOK)
        let doc = try c2.request(#"{"op":"get","path":"c/d"}"#)["doc"] as? [String: Any]
        #expect((doc?["data"] as? [String: Any])?["x"] as? Int == 1)
        let beyond = try c2.request(#"{"op":"hello","minSeq":1000000}"#)
        #expect(beyond.errorCode == "FAILED_PRECONDITION" && beyond.errorMessage?.contains("beyond the database's last seq") == true, "\(beyond)")
    }

    /// A node records the store it serves in its data directory; when the schema is later dropped, the daemon
    /// refuses to start with DATA_LOSS instead of serving a new, empty store under the old name, and creates
    /// nothing. Removing the record is how an operator starts a new store there.
    @Test func aDroppedSchemaIsRefusedNotReplacedByAnEmptyStore() throws {
        defer { try? PostgresTestCluster.dropSchema(schema) }
        let dataDir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let d = try daemon(dataDir: dataDir)
        #expect(try d.connect().request(#"{"op":"set","path":"c/kept","data":{"x":1}}"#).isOK)
        d.stop()
        let records = dataDir + "/postgres-stores"
        #expect((try? String(contentsOfFile: records, encoding: .utf8))?.contains(" \(schema)\n") == true)

        try PostgresTestCluster.dropSchema(schema)
        let args = ["--port", "0", "--data-dir", dataDir, "--postgres", try PostgresTestCluster.dsn(), "--postgres-schema", schema]
        let refused = try DaemonProcess.runToExit(args)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot start: storage: schema \(schema) of database postgres is missing: it was dropped or renamed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("remove its line from \(records)"), "\(refused.stderr)")
        // Nothing was created: the schema is still missing.
        try PostgresTestCluster.exec(schema: "public", "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '\(schema)') THEN RAISE EXCEPTION 'schema created'; END IF; END $$")

        // The operator means to start anew: without the record, a new store starts, and is recorded in turn.
        try FileManager.default.removeItem(atPath: records)
        let fresh = try daemon(dataDir: dataDir)
        let c = try fresh.connect()
        #expect(try c.request(#"{"op":"get","path":"c/kept"}"#)["doc"] is NSNull)
        fresh.stop()
        #expect((try? String(contentsOfFile: records, encoding: .utf8))?.contains(" \(schema)\n") == true)
    }

    @Test func whatCannotWorkIsRefusedAtStart() throws {
        let dataDir = NSTemporaryDirectory() + "hearth-test-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let unreachable = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dataDir, "--postgres",
                                                       "host=127.0.0.1 port=1 user=hearth dbname=postgres connect_timeout=5"])
        #expect(unreachable.status != 0)
        #expect(unreachable.stderr.contains("cannot start: storage: cannot connect to PostgreSQL"), "\(unreachable.stderr)")
        #expect(unreachable.stderr.split(separator: "\n").count == 1, "one line: \(unreachable.stderr)")
        let check = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dataDir, "--postgres", try PostgresTestCluster.dsn(), "--check"])
        #expect(check.status != 0)
        #expect(check.stderr.contains("--check reads the embedded store's files"), "\(check.stderr)")
        let empty = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dataDir, "--postgres", ""])
        #expect(empty.stderr.contains("--postgres needs a libpq connection string"), "\(empty.stderr)")
    }
}
