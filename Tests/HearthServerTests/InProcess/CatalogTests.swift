import Foundation
import HearthModel
import HearthTesting
@testable import HearthEngine
@testable import HearthServer
import Testing

/// Answers read from the index catalog in memory (a listing, an index or TTL policy that exists or not),
/// which can hold changes not yet durable: each is sent once the catalog it describes is durable, in its
/// place, and never tells of a change a failed commit took back.
@Suite struct CatalogAnswerTests {
    static let create = #"{"op":"index","action":"create","collection":"c","fields":[["a","asc"],["b","desc"]],"id":"i"}"#

    @Test func answersReadFromAPendingDropWaitForIt() throws {
        let s = try InProcessServer()
        let a = s.connect(), b = s.connect()
        a.write([Self.create])
        s.flush()
        let indexID = try #require(((a.take().first?["index"]) as? [String: Any])?["id"] as? Int)
        a.write([#"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d"}"#])
        let batch = try #require(s.takeBatch())
        b.write([#"{"op":"index","action":"list","id":"l"}"#, #"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d2"}"#,
                 #"{"op":"ping","id":"p"}"#])
        s.settle()
        #expect(b.take().isEmpty, "the drop is not durable yet")
        s.land(batch)
        s.publish(batch)
        s.settle()
        #expect(a.take().first?["ok"] as? Bool == true)
        let lines = b.take()
        #expect(lines.map { $0["id"] as? String } == ["l", "d2", "p"], "\(lines)")
        #expect((lines.first?["indexes"] as? [Any])?.isEmpty == true)
        #expect(lines[1].errorCode == "NOT_FOUND" && lines[1].errorMessage?.hasPrefix("index: no index with id") == true, "\(lines[1])")
        // With nothing pending, the same answers come at once.
        b.write([#"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d3"}"#])
        #expect(b.take().first?.errorCode == "NOT_FOUND")
    }

    /// A catalog change whose commit fails is rolled back with it, as documents are: an answer read from the
    /// change is not sent (UNAVAILABLE, to be sent again), and the catalog is again what the store holds, so
    /// no later commit stores the change the client was told had failed.
    @Test func aCatalogChangeWhoseCommitFailsIsRolledBack() throws {
        let s = try InProcessServer()
        let a = s.connect(), b = s.connect(), c = s.connect(), d = s.connect()
        a.write([Self.create, #"{"op":"ttl","action":"set","collectionGroup":"keep","field":"e","id":"k"}"#])
        s.flush()
        let indexID = try #require(((a.take().first?["index"]) as? [String: Any])?["id"] as? Int)
        let setSessions = #"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":"t"}"#
        a.write([#"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d"}"#])
        let batch = try #require(s.takeBatch())
        c.write([setSessions])                                     // a commit queued behind the batch
        b.write([setSessions])                                     // in force in memory: judged, held
        d.write([#"{"op":"index","action":"list","id":"l"}"#])     // judged, held
        s.settle()
        #expect(b.take().isEmpty && d.take().isEmpty)
        s.publish(batch, error: .init(.unavailable, "disk gone"))
        s.settle()
        #expect(a.take().first?.errorCode == "UNAVAILABLE")
        #expect(c.take().first?.errorMessage?.contains("commit not durable") == true, "failed with the batch before it")
        for answer in [try #require(b.take().first), try #require(d.take().first)] {
            #expect(answer.errorCode == "UNAVAILABLE"
                    && answer.errorMessage?.hasSuffix("not answered: it was judged against a commit that did not become durable; send it again") == true,
                    "\(answer)")
        }
        // Nothing pending: answered at once, from the catalog rolled back to the durable one.
        d.write([#"{"op":"index","action":"list","id":"l2"}"#, #"{"op":"ttl","action":"list","id":"p"}"#])
        let now = d.take()
        #expect((now.first?["indexes"] as? [[String: Any]])?.map { $0["id"] as? Int } == [indexID], "\(now)")
        #expect((now.last?["policies"] as? [[String: Any]])?.map { $0["collectionGroup"] as? String } == ["keep"], "\(now)")
        // A later write does not carry the failed changes.
        a.write([#"{"op":"set","path":"c/x","data":{"a":1,"b":2}}"#])
        s.flush()
        _ = a.take()
        #expect(s.engine.indexCatalog.ttl.map(\.collectionGroup) == ["keep"])
        #expect(s.engine.indexCatalog.indexes.map(\.id) == [Int64(indexID)] && s.engine.indexCatalog.dropping.isEmpty)
        // Sent again, the drop succeeds.
        a.write([#"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d3"}"#])
        s.flush()
        #expect(a.take().first?["ok"] as? Bool == true)
    }

    /// A listen refused for want of an index is judged against the catalog in memory: during a drop whose
    /// commit is pending the refusal waits for it, in its place, and when that commit fails it is not sent
    /// (UNAVAILABLE), since the index is back.
    @Test func aListenRefusedForWantOfAnIndexWaitsForThePendingDrop() throws {
        let s = try InProcessServer()
        let a = s.connect(), b = s.connect()
        a.write([Self.create])
        s.flush()
        let indexID = try #require(((a.take().first?["index"]) as? [String: Any])?["id"] as? Int)
        func listen(_ id: String) -> String {
            #"{"op":"listen","query":{"collection":"c","where":[["a","==",1]],"orderBy":[["b","desc"]]},"id":"\#(id)"}"#
        }
        func answer(_ lines: [[String: Any]], _ id: String) -> [String: Any]? { lines.first { $0["id"] as? String == id } }
        for _ in 0..<8 where s.engine.indexCatalog.indexes.first?.state != .ready {   // the backfill, as the loop runs it
            s.server.runIndexWork()
            s.flush()
        }
        b.write([listen("L1")])
        s.settle()
        let l1 = b.take(); #expect(answer(l1, "L1")?["ok"] as? Bool == true, "the index serves it: \(l1)")

        let drop = #"{"op":"index","action":"drop","indexId":\#(indexID),"id":"d"}"#
        a.write([drop])
        var batch = try #require(s.takeBatch())
        b.write([listen("L2"), #"{"op":"ping","id":"p"}"#])
        s.settle()
        #expect(b.take().isEmpty, "the drop is not durable yet")
        s.publish(batch, error: .init(.unavailable, "disk gone"))
        s.settle()
        #expect(a.take().first?.errorCode == "UNAVAILABLE")
        var lines = b.take()
        #expect(lines.map { $0["id"] as? String } == ["L2", "p"], "\(lines)")
        #expect(answer(lines, "L2")?.errorCode == "UNAVAILABLE"
                && answer(lines, "L2")?.errorMessage?.hasPrefix("listen: not answered") == true, "\(lines)")
        b.write([listen("L3")])
        s.settle()
        #expect(answer(b.take(), "L3")?["ok"] as? Bool == true, "the drop was rolled back: the index serves it again")

        a.write([drop])
        batch = try #require(s.takeBatch())
        b.write([listen("L4")])
        s.settle()
        #expect(b.take().isEmpty)
        s.land(batch)
        s.publish(batch)
        s.settle()
        #expect(a.take().first?["ok"] as? Bool == true)
        lines = b.take()
        #expect(answer(lines, "L4")?.errorCode == "FAILED_PRECONDITION"
                && answer(lines, "L4")?.errorMessage?.hasPrefix("listen: the query requires an index") == true, "\(lines)")
        // Nothing pending: refused at once; a query with an offset is refused for that first.
        b.write([listen("L5")])
        #expect(answer(b.take(), "L5")?.errorCode == "FAILED_PRECONDITION")
        b.write([#"{"op":"listen","query":{"collection":"c","where":[["a","==",1]],"orderBy":[["b","desc"]],"offset":1},"id":"L6"}"#])
        let l6 = b.take()
        #expect(answer(l6, "L6")?.errorCode == "INVALID_ARGUMENT"
                && answer(l6, "L6")?.errorMessage?.contains("offset is not supported by listeners") == true, "\(l6)")
    }

    /// A catalog answer waits for the commits that carry the catalog, not for others: a data write failing
    /// after it does not turn it into UNAVAILABLE.
    @Test func aCatalogAnswerDoesNotWaitForWritesThatCarryNoCatalog() throws {
        let s = try InProcessServer()
        let a = s.connect(), b = s.connect()
        a.write([#"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":"t"}"#])
        s.flush()
        _ = a.take()
        a.write([#"{"op":"set","path":"c/x","data":{"v":1},"id":"w"}"#])
        let batch = try #require(s.takeBatch())
        b.write([#"{"op":"ttl","action":"list","id":"l"}"#, #"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":"t2"}"#])
        let lines = b.take()
        #expect(lines.map { $0["id"] as? String } == ["l", "t2"], "answered at once: \(lines)")
        #expect((lines.first?["policies"] as? [Any])?.count == 1 && lines.last?["ok"] as? Bool == true)
        s.publish(batch, error: .init(.unavailable, "disk gone"))
        s.settle()
        #expect(a.take().first?.errorCode == "UNAVAILABLE")
        #expect(s.engine.indexCatalog.ttl.count == 1, "the durable policy stays")
    }
}

/// `index` and `ttl` requests: every field an action does not use is refused, IDs are checked as collection IDs
/// everywhere, and a wrongly typed field says so.
@Suite struct CatalogRequestTests {
    @Test(arguments: [
        (#"{"op":"index","action":"create","collection":"c","fields":[["a","asc"],["b","asc"]],"indexId":3}"#,
         #"index: field "indexId" is not used by action "create" (it takes "collection", "fields", "scope")"#),
        (#"{"op":"index","action":"list","collection":"c"}"#, #"index: field "collection" is not used by action "list" (it takes no other field)"#),
        (#"{"op":"index","action":"drop","indexId":2,"collection":"c"}"#, #"index: field "collection" is not used by action "drop" (it takes "indexId")"#),
        (#"{"op":"ttl","action":"list","collectionGroup":"s"}"#, #"ttl: field "collectionGroup" is not used by action "list" (it takes no other field)"#),
        (#"{"op":"ttl","action":"remove","collectionGroup":"s","field":"e"}"#, #"ttl: field "field" is not used by action "remove" (it takes "collectionGroup")"#),
        (#"{"op":"index","action":"create","collection":5,"fields":[["a","asc"]]}"#, #"index: field "collection" must be a string (a collection ID), not an integer"#),
        (#"{"op":"index","action":"create","collection":null,"fields":[["a","asc"]]}"#, #"index: field "collection" (a collection ID) is required"#),
        (#"{"op":"ttl","action":"set","collectionGroup":"..","field":"e"}"#, #"ttl: collection group ".." is not a collection ID: an ID must not be "." or "..""#),
        (#"{"op":"ttl","action":"set","collectionGroup":"__x__","field":"e"}"#, #"ttl: collection group "__x__" is not a collection ID: IDs of the form __...__ are reserved ("__x__")"#),
        (#"{"op":"ttl","action":"set","collectionGroup":"a/b","field":"e"}"#, #"ttl: collection group "a/b" is not a collection ID: an ID must not contain "/""#),
    ])
    func refusals(line: String, message: String) throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([line, #"{"op":"ping","id":"p"}"#])
        let answers = c.take()
        #expect(answers.first?.errorCode == "INVALID_ARGUMENT" && answers.first?.errorMessage == message, "\(answers)")
        #expect(answers.last?["id"] as? String == "p", "the connection carries on")
        #expect(s.engine.indexes.isEmpty && s.engine.ttlPolicies.isEmpty)
    }

    @Test func nullsAndUsedFieldsPass() throws {
        let s = try InProcessServer()
        let c = s.connect()
        c.write([#"{"op":"ttl","action":"list","collectionGroup":null}"#, #"{"op":"index","action":"list","indexId":null}"#])
        #expect(c.take().allSatisfy { $0["ok"] as? Bool == true })
        let long = String(repeating: "g", count: 1_501)
        c.write([#"{"op":"ttl","action":"set","collectionGroup":"\#(long)","field":"e"}"#])
        #expect(c.take().first?.errorMessage?.contains("an ID must be at most 1500 bytes") == true)
    }
}

/// The TTL sweeper deletes only under a policy still in force when it commits: one removed (or rolled back by a
/// failed commit) while the sweep's page was being read deletes nothing.
@Suite struct TTLSweepPolicyTests {
    @Test func aPolicyRemovedWhileItsPageIsReadDeletesNothing() throws {
        let s = try InProcessServer { $0.readers = 1 }
        let c = s.connect()
        c.write([#"{"op":"set","path":"u/1/sessions/old","data":{"expireAt":{"$timestamp":"2020-01-01T00:00:00Z"}}}"#,
                 #"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":"ttl"}"#])
        s.flush()
        #expect(c.take().allSatisfy { $0["ok"] as? Bool == true })
        let gate = ListenOffLoopTests.ReaderGate(s)
        let sweeper = s.server.jobs.sweeper
        let sweeps = sweeper.sweeps
        sweeper.sweep()                                        // its page waits behind the held reader
        c.write([#"{"op":"ttl","action":"remove","collectionGroup":"sessions","id":"rm"}"#])
        ListenOffLoopTests().publishAll(s)
        s.settle()
        #expect(c.take().first?["ok"] as? Bool == true)
        gate.release()
        for _ in 0..<10_000 where sweeper.sweeps == sweeps {
            _ = s.server.loop.runOnce(nowait: true)
            ListenOffLoopTests().publishAll(s)
        }
        #expect(sweeper.sweeps == sweeps + 1)
        #expect(s.server.ttlDeleted == 0)
        #expect(try s.engine.get(DocumentPath(parsing: "u/1/sessions/old")) != nil)
    }
}
