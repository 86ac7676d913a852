import Foundation
@testable import HearthEngine
import HearthModel
@testable import HearthServer
import Testing

/// Where the store is across the network (`DocumentStore.readsAreRemote`, forced here over a MemoryStore), what
/// a write must read first (documents neither pending nor cached, a request ID) is read on a reader thread:
/// the loop makes no store read for it, the connection's later lines wait, and what a commit published after
/// the reader's snapshot changed is read again rather than trusted.
@Suite struct WriteReadsOffLoopTests {
    func server() throws -> InProcessServer {
        let s = try InProcessServer { $0.readers = 1 }
        s.engine.storeIsRemote = true
        return s
    }

    /// Writes `docs` (on the loop, as a local store would) and empties the document cache.
    func seed(_ s: InProcessServer, _ docs: [String]) {
        s.engine.storeIsRemote = false
        let w = s.connect()
        w.write(docs.map { #"{"op":"set","path":"\#($0)","data":{"v":1}}"# })
        s.flush()
        #expect(w.take().allSatisfy { $0["ok"] as? Bool == true })
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        s.engine.storeIsRemote = true
    }

    @Test func aWriteReadsWhatItNeedsOnAReaderAndTheLoopReadsNothing() throws {
        let s = try server()
        seed(s, ["c/a"])
        let c = s.connect()
        let before = s.engine.gate.storeReads
        c.write([#"{"op":"update","path":"c/a","data":{"w":2},"id":1}"#, #"{"op":"create","path":"c/a","data":{},"id":2}"#,
                 #"{"op":"create","path":"c/new","data":{},"id":3}"#, #"{"op":"ping","id":4}"#])
        #expect(s.server.readsInFlight == 1)
        #expect(!c.reading)
        s.flush()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3, 4])
        #expect(lines[0]["ok"] as? Bool == true)
        #expect(lines[1].errorCode == "ALREADY_EXISTS", "c/a is pending from write 1: no read needed, and it exists")
        #expect(lines[2]["ok"] as? Bool == true)
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
        let doc = try #require(try s.engine.get(DocumentPath(parsing: "c/a")))
        #expect(try s.engine.fields(of: doc)["w"] == .int(2) && s.engine.fields(of: doc)["v"] == .int(1))
    }

    @Test func aRetriedRequestIdIsFoundOnAReader() throws {
        let s = try server()
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/r","data":{"n":1},"requestId":"req-1","id":1}"#])
        s.flush()
        let first = try #require(c.take().first)
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        let before = s.engine.gate.storeReads
        c.write([#"{"op":"set","path":"c/r","data":{"n":1},"requestId":"req-1","id":2}"#])
        #expect(s.server.readsInFlight == 1)
        s.flush()
        let again = try #require(c.take().first)
        #expect(again["duplicate"] as? Bool == true && again["seq"] as? Int == first["seq"] as? Int)
        #expect(again["updateTime"] as? String == first["updateTime"] as? String)
        #expect(s.engine.gate.storeReads == before)
        #expect(s.engine.lastDurableSeq == 1, "applied once")
    }

    /// A commit published after the reader's snapshot changed the document: what the reader read is not
    /// trusted, and the write sees the newer version (read again on a reader).
    @Test func aDocumentChangedAfterTheSnapshotIsReadAgain() throws {
        let s = try server()
        seed(s, ["c/x"])
        let a = s.connect(), b = s.connect()
        let gate = ListenOffLoopTests.ReaderGate(s)
        a.write([#"{"op":"update","path":"c/x","data":{"by":"a"},"id":"a"}"#])
        gate.release()
        gate.waitForQueuedReads(s)            // the reader read c/x at seq 1
        s.engine.storeIsRemote = false
        b.write([#"{"op":"delete","path":"c/x","id":"b"}"#])
        s.engine.storeIsRemote = true
        ListenOffLoopTests().publishAll(s)     // seq 2 deletes it, before the read comes back
        #expect(b.take().first?["ok"] as? Bool == true)
        let before = s.engine.gate.storeReads
        let reads = s.server.readsStarted
        s.flush()
        let answer = try #require(a.take().first)
        #expect(answer.errorCode == "NOT_FOUND", "\(answer)")
        #expect(s.engine.gate.storeReads == before, "read again, on a reader")
        #expect(s.server.readsStarted == reads + 1)
    }

    @Test func aFailedReadAnswersTheWriteAndTheConnectionCarriesOn() throws {
        let s = try server()
        let c = s.connect()
        s.store.close()
        c.write([#"{"op":"set","path":"c/z","data":{},"id":1}"#, #"{"op":"ping","id":2}"#])
        s.settle()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2])
        #expect(lines.first?.errorCode == "UNAVAILABLE" && lines.first?.errorMessage?.hasPrefix("set: ") == true, "\(lines)")
    }

    /// A limit window the publication would refill is read before it on a reader: the batch is published
    /// (and its write acknowledged) once the read is back, and the publication reads nothing on the loop.
    @Test func aWindowRefillIsReadBeforeThePublication() throws {
        let s = try server()
        seed(s, ["c/a", "c/b", "c/c", "c/d"])
        let l = s.connect(), w = s.connect()
        l.write([#"{"op":"listen","query":{"collection":"c","orderBy":["__name__"],"limit":2},"id":"l"}"#])
        s.settle()
        #expect(l.take().count == 2)
        w.write([#"{"op":"delete","path":"c/a","id":"w"}"#])
        #expect(s.server.readsInFlight == 1, "the delete's own read")
        s.settle()
        let batch = try #require(s.takeBatch())
        s.land(batch)
        let before = s.engine.gate.storeReads
        s.publish(batch)                         // the window loses c/a: c/c is read on a reader first
        #expect(s.server.readsInFlight == 1 && s.engine.lastDurableSeq == 4 && w.take().isEmpty)
        s.settle()
        #expect(s.engine.lastDurableSeq == 5)
        #expect(w.take().first?["ok"] as? Bool == true)
        let event = try #require(l.take().first)
        let changes = (event["changes"] as? [[String: Any]])?.map { "\($0["type"]!) \((($0["doc"] as? [String: Any])?["id"])!)" }
        #expect(event["seq"] as? Int == 5 && changes == ["removed a", "added c"])
        #expect(s.engine.gate.storeReads == before, "the publication read nothing on the loop")
    }

    /// A refill that cannot be read before the publication (here: the store fails, three times) is not read on
    /// the loop either: the window's listeners end with the error, and the commit is published and
    /// acknowledged.
    @Test func aWindowRefillThatCannotBeReadEndsItsListeners() throws {
        let s = try server()
        seed(s, ["c/a", "c/b", "c/c", "c/d"])
        let l = s.connect(), w = s.connect()
        l.write([#"{"op":"listen","query":{"collection":"c","orderBy":["__name__"],"limit":2},"id":"l"}"#])
        s.settle()
        let sub = try #require(l.take().first?["sub"] as? String)
        w.write([#"{"op":"delete","path":"c/a","id":"w"}"#])
        s.settle()
        let batch = try #require(s.takeBatch())
        s.land(batch)
        s.store.close()
        let before = s.engine.gate.storeReads
        let started = s.server.readsStarted
        s.publish(batch)
        s.settle()
        #expect(s.server.readsStarted - started == 3, "a read that fails UNAVAILABLE is tried three times")
        #expect(s.engine.lastDurableSeq == batch.records.last!.seq)
        #expect(w.take().first?["ok"] as? Bool == true)
        let ended = try #require(l.take().first)
        #expect(ended["sub"] as? String == sub && ended["type"] as? String == "error" && ended.errorCode == "UNAVAILABLE", "\(ended)")
        #expect(s.engine.listeners.count == 0)
        #expect(s.engine.gate.storeReads == before, "nothing read on the loop")
    }

    /// The TTL sweep reads the expired documents it does not hold on a reader before deleting them.
    func publishAll(_ s: InProcessServer) { ListenOffLoopTests().publishAll(s) }

    @Test func theTTLSweepReadsWhatItDeletesOnAReader() throws {
        let s = try server()
        s.engine.storeIsRemote = false
        let c = s.connect()
        c.write([#"{"op":"set","path":"u/1/sessions/old","data":{"expireAt":{"$timestamp":"2020-01-01T00:00:00Z"}}}"#,
                 #"{"op":"set","path":"u/1/sessions/new","data":{"expireAt":{"$timestamp":"2999-01-01T00:00:00Z"}}}"#,
                 #"{"op":"ttl","action":"set","collectionGroup":"sessions","field":"expireAt","id":"ttl"}"#])
        s.flush()
        #expect(c.take().allSatisfy { $0["ok"] as? Bool == true })
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        s.engine.storeIsRemote = true
        let before = s.engine.gate.storeReads
        let sweeper = s.server.jobs.sweeper
        let sweeps = sweeper.sweeps
        sweeper.sweep()
        // The page is scanned on a reader, the expired document read on a reader, then deleted.
        for _ in 0..<10_000 where sweeper.sweeps == sweeps {
            _ = s.server.loop.runOnce(nowait: true)
            publishAll(s)
        }
        #expect(sweeper.sweeps == sweeps + 1)
        #expect(s.engine.gate.storeReads == before, "nothing read on the loop")
        #expect(try s.engine.get(DocumentPath(parsing: "u/1/sessions/old")) == nil)
        #expect(try s.engine.get(DocumentPath(parsing: "u/1/sessions/new")) != nil)
        #expect(s.server.ttlDeleted == 1)
    }
}
