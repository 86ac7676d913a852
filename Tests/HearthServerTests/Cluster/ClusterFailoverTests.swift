import Foundation
import HearthTesting
import Testing

extension ClusterSuites {

    /// Failures of three real nodes under write load: a follower killed, the committer killed, the next one
    /// frozen past its lease, PostgreSQL restarted. Every acknowledged write survives on every node, the nodes
    /// converge on the same state without being restarted, and listeners see every commit once, in order.
    @Suite(.serialized) struct ClusterFailoverTests {
        static let query = #"{"collection":"load"}"#

        /// A listener on `node` over the load's collection.
        static func listen(_ c: ClusterNodes, _ node: Int, resumeAfter: Int? = nil) throws -> (WireClient, ListenedQuery) {
            let conn = try c[node].connect()
            let resume = resumeAfter.map { #","resumeAfter":\#($0)"# } ?? ""
            try conn.send(#"{"op":"listen","id":"L","query":\#(query)\#(resume)}"#)
            let ok = try conn.readObject()
            guard ok.isOK else { throw TestFailure("listen on n\(node): \(ok)") }
            var state = ListenedQuery()
            try state.apply(try conn.readObject())
            return (conn, state)
        }

        /// Reads the listener's snapshots up to `seq` (a hello waiting for it is answered after them).
        static func catchUp(_ conn: WireClient, _ state: inout ListenedQuery, to seq: Int) throws {
            try conn.send(#"{"op":"hello","id":"B","minSeq":\#(seq)}"#)
            while true {
                let line = try conn.readObject(timeout: 30)
                if line["id"] as? String == "B" {
                    guard line.isOK else { throw TestFailure("hello minSeq \(seq): \(line)") }
                    return
                }
                try state.apply(line)
            }
        }

        static func lastSeq(_ c: ClusterNodes, _ node: Int) throws -> Int {
            try c[node].connect().request(#"{"op":"ping"}"#)["seq"] as? Int ?? -1
        }

        /// Every node that runs has published `last` and holds the same documents, each at or past the value last
        /// acknowledged to its writer; a listener's snapshots went up one seq after another, without a repeat,
        /// and it ends holding what the query returns.
        static func checkConverged(_ c: ClusterNodes, _ load: ClusterLoad, last: Int,
                                   listeners: [(node: Int, state: ListenedQuery)]) throws {
            var results: [String] = []
            for i in c.nodes.indices where c[i].isRunning {
                try c.await(last, on: i)
                let r = try c[i].connect().request(#"{"op":"query",\#(query.dropFirst())"#)
                let docs = r["docs"] as? [[String: Any]] ?? []
                results.append(canonical(docs))
                for (w, v) in load.acked.value {
                    let doc = docs.first { $0["id"] as? String == "w\(w)" }
                    let got = (doc?["data"] as? [String: Any])?["v"] as? Int ?? -1
                    #expect(got >= v, "n\(i): w\(w) acknowledged \(v), holds \(got)")
                }
                for l in listeners where l.node == i {
                    let seqs = l.state.events.map(\.seq)
                    #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "n\(i): snapshot seqs \(seqs)")
                    #expect(canonical(l.state.rows.map(\.json)) == canonical(docs.map { canonical($0) }), "n\(i): the listener ends where the query is")
                }
            }
            #expect(results.allSatisfy { $0 == results[0] }, "every node holds the same documents")
        }

        @Test func aFollowerKilledUnderLoadLosesNothingAndItsListenerResumesElsewhere() throws {
            let c = try ClusterNodes()
            let k = try c.committer()
            let follower = (k + 1) % 3, other = (k + 2) % 3
            var (conn, state) = try Self.listen(c, follower)
            let load = ClusterLoad(c)
            defer { load.stop() }   // also when an expectation throws: its writers hold the nodes
            try load.waitForProgress(100)
            try Self.catchUp(conn, &state, to: try Self.lastSeq(c, k))
            let seen = state.events.last!.seq
            load.allowed.update { $0.remove(follower) }
            c[follower].kill9()
            conn.shutdownWrite()
            try load.waitForProgress(150)

            // The client moves to another node and resumes after the last seq it saw.
            let resumed = try c[other].connect()
            try resumed.send(#"{"op":"listen","id":"R","query":\#(Self.query),"resumeAfter":\#(seen)}"#)
            #expect(try resumed.readObject().isOK)
            let first = try resumed.readObject()
            #expect(first["initial"] as? Bool == false && first["reset"] as? Bool != true, "\(first)")
            try state.apply(first)
            // The killed follower comes back and catches up from the feed.
            try c.restart(follower)
            load.allowed.update { $0.insert(follower) }
            try load.waitForProgress(100)
            load.stop()
            let last = try Self.lastSeq(c, k)
            try Self.catchUp(resumed, &state, to: last)
            try Self.checkConverged(c, load, last: last, listeners: [(other, state)])
            print("follower SIGKILL: \(load.acknowledged.value) writes acknowledged, \(load.failed.value) failed, listener resumed on another node at seq \(first["seq"] as? Int ?? 0) after \(seen), \(state.events.count) snapshots, last seq \(last)")
        }

        @Test func theCommitterKilledThenTheNextFrozenPastItsLeaseAreReplaced() throws {
            let c = try ClusterNodes()
            let k1 = try c.committer()
            let others = [(k1 + 1) % 3, (k1 + 2) % 3]
            var listeners = try others.map { node -> (node: Int, conn: WireClient, state: ListenedQuery) in
                let (conn, state) = try Self.listen(c, node)
                return (node, conn, state)
            }
            let load = ClusterLoad(c)
            defer { load.stop() }   // also when an expectation throws: its writers hold the nodes
            try load.waitForProgress(100)

            // The committer dies: one of the others is elected, and writes go on through it.
            load.allowed.update { $0.remove(k1) }
            c[k1].kill9()
            let k2 = try c.committer(among: Set(others))
            try load.waitForProgress(100)

            // The new committer freezes past its lease: the last node ends its session and takes over.
            let k3 = others.first { $0 != k2 }!
            load.allowed.update { $0.remove(k2) }
            kill(c[k2].pid, SIGSTOP)
            #expect(try c.committer(among: [k3]) == k3)
            try load.waitForProgress(100)
            kill(c[k2].pid, SIGCONT)
            // The deposed committer learns it lost the lease and follows.
            #expect(c[k2].waitForLog("lost the committer's lease"))
            #expect(try c.committer(among: [k2, k3]) == k3)
            load.allowed.update { $0.insert(k2) }
            try c.restart(k1)
            load.allowed.update { $0.insert(k1) }
            try load.waitForProgress(100)
            load.stop()
            let last = try Self.lastSeq(c, k3)
            for i in listeners.indices { try Self.catchUp(listeners[i].conn, &listeners[i].state, to: last) }
            try Self.checkConverged(c, load, last: last, listeners: listeners.map { ($0.node, $0.state) })
            print("committer SIGKILL then SIGSTOP: \(load.acknowledged.value) writes acknowledged, \(load.failed.value) failed or unknown, committers n\(k1) → n\(k2) → n\(k3), last seq \(last), listeners \(listeners.map { $0.state.events.count }) snapshots")
        }

        /// A follower stalled while retention pruned the commits it had not published: when it wakes up its
        /// feed cannot give them, so it moves to the database's seq and its listeners get a reset (their whole
        /// result), then follow on as before; no restart.
        @Test func aFollowerBehindRetentionResetsItsListenersAndCarriesOn() throws {
            let c = try ClusterNodes(extraArgs: ["--retention-bytes", "20000"])
            let k = try c.committer()
            let follower = (k + 1) % 3
            let w = try c[k].connect()
            for i in 0..<5 { #expect(try w.request(#"{"op":"set","path":"load/w\#(i)","data":{"v":0}}"#).isOK) }
            var (conn, state) = try Self.listen(c, follower)
            try Self.catchUp(conn, &state, to: try Self.lastSeq(c, k))
            let seen = state.events.last!.seq
            let loopReads = try Self.loopReads(c[follower])
            kill(c[follower].pid, SIGSTOP)
            let padding = String(repeating: "x", count: 300)
            for i in 1...200 {
                #expect(try w.request(#"{"op":"set","path":"load/w\#(i % 5)","data":{"v":\#(i),"p":"\#(padding)"}}"#).isOK)
            }
            let store = try w.request(#"{"op":"stats"}"#)["store"] as? [String: Any]
            #expect((store?["oldestResumableSeq"] as? Int ?? 0) > seen, "retention pruned past the follower: \(String(describing: store))")
            kill(c[follower].pid, SIGCONT)
            #expect(c[follower].waitForLog("fell behind the change log's retention"), "\(c[follower].log)")
            #expect(try w.request(#"{"op":"set","path":"load/w0","data":{"v":1000}}"#).isOK)
            let last = try Self.lastSeq(c, k)
            try Self.catchUp(conn, &state, to: last)
            // The listener is read again off the loop after the reset: its snapshot may follow hello's answer.
            while (state.events.last?.seq ?? 0) < last { try state.apply(try conn.readObject(timeout: 30)) }
            let resets = state.events.filter { $0.seq > seen }
            #expect(!resets.isEmpty)
            #expect(try Self.loopReads(c[follower]) == loopReads, "the reset read nothing on the follower's loop")
            let now = try c[follower].connect().request(#"{"op":"query","collection":"load"}"#)
            #expect(now["seq"] as? Int == last)
            #expect(canonical(state.rows.map(\.json)) == canonical((now["docs"] as? [[String: Any]] ?? []).map { canonical($0) }),
                    "the listener holds the query's result after its reset")
            conn.shutdownWrite()
        }

        /// `stats`' count of store reads made on the node's loop thread.
        static func loopReads(_ node: DaemonProcess) throws -> Int {
            let stats = try node.connect().request(#"{"op":"stats"}"#)
            return try #require((stats["store"] as? [String: Any])?["loopReads"] as? Int, "\(stats)")
        }

        /// A write whose committer died is retried with the same `requestId` through another node: the new
        /// committer finds it in the database and answers it as it was, and it is applied once.
        @Test func aWriteRetriedOnAnotherNodeAfterItsCommitterDiedIsAppliedOnce() throws {
            let c = try ClusterNodes()
            let k = try c.committer()
            let w = try c[k].connect()
            #expect(try w.request(#"{"op":"set","path":"r/a","data":{"n":0}}"#).isOK)
            let bump = #"{"op":"commit","requestId":"failover-1","writes":[{"op":"update","path":"r/a","data":{"n":{"$increment":1}}}]}"#
            let first = try w.request(bump)
            #expect(first.isOK)
            c[k].kill9()
            _ = try c.committer()   // another node is elected and the last one follows it
            let other = try c[(k + 1) % 3].connect()
            let retried = try other.request(bump, timeout: 30)
            #expect(retried["duplicate"] as? Bool == true && retried["seq"] as? Int == first["seq"] as? Int, "\(retried)")
            #expect(canonical(retried["results"] ?? []) == canonical(first["results"] ?? []))
            let doc = try other.request(#"{"op":"get","path":"r/a"}"#)["doc"] as? [String: Any]
            #expect((doc?["data"] as? [String: Any])?["n"] as? Int == 1, "applied once: \(String(describing: doc))")
        }

        @Test func postgresRestartedUnderLoadRefusesWritesMeanwhileThenConverges() throws {
            let pg = try PrivateCluster()
            defer { pg.remove() }
            let c = try ClusterNodes(dsn: pg.dsn)
            defer { for n in c.nodes where n.isRunning { n.kill9() } }
            let k = try c.committer()
            let follower = (k + 1) % 3
            var (conn, state) = try Self.listen(c, follower)
            let load = ClusterLoad(c)
            defer { load.stop() }   // also when an expectation throws: its writers hold the nodes
            try load.waitForProgress(100)

            try pg.stop()
            let direct = try c[k].connect().request(#"{"op":"set","path":"other/x","data":{}}"#, timeout: 60)
            #expect(direct.errorCode == "UNAVAILABLE", "\(direct)")
            try load.waitForFailures(10)   // the writers see it too
            try pg.start()
            // No node is restarted: they elect a committer again, and writes go on.
            try load.waitForProgress(200)
            load.stop()
            let now = try c.committer()
            let last = try Self.lastSeq(c, now)
            try Self.catchUp(conn, &state, to: last)
            try Self.checkConverged(c, load, last: last, listeners: [(follower, state)])
            conn.shutdownWrite()
            print("PostgreSQL restart: \(load.acknowledged.value) writes acknowledged, \(load.failed.value) refused meanwhile, committer n\(k) → n\(now), last seq \(last)")
        }
    }
}
