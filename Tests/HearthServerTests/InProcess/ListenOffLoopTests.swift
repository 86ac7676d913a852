import Foundation
import HearthModel
import HearthTesting
@testable import HearthEngine
@testable import HearthLoop
@testable import HearthServer
import Testing

/// A listen whose first snapshot the engine does not hold in memory is read on a reader thread: the loop
/// never waits for it, the connection's later lines wait for its response, the response comes before the
/// first snapshot, and commits published while it is read reach the listener exactly.
@Suite struct ListenOffLoopTests {
    func fill(_ s: InProcessServer, _ n: Int) {
        let w = s.connect()
        let writes = (0..<n).map { #"{"op":"set","path":"c/d\#(String(format: "%04d", $0))","data":{"n":\#($0)}}"# }
        w.write([#"{"op":"commit","writes":["# + writes.joined(separator: ",") + "]}"])
        s.flush()
        #expect(w.take().allSatisfy { $0["ok"] as? Bool == true })
    }

    /// Holds the only reader thread until `release` (with `--readers 1`), and says when the reads queued
    /// behind it have run (`passed`). Work is handed to the reader directly, without a loop turn, so no
    /// reader's answer reaches the loop before the test lets it (`settle`, `flush`).
    final class ReaderGate: @unchecked Sendable {
        let held = DispatchSemaphore(value: 0)
        let passed = DispatchSemaphore(value: 0)
        init(_ s: InProcessServer) {
            s.server.readers.submit({ [held] in held.wait() }, done: {})
            s.server.readers.handOverSubmitted()
        }
        func release() { held.signal() }
        /// Queues a marker behind what is queued now, hands it all to the reader, and waits until the reader
        /// reaches the marker.
        func waitForQueuedReads(_ s: InProcessServer) {
            s.server.readers.submit({ [passed] in passed.signal() }, done: {})
            s.server.readers.handOverSubmitted()
            passed.wait()
        }
    }

    /// Makes the queued commits durable and publishes them, without waiting for reads (`flush` would wait
    /// for the held reader).
    func publishAll(_ s: InProcessServer) {
        while let b = s.takeBatch() {
            s.land(b)
            s.publish(b)
        }
    }

    @Test func aListenIsReadOnAReaderAndItsResponseComesBeforeItsSnapshot() throws {
        let s = try InProcessServer()
        fill(s, 300)
        let r = s.connect()
        r.write([#"{"op":"listen","query":{"collection":"c","orderBy":["n"]},"id":1}"#, #"{"op":"ping","id":2}"#])
        #expect(s.server.readsInFlight == 1)        // the snapshot is on a reader; the ping waits
        #expect(!r.reading)
        #expect(s.engine.listeners.pending.count == 1 && s.engine.listeners.count == 0)
        s.settle()
        let lines = r.take()
        #expect(lines.count == 3)
        #expect(lines[0]["id"] as? Int == 1 && lines[0]["sub"] as? String == "1")
        #expect(lines[1]["sub"] as? String == "1" && lines[1]["initial"] as? Bool == true && lines[1]["seq"] as? Int == 1)
        #expect((lines[1]["changes"] as? [Any])?.count == 300)
        #expect(lines[2]["id"] as? Int == 2)
        #expect(s.engine.listeners.pending.isEmpty && s.engine.listeners.count == 1)
        // A second listen on the same query joins the result in memory, on the loop.
        r.write([#"{"op":"listen","query":{"collection":"c","orderBy":["n"]},"id":3}"#])
        #expect(s.server.readsInFlight == 0)
        let again = r.take()
        #expect(again.count == 2 && again[0]["sub"] as? String == "2" && (again[1]["changes"] as? [Any])?.count == 300)
    }

    /// Commits published before the reader takes its snapshot are in it; commits published after it are
    /// applied from the listener's backlog; the first snapshot is at the published seq either way.
    @Test func commitsPublishedWhileTheSnapshotIsReadReachTheListenerExactly() throws {
        let s = try InProcessServer { $0.readers = 1 }
        fill(s, 10)
        let w = s.connect(), r = s.connect()
        let gate = ReaderGate(s)
        r.write([#"{"op":"listen","query":{"collection":"c","orderBy":[["n","desc"]],"limit":3},"id":"l"}"#])
        // Published before the snapshot: in the snapshot and in the backlog (skipped there).
        w.write([#"{"op":"set","path":"c/top","data":{"n":100}}"#])
        publishAll(s)
        gate.release()
        gate.waitForQueuedReads(s)           // the snapshot is read, at seq 2; its result waits for the loop
        // Published after the snapshot: only in the backlog.
        w.write([#"{"op":"set","path":"c/higher","data":{"n":200}}"#, #"{"op":"delete","path":"c/d0009"}"#])
        publishAll(s)
        s.settle()
        let lines = r.take()
        #expect(lines.count == 2 && lines[0]["sub"] as? String == "1")
        let first = lines.count > 1 ? lines[1] : [:]
        #expect(first["seq"] as? Int == 4 && first["initial"] as? Bool == true)
        let ids = (first["changes"] as? [[String: Any]])?.compactMap { ($0["doc"] as? [String: Any])?["id"] as? String }
        #expect(ids == ["higher", "top", "d0008"])
        // And it carries on from there.
        w.write([#"{"op":"delete","path":"c/top"}"#])
        s.flush()
        let next = r.take()
        #expect(next.count == 1 && next.first?["seq"] as? Int == 5)
        #expect((next.first?["changes"] as? [[String: Any]])?.map { $0["type"] as? String } == ["removed", "added"])
    }

    /// A resume diffs from its seq on the reader (the change log read there), then catches up from the backlog.
    @Test func aResumeIsDiffedOnAReader() throws {
        let s = try InProcessServer { $0.readers = 1 }
        fill(s, 5)
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"delete","path":"c/d0000"}"#, #"{"op":"set","path":"c/new","data":{"n":7}}"#])
        s.flush()
        let gate = ReaderGate(s)
        r.write([#"{"op":"listen","query":{"collection":"c"},"resumeAfter":1,"id":"l"}"#])
        gate.release()
        gate.waitForQueuedReads(s)
        w.write([#"{"op":"set","path":"c/d0001","data":{"n":-1}}"#])
        publishAll(s)
        s.settle()
        let lines = r.take()
        #expect(lines.count == 2)
        let first = lines.count > 1 ? lines[1] : [:]
        #expect(first["seq"] as? Int == 4 && first["initial"] as? Bool == false && first["reset"] == nil)
        let changes = (first["changes"] as? [[String: Any]])?.map { "\($0["type"]!) \((($0["doc"] as? [String: Any])?["id"])!)" }
        #expect(changes == ["removed d0000", "added new", "modified d0001"])
    }

    @Test func aConnectionClosedWhileItsListenIsReadLeavesNothingBehind() throws {
        let s = try InProcessServer { $0.readers = 1 }
        fill(s, 5)
        let gate = ReaderGate(s)
        let r = s.connect(), w = s.connect()
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":1}"#])
        #expect(s.engine.listeners.pending.count == 1)
        r.close()
        #expect(s.engine.listeners.pending.isEmpty)
        w.write([#"{"op":"set","path":"c/x","data":{"n":1}}"#])
        publishAll(s)
        gate.release()
        s.settle()
        #expect(r.take().isEmpty)
        #expect(s.engine.listeners.count == 0 && s.engine.listeners.index.isEmpty)
        w.write([#"{"op":"count","collection":"c","id":2}"#])
        s.settle()
        #expect(w.take().last?["count"] as? Int == 6)
    }

    /// The initial snapshot a reader encodes is byte for byte the line the loop would encode, at any seq.
    @Test func theInitialSnapshotEncodedOnAReaderIsTheLoopsLine() throws {
        let s = try InProcessServer()
        let w = s.connect()
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"c/a","data":{"s":"é\n\"x\"","n":1.5}},{"op":"set","path":"c/b b","data":{}}]}"#])
        s.flush()
        let q = try Query.collection(CollectionPath(parsing: "c")).validated()
        let rows = try s.engine.runQuery(q).documents
        #expect(rows.count == 2)
        let line = InitialSnapshotLine(sub: "7", seq: 1, rows: rows)
        for seq: UInt64 in [1, 9, 123_456] {
            let expected = s.server.dispatcher.eventLine(.query(seq: seq, initial: true, reset: false, size: rows.count,
                                                                 changes: QueryView.changes(from: [], to: rows, query: q)), sub: "7")
            let conn = FakeConnection(peer: "encoding")
            line.send(at: seq, on: conn)
            #expect(conn.output == expected, "at seq \(seq)")
        }
    }

    /// A first listen whose result no commit changed while it was read is sent as the reader encoded it, at
    /// the seq it is registered at.
    @Test func aListenUntouchedSinceItsSnapshotIsSentAsTheReaderEncodedIt() throws {
        let s = try InProcessServer { $0.readers = 1 }
        fill(s, 3)
        let gate = ReaderGate(s)
        let r = s.connect(), w = s.connect()
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":"l"}"#])
        gate.release()
        gate.waitForQueuedReads(s)
        w.write([#"{"op":"set","path":"other/x","data":{}}"#])   // published after the snapshot, elsewhere
        publishAll(s)
        s.settle()
        let lines = r.take()
        #expect(lines.count == 2)
        let first = lines.count > 1 ? lines[1] : [:]
        #expect(first["seq"] as? Int == 2 && first["size"] as? Int == 3 && (first["changes"] as? [Any])?.count == 3)
        #expect(s.server.firstSnapshotsSentAsRead == 1)
        // A commit since the snapshot that changes the result: the loop encodes the first snapshot instead.
        let gate2 = ReaderGate(s)
        let r2 = s.connect()
        r2.write([#"{"op":"listen","query":{"collection":"c","orderBy":[["n","desc"]]},"id":"m"}"#])
        gate2.release()
        gate2.waitForQueuedReads(s)
        w.write([#"{"op":"set","path":"c/new","data":{"n":50}}"#])
        publishAll(s)
        s.settle()
        let lines2 = r2.take()
        #expect(lines2.count == 2 && (lines2.last?["changes"] as? [Any])?.count == 4)
        #expect(s.server.firstSnapshotsSentAsRead == 1)
    }

    /// A document the cache holds is registered on the loop; one it does not is read on a reader.
    @Test func aDocumentListenGoesToAReaderOnlyOnACacheMiss() throws {
        let s = try InProcessServer()
        fill(s, 3)
        let r = s.connect()
        r.write([#"{"op":"listen","path":"c/absent","id":1}"#])
        #expect(s.server.readsInFlight == 1)
        s.settle()
        let lines = r.take()
        #expect(lines.count == 2 && lines[1]["initial"] as? Bool == true && lines[1]["doc"] is NSNull)
        r.write([#"{"op":"get","path":"c/d0001","id":2}"#])
        s.settle()
        _ = r.take()
        r.write([#"{"op":"listen","path":"c/d0001","id":3}"#])
        #expect(s.server.readsInFlight == 0)
        let cached = r.take()
        #expect(cached.count == 2 && (cached[1]["doc"] as? [String: Any])?["id"] as? String == "d0001")
    }
}

/// Rules judge a listen on the loop; while its first snapshot is read, a publication that changes a
/// document the judgement read judges it again, and a refusal then answers the listen itself (the client
/// never saw its subscription).
@Suite struct ListenOffLoopRulesTests {
    static let rules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /flags/{f} { allow read, write: if true; }
        match /c/{d} {
          allow read: if get(/databases/$(database)/documents/flags/open).data.on == true;
          allow write: if true;
        }
      }
    }
    """

    @Test func aListenerRefusedWhileItsSnapshotIsReadAnswersTheListenWithTheRefusal() throws {
        let file = NSTemporaryDirectory() + "hearth-rules-\(UUID().uuidString).rules"
        try Self.rules.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let s = try InProcessServer {
            $0.readers = 1
            $0.security.rulesFile = file
        }
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"flags/open","data":{"on":true}},{"op":"set","path":"c/a","data":{"n":1}}]}"#])
        s.flush()
        #expect(w.take().first?["ok"] as? Bool == true)
        let gate = ListenOffLoopTests.ReaderGate(s)
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":"l"}"#, #"{"op":"ping","id":"p"}"#])
        #expect(s.engine.listeners.pending.count == 1)
        w.write([#"{"op":"set","path":"flags/open","data":{"on":false}}"#])
        ListenOffLoopTests().publishAll(s)
        #expect(s.engine.listeners.pending.isEmpty)       // refused, and out of the hub
        gate.release()
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? String } == ["l", "p"])
        #expect(lines.first?.errorCode == "PERMISSION_DENIED" && lines.first?.errorMessage?.hasPrefix("listen: ") == true, "\(lines)")
        #expect(s.engine.listeners.count == 0)
    }
}

/// A window refill read on a reader before its publication, over a local store (the in-process server's
/// MemoryStore; `ListenerTests.limitWindowIsRefilledInTheSameSnapshot` runs SQLite over TCP): the loop reads
/// nothing, and other connections' cached reads are answered meanwhile.
@Suite struct WindowRefillOffLoopTests {
    /// Over a local store too, a limit window the publication would refill is read before it on a reader, and
    /// meanwhile (the batch landed, not yet published) other connections go on: a cached `get` is answered at
    /// once at the published seq, a ping too, and a query sent meanwhile is answered at the new seq.
    @Test func whileAWindowIsRefilledOnAReaderCachedReadsAreAnsweredAtThePublishedSeq() throws {
        let s = try InProcessServer { $0.readers = 1 }
        let w = s.connect(), l = s.connect(), r = s.connect()
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"c/a","data":{"n":1}},{"op":"set","path":"c/b","data":{"n":2}},{"op":"set","path":"c/c","data":{"n":3}},{"op":"set","path":"c/d","data":{"n":4}}]}"#])
        s.flush()
        #expect(w.take().first?["ok"] as? Bool == true)
        l.write([#"{"op":"listen","query":{"collection":"c","orderBy":["n"],"limit":2},"id":"l"}"#])
        r.write([#"{"op":"get","path":"c/a"}"#, #"{"op":"get","path":"c/d"}"#])   // now cached
        s.settle()
        #expect(l.take().count == 2 && r.take().count == 2)
        let published = s.engine.lastDurableSeq
        w.write([#"{"op":"delete","path":"c/a","id":"w"}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)
        let loopReads = s.engine.loopStoreReads
        s.publish(batch)                         // the window loses c/a: c/c is read on the reader first
        #expect(s.server.readsInFlight == 1 && s.engine.lastDurableSeq == published && w.take().isEmpty)
        // The loop has not turned since: the refill's result, even if read already, has not reached it.
        r.write([#"{"op":"get","path":"c/d","id":"g"}"#, #"{"op":"get","path":"c/a","id":"g2"}"#, #"{"op":"ping","id":"p"}"#])
        let during = r.take()
        #expect(during.map { $0["id"] as? String } == ["g", "g2", "p"], "\(during)")
        #expect(during.last?["seq"] as? Int == Int(published), "\(during)")
        #expect((during[1]["doc"] as? [String: Any])?["path"] as? String == "c/a", "the published state: c/a is still there")
        let q = s.connect()
        q.write([#"{"op":"query","collection":"c","orderBy":["n"],"id":"q"}"#])
        s.settle()
        #expect(s.engine.lastDurableSeq == published + 1)
        #expect(w.take().first?["ok"] as? Bool == true)
        let event = try #require(l.take().first)
        let changes = (event["changes"] as? [[String: Any]])?.map { "\($0["type"]!) \((($0["doc"] as? [String: Any])?["id"])!)" }
        #expect(event["seq"] as? Int == Int(published) + 1 && changes == ["removed a", "added c"])
        let answer = try #require(q.take().first)
        #expect(answer["seq"] as? Int == Int(published) + 1 && (answer["docs"] as? [Any])?.count == 3, "\(answer)")
        #expect(s.engine.loopStoreReads == loopReads, "nothing read on the loop")
    }
}

/// Reads admitted while a batch has landed in the store and is not yet published (the snapshot gate runs them):
/// what they read from the store on the loop is not trusted, errors included.
@Suite struct LandedBatchReadTests {
    static let rules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /acl/{id} { allow read, write: if true; }
        match /secret/{id} {
          allow read: if !exists(/databases/$(database)/documents/acl/lock);
          allow write: if true;
        }
      }
    }
    """

    /// A rule's `exists()` read on the loop sees the landed batch's `acl/lock` and denies; the published state
    /// allows. The denial is not sent: the line runs again after the publication, and is denied then, with the
    /// ping behind it answered at the new seq.
    @Test func aDenialReadFromALandedBatchWaitsForItsPublication() throws {
        let file = NSTemporaryDirectory() + "hearth-rules-\(UUID().uuidString).rules"
        try Self.rules.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let s = try InProcessServer { $0.security.rulesFile = file }
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"secret/s","data":{"v":1}}"#])
        s.flush()
        r.write([#"{"op":"get","path":"secret/s","id":"g0"}"#])   // caches secret/s; acl/lock is absent
        s.settle()
        #expect(r.take().first?["ok"] as? Bool == true)
        w.write([#"{"op":"set","path":"acl/lock","data":{}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)
        let published = s.engine.lastDurableSeq
        r.write([#"{"op":"get","path":"secret/s","id":"g"}"#, #"{"op":"ping","id":"p"}"#])
        #expect(r.take().isEmpty, "nothing decided on the unpublished lock")
        s.publish(batch)
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? String } == ["g", "p"])
        #expect(lines.first?.errorCode == "PERMISSION_DENIED", "\(lines)")
        #expect(lines.last?["seq"] as? Int == Int(published) + 1)
    }

    /// An export page read on a reader whose snapshot holds the landed batch answers once it is published, at
    /// its seq, never before with a document no one has been told of.
    @Test func anExportPageWaitsForTheBatchItHolds() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/a","data":{"v":1}}"#])
        s.flush()
        w.write([#"{"op":"set","path":"c/b","data":{"v":2}}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)
        let published = s.engine.lastDurableSeq
        r.write([#"{"op":"export","id":"e"}"#, #"{"op":"ping","id":"p"}"#])
        s.settle()
        #expect(r.take().isEmpty, "held until the batch it read is published")
        s.publish(batch)
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? String } == ["e", "p"], "\(lines)")
        #expect(lines.first?["seq"] as? Int == Int(published) + 1)
        #expect((lines.first?["docs"] as? [[String: Any]])?.map { $0["path"] as? String } == ["c/a", "c/b"])
    }

    /// A write refused against a pending commit's state (an update of a document a pending delete removed)
    /// is answered once that commit has its outcome, in its place: the client never learns of the delete
    /// before it is published, and a get behind the refusal sees it published.
    @Test func aRefusalDecidedAgainstAPendingCommitWaitsForIt() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"c/x","data":{"v":1}}"#])
        s.flush()
        _ = w.take()
        w.write([#"{"op":"delete","path":"c/x","id":"d"}"#])
        let batch = try #require(s.takeBatch())
        s.land(batch)
        r.write([#"{"op":"update","path":"c/x","data":{"v":2},"id":"u"}"#, #"{"op":"get","path":"c/x","id":"g"}"#])
        s.settle()
        #expect(r.take().isEmpty, "the refusal would tell of the unpublished delete")
        s.publish(batch)
        s.settle()
        let lines = r.take()
        #expect(lines.map { $0["id"] as? String } == ["u", "g"], "\(lines)")
        #expect(lines.first?.errorCode == "NOT_FOUND")
        #expect(lines.last?["doc"] is NSNull)
        // With nothing pending, a refusal is answered at once.
        r.write([#"{"op":"update","path":"c/x","data":{"v":3},"id":"u2"}"#])
        #expect(r.take().first?.errorCode == "NOT_FOUND")
    }

    /// A refusal decided against a commit that then fails is not sent: the state it was decided against never
    /// existed. The write is answered UNAVAILABLE, to be sent again, and then succeeds.
    @Test func aRefusalBehindAFailedCommitIsAnsweredAfterIt() throws {
        let s = try InProcessServer()
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"create","path":"c/y","data":{"v":1},"id":"c"}"#])
        let batch = try #require(s.takeBatch())
        r.write([#"{"op":"create","path":"c/y","data":{"v":2},"id":"c2"}"#])
        #expect(r.take().isEmpty)
        s.publish(batch, error: .init(.unavailable, "disk gone"))
        s.settle()
        #expect(w.take().first?.errorCode == "UNAVAILABLE")
        let answer = try #require(r.take().first)
        #expect(answer.errorCode == "UNAVAILABLE" && answer.errorMessage?.contains("did not become durable") == true
                && answer.errorMessage?.contains("exists") == false, "\(answer)")
        r.write([#"{"op":"create","path":"c/y","data":{"v":2},"id":"c3"}"#])
        s.flush()
        #expect(r.take().first?["ok"] as? Bool == true)
    }
}
