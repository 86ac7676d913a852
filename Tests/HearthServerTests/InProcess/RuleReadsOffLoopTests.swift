import Foundation
import HearthModel
import HearthTesting
@testable import HearthEngine
@testable import HearthServer
import Testing

/// Over a store across the network (`DocumentStore.readsAreRemote`, forced here over a MemoryStore), the
/// documents a rule's `get()`/`exists()` reads while the loop judges a request are never read on the loop:
/// the loop notes what it missed, a reader reads it (at a snapshot for the published state, as the store
/// holds it now for a write), and the request runs again once it is back, in its place among the
/// connection's lines.
@Suite struct RuleReadsOffLoopTests {
    static let rules = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /flags/{f} { allow read, write: if true; }
        match /c/{d} {
          allow read: if get(/databases/$(database)/documents/flags/open).data.on == true
                      && exists(/databases/$(database)/documents/flags/$(get(/databases/$(database)/documents/flags/open).data.key));
          allow write: if exists(/databases/$(database)/documents/flags/$(get(/databases/$(database)/documents/flags/open).data.key));
        }
      }
    }
    """

    static let rulesFile: String = {
        let file = NSTemporaryDirectory() + "hearth-rule-reads-\(UUID().uuidString).rules"
        TemporaryDirectories.removeAtExit(file)
        try! rules.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }()

    /// A server judging with `rules`, over a store the loop must not read, holding `flags/open`
    /// (`{on, key:"k1"}`), `flags/k1` and `c/a`; the document cache holds only `cached`.
    func server(on: Bool = true, cached: [String] = ["c/a"]) throws -> InProcessServer {
        let s = try InProcessServer {
            $0.readers = 1
            $0.security.rulesFile = Self.rulesFile
        }
        let w = s.connect()
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"flags/open","data":{"on":\#(on),"key":"k1"}},{"op":"set","path":"flags/k1","data":{}}]}"#,
                 #"{"op":"set","path":"c/a","data":{"n":1}}"#])
        s.flush()
        let seeded = w.take()
        #expect(seeded.count == 2 && seeded.allSatisfy { $0["ok"] as? Bool == true }, "\(seeded)")
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        for p in cached { _ = try s.engine.get(DocumentPath(parsing: p)) }
        s.engine.storeIsRemote = true
        return s
    }

    @Test func aCachedGetWhoseRuleReadsAnotherDocumentReadsItOnAReader() throws {
        let s = try server()
        let c = s.connect()
        let before = s.engine.gate.storeReads
        c.write([#"{"op":"get","path":"c/a","id":1}"#, #"{"op":"ping","id":2}"#])
        #expect(s.server.readsInFlight == 1, "flags/open is read on a reader")
        #expect(c.take().isEmpty && !c.reading)
        s.settle()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2])
        let doc = lines.first?["doc"] as? [String: Any]
        #expect(doc?["path"] as? String == "c/a", "\(lines)")
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
        #expect(s.engine.documentCache.peekRendered(DocumentCache.Key(try DocumentPath(parsing: "flags/open"))) != nil,
                "what was read is cached for the next request")
    }

    @Test func aRefusalNeedsTheReadToo() throws {
        let s = try server(on: false)
        let c = s.connect()
        let before = s.engine.gate.storeReads
        c.write([#"{"op":"get","path":"c/a","id":1}"#])
        s.settle()
        let line = try #require(c.take().first)
        #expect(line.errorCode == "PERMISSION_DENIED" && line.errorMessage?.hasPrefix("get: ") == true, "\(line)")
        #expect(s.engine.gate.storeReads == before)
    }

    /// The write rule reads `flags/open`, then the flag it names: two rounds of reads, then the commit.
    @Test func aWriteWhoseRuleReadsAChainOfDocumentsRunsOnceTheyAreAllRead() throws {
        let s = try server()
        let c = s.connect()
        let before = s.engine.gate.storeReads
        let started = s.server.readsStarted
        c.write([#"{"op":"set","path":"c/a","data":{"n":2},"id":1}"#, #"{"op":"create","path":"c/new","data":{},"id":2}"#,
                 #"{"op":"ping","id":3}"#])
        s.flush()
        #expect(s.server.readsStarted - started == 3, "c/a's rule: flags/open, then flags/k1; c/new: itself (the flags are cached by then)")
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(lines.prefix(2).allSatisfy { $0["ok"] as? Bool == true }, "\(lines)")
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
        s.engine.storeIsRemote = false
        let doc = try #require(try s.engine.get(DocumentPath(parsing: "c/a")))
        #expect(try s.engine.fields(of: doc)["n"] == .int(2))
    }

    @Test func aWriteTheChainRefusesIsRefused() throws {
        let s = try server()
        let w = s.connect()
        s.engine.storeIsRemote = false
        w.write([#"{"op":"set","path":"flags/open","data":{"on":true,"key":"missing"}}"#])
        s.flush()
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        s.engine.storeIsRemote = true
        let before = s.engine.gate.storeReads
        let c = s.connect()
        c.write([#"{"op":"delete","path":"c/a","id":1}"#])
        s.flush()
        let line = try #require(c.take().first)
        #expect(line.errorCode == "PERMISSION_DENIED" && line.errorMessage?.hasPrefix("delete: ") == true, "\(line)")
        #expect(s.engine.gate.storeReads == before)
    }

    @Test func aListenJudgedOnAnUncachedDocumentIsJudgedOnceItIsRead() throws {
        let s = try server()
        let c = s.connect()
        let before = s.engine.gate.storeReads
        c.write([#"{"op":"listen","path":"c/a","id":"l"}"#, #"{"op":"ping","id":"p"}"#])
        s.settle()
        let lines = c.take()
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first?["id"] as? String == "l" && lines.first?["ok"] as? Bool == true)
        #expect(lines.last?["id"] as? String == "p")
        #expect(s.engine.gate.storeReads == before)
    }

    /// A listener whose rule now reads a document the loop does not hold (the flag it reads names another)
    /// is judged again once that document is read on a reader, and ends with the refusal.
    @Test func aListenerIsJudgedAgainAfterReadingWhatItsRuleNowReads() throws {
        let s = try server(cached: [])
        let w = s.connect(), r = s.connect()
        let before = s.engine.gate.storeReads
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":"l"}"#])
        s.flush()
        let opened = r.take()
        let sub = try #require(opened.first?["sub"] as? String, "\(opened)")
        #expect(opened.count == 2, "the response and the first snapshot")
        let started = s.server.readsStarted
        w.write([#"{"op":"set","path":"flags/open","data":{"on":true,"key":"k2"}}"#])
        s.flush()
        #expect(s.server.readsStarted - started == 1, "flags/k2, read to judge the listener again")
        #expect(w.take().first?["ok"] as? Bool == true)
        let ended = r.take()
        #expect(ended.count == 1 && ended.first?["sub"] as? String == sub && ended.first?["type"] as? String == "error", "\(ended)")
        #expect(ended.first?.errorCode == "PERMISSION_DENIED")
        #expect(s.engine.listeners.count == 0)
        #expect(s.engine.gate.storeReads == before, "no store read on the loop")
    }

    /// A commit that changes what the rules read and a document the listener sees, together: while the
    /// rules' new read is read on a reader, the listener is held, so a listener refused never sees the
    /// commit, and one still allowed gets it once judged.
    @Test(arguments: [("k2", false), ("k3", true)])
    func aListenerJudgedAgainIsHeldUntilJudged(key: String, allowed: Bool) throws {
        let s = try server(cached: [])
        s.engine.storeIsRemote = false
        let w = s.connect(), r = s.connect()
        w.write([#"{"op":"set","path":"flags/k3","data":{}}"#])
        s.flush()
        s.engine.documentCache.reset(published: s.engine.lastDurableSeq)
        s.engine.storeIsRemote = true
        r.write([#"{"op":"listen","query":{"collection":"c"},"id":"l"}"#])
        s.flush()
        let opened = r.take()
        let sub = try #require(opened.first?["sub"] as? String, "\(opened)")
        let before = s.engine.gate.storeReads
        w.write([#"{"op":"commit","writes":[{"op":"set","path":"flags/open","data":{"on":true,"key":"\#(key)"}},{"op":"update","path":"c/a","data":{"n":5}}]}"#])
        s.settle()
        let batch = try #require(s.takeBatch())
        s.land(batch)
        s.publish(batch)
        let listener = try #require(s.engine.listeners.listeners.values.first { $0.tag == sub })
        #expect(listener.held, "judged again, its rule's new read on a reader")
        #expect(r.take().isEmpty, "nothing sent while held")
        s.flush()
        let lines = r.take()
        #expect(lines.count == 1, "\(lines)")
        if allowed {
            #expect(lines.first?["type"] as? String == "snapshot" && lines.first?["seq"] as? Int == Int(batch.records.last!.seq), "\(lines)")
            #expect(!listener.held)
        } else {
            #expect(lines.first?["type"] as? String == "error" && lines.first?.errorCode == "PERMISSION_DENIED", "\(lines)")
            #expect(s.engine.listeners.count == 0)
        }
        #expect(s.engine.gate.storeReads == before)
    }

    @Test func aFailedReadAnswersTheLineAndTheConnectionCarriesOn() throws {
        let s = try server()
        let c = s.connect()
        s.store.close()
        c.write([#"{"op":"get","path":"c/a","id":1}"#, #"{"op":"ping","id":2}"#])
        s.settle()
        let lines = c.take()
        #expect(lines.map { $0["id"] as? Int } == [1, 2])
        #expect(lines.first?.errorCode == "UNAVAILABLE" && lines.first?.errorMessage?.hasPrefix("get: ") == true, "\(lines)")
    }

    @Test func aRecursiveDeleteReadsWhatItDeletesOnAReader() throws {
        let s = try server(cached: [])
        let before = s.engine.gate.storeReads
        var outcome: Result<Int, HearthError>?
        let job = RecursiveDelete(root: ResourcePath(segments: ["c"]), batchSize: 10, server: s.server,
                                  store: s.store, progress: { _ in }) { outcome = $0 }
        job.start()
        for _ in 0..<10_000 where outcome == nil {
            _ = s.server.loop.runOnce(nowait: true)
            ListenOffLoopTests().publishAll(s)
        }
        #expect(try outcome?.get() == 1)
        #expect(s.engine.gate.storeReads == before, "nothing read on the loop")
    }
}
