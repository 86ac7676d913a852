import Foundation
import HearthTesting
import Testing

/// Listeners over TCP against the real daemon.
@Suite(.serialized) final class ListenerTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess(extraArgs: ["--retention-bytes", "200000"])
        c = try daemon.connect()
    }

    /// Reads pushed lines until one for `sub` arrives (responses and other lines are returned in `others`).
    func nextEvent(_ client: WireClient, sub: String, timeout: Double = 10) throws -> [String: Any] {
        while true {
            let o = try client.readObject(timeout: timeout)
            if o["sub"] as? String == sub { return o }
        }
    }

    func listen(_ client: WireClient, _ spec: String) throws -> (String, [String: Any]) {
        try client.send(#"{"op":"listen",\#(spec)}"#)
        let r = try client.readObject()
        #expect(r.isOK, "\(r)")
        let sub = r["sub"] as! String
        return (sub, try nextEvent(client, sub: sub))
    }

    func changes(_ e: [String: Any]) -> [String] {
        ((e["changes"] as? [[String: Any]]) ?? []).map {
            "\($0["type"]!) \((($0["doc"] as? [String: Any])?["id"])!) \($0["oldIndex"]!) \($0["newIndex"]!)"
        }
    }

    func write(_ line: String) throws {
        let w = try daemon.connect()
        #expect(try w.request(line).isOK)
    }

    /// Publication matches a commit's documents against listeners' queries with the fields the commit built, not
    /// its stored images decoded again: they must be the same value, for every value type and for transforms the
    /// commit resolved. The listener's filters (an equality on every field of every type, the resolved increment
    /// and array union) match only if they are; what it is sent is rendered from the stored image, byte for byte
    /// what a `get` renders.
    @Test func pushedDocumentsEqualTheStoredImageForEveryValueType() throws {
        let l = try daemon.connect()
        let equal: [(String, String)] = [("negZero", "-0.0"), ("posInf", #"{"$double":"Infinity"}"#), ("negInf", #"{"$double":"-Infinity"}"#),
                     ("integralDouble", #"{"$double":3}"#), ("tiny", "5e-324"), ("big", "1.7976931348623157e308"),
                     ("tenth", "0.1"), ("int", "-9223372036854775808"), ("maxInt", "9223372036854775807"),
                     ("bytes", #"{"$bytes":"AAEC/w=="}"#), ("emptyBytes", #"{"$bytes":""}"#),
                     ("ref", #"{"$ref":"customers/c1/orders/o1"}"#), ("geo", #"{"$geopoint":[-90,180]}"#),
                     ("ts", #"{"$timestamp":"2026-11-29T12:00:00.123456Z"}"#), ("epoch", #"{"$timestamp":"1970-01-01T00:00:00Z"}"#),
                     ("null", "null"), ("bool", "false"), ("text", #""é\u0000\"\\\n☃𝄞""#), ("empty", #""""#),
                     ("map", #"{"nested":{"deep":[{"$ref":"a/b"}]}}"#), ("`a.b`", #""dotted key""#), ("n", "2.5")]
        let filters = equal.map { #"["\#($0.0)","==",\#($0.1)]"# } + [#"["arr","array-contains",7]"#]
        try l.send(#"{"op":"listen","query":{"collection":"types","where":[\#(filters.joined(separator: ","))]}}"#)
        while !(try l.readLine()).contains(#""initial":true"#) {}
        let data = String(ExportImportTests.everyType.dropLast()) + #","at":{"$serverTimestamp":true},"n":{"$increment":2}}"#
        try write(#"{"op":"set","path":"types/all","data":\#(data)}"#)
        try write(#"{"op":"update","path":"types/all","data":{"n":{"$increment":0.5},"arr":{"$arrayUnion":[7]}}}"#)
        var pushed = try l.readLine()
        while !pushed.contains(#""path":"types/all""#) { pushed = try l.readLine() }
        #expect(pushed.contains(#""type":"added""#), "\(pushed)")
        let g = try daemon.connect()
        try g.send(#"{"op":"get","path":"types/all"}"#)
        let stored = try g.readLine()
        let last = try #require(Self.dataObject(in: pushed))
        let expected = try #require(Self.dataObject(in: stored))
        #expect(last == expected, "pushed \(last)\nstored \(expected)")
        #expect(last.contains(#""n":2.5"#))
    }

    /// The text of the first `"data":{...}` object in `line`.
    static func dataObject(in line: String) -> String? {
        let bytes = Array(line.utf8)
        let marker = Array(#""data":{"#.utf8)
        guard let start = (0...(bytes.count - marker.count)).first(where: { Array(bytes[$0..<$0 + marker.count]) == marker }) else { return nil }
        var depth = 0, inString = false, escaped = false
        for i in (start + marker.count - 1)..<bytes.count {
            let b = bytes[i]
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return String(decoding: bytes[(start + marker.count - 1)...i], as: UTF8.self) }
            default: break
            }
        }
        return nil
    }

    /// A listener pushes whole documents: a projection, which it would ignore, is refused; and offset too.
    @Test func listenersRefuseWhatTheyCannotHonour() throws {
        let selected = try c.request(#"{"op":"listen","query":{"collection":"sel","select":["v"]}}"#)
        #expect(selected.errorCode == "INVALID_ARGUMENT" && selected.errorMessage?.contains("select is not supported by listeners") == true, "\(selected)")
        let offset = try c.request(#"{"op":"listen","query":{"collection":"sel","orderBy":["v"],"offset":1}}"#)
        #expect(offset.errorCode == "INVALID_ARGUMENT" && offset.errorMessage?.contains("offset") == true, "\(offset)")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }

    /// Firestore's docChanges example: a=1, b=2, c=3 ordered by `order`; set b.order=4; delete c.
    @Test func firestoreDocChangesExample() throws {
        try write(#"{"op":"commit","writes":[{"op":"set","path":"docs/a","data":{"order":1}},{"op":"set","path":"docs/b","data":{"order":2}},{"op":"set","path":"docs/c","data":{"order":3}}]}"#)
        let (sub, first) = try listen(c, #""query":{"collection":"docs","orderBy":["order"]}"#)
        #expect(first["initial"] as? Bool == true)
        #expect(changes(first) == ["added a -1 0", "added b -1 1", "added c -1 2"])
        try write(#"{"op":"update","path":"docs/b","data":{"order":4}}"#)
        #expect(changes(try nextEvent(c, sub: sub)) == ["modified b 1 2"])
        try write(#"{"op":"delete","path":"docs/c"}"#)
        let e = try nextEvent(c, sub: sub)
        #expect(changes(e) == ["removed c 1 -1"])
        #expect(e["size"] as? Int == 2)
    }

    /// A six-change commit on a four-document result: removed, then added, then modified, indices one at a time.
    @Test func multiChangeCommitOrdersRemovedAddedModified() throws {
        try write(#"{"op":"commit","writes":[{"op":"set","path":"m/a","data":{"v":1}},{"op":"set","path":"m/b","data":{"v":2}},{"op":"set","path":"m/c","data":{"v":3}},{"op":"set","path":"m/d","data":{"v":4}}]}"#)
        let (sub, _) = try listen(c, #""query":{"collection":"m","orderBy":["v"]}"#)
        try write(#"{"op":"commit","writes":[{"op":"delete","path":"m/b"},{"op":"set","path":"m/e","data":{"v":0}},{"op":"update","path":"m/d","data":{"v":0.5}},{"op":"set","path":"m/f","data":{"v":3.5}},{"op":"delete","path":"m/a"},{"op":"update","path":"m/c","data":{"w":1}}]}"#)
        let e = try nextEvent(c, sub: sub)
        // old [a b c d] -> new [e d c f]; indices as Firestore's tracker computes them: d still sits at the
        // end (with its old value) when f is added, so f lands at 2; then d moves 3 -> 1 and c stays at 2.
        #expect(changes(e) == ["removed a 0 -1", "removed b 0 -1", "added e -1 0", "added f -1 2", "modified d 3 1", "modified c 2 2"])
        #expect(e["size"] as? Int == 4)
    }

    @Test func limitWindowIsRefilledInTheSameSnapshot() throws {
        try write(#"{"op":"commit","writes":[{"op":"set","path":"w/a","data":{"v":1}},{"op":"set","path":"w/b","data":{"v":2}},{"op":"set","path":"w/c","data":{"v":3}}]}"#)
        let (sub, first) = try listen(c, #""query":{"collection":"w","orderBy":["v"],"limit":2}"#)
        #expect(changes(first) == ["added a -1 0", "added b -1 1"])
        #expect(try c.request(#"{"op":"get","path":"w/a"}"#).isOK)   // cached: the delete reads nothing itself
        let loopReads = try self.loopReads()
        try write(#"{"op":"delete","path":"w/a"}"#)
        let e = try nextEvent(c, sub: sub)
        #expect(changes(e) == ["removed a 0 -1", "added c -1 1"])
        #expect(e["size"] as? Int == 2)
        // The refill (w/c) was read on a reader thread before the publication, not on the loop.
        #expect(try self.loopReads() == loopReads)
    }

    /// The store reads the loop thread made since start (`stats`' `store.loopReads`).
    func loopReads() throws -> Int {
        let stats = try c.request(#"{"op":"stats"}"#)
        return try #require((stats["store"] as? [String: Any])?["loopReads"] as? Int, "\(stats)")
    }

    @Test func aBatchArrivesAsOneSnapshotAndUnrelatedCommitsSendNothing() throws {
        let (sub, _) = try listen(c, #""query":{"collection":"batch","where":[["k","==","x"]]}"#)
        try write(#"{"op":"set","path":"other/z","data":{"k":"x"}}"#)
        try write(#"{"op":"set","path":"batch/n","data":{"k":"y"}}"#)
        try write(#"{"op":"commit","writes":[{"op":"set","path":"batch/1","data":{"k":"x"}},{"op":"set","path":"batch/2","data":{"k":"x"}},{"op":"set","path":"batch/3","data":{"k":"x"}}]}"#)
        let e = try nextEvent(c, sub: sub)
        #expect(changes(e) == ["added 1 -1 0", "added 2 -1 1", "added 3 -1 2"])
        try c.send(#"{"op":"ping","id":"p"}"#)
        #expect(try c.readObject()["id"] as? String == "p")   // nothing else was pushed in between
    }

    @Test func documentListenerOnMissingDocumentAndUnlisten() throws {
        let (sub, first) = try listen(c, #""path":"people/nobody""#)
        #expect(first["doc"] is NSNull)
        try write(#"{"op":"set","path":"people/nobody","data":{"n":1}}"#)
        let e = try nextEvent(c, sub: sub)
        #expect(((e["doc"] as? [String: Any])?["data"] as? [String: Any])?["n"] as? Int == 1)
        #expect(try c.request(#"{"op":"unlisten","sub":"\#(sub)"}"#).isOK)
        try write(#"{"op":"set","path":"people/nobody","data":{"n":2}}"#)
        try c.send(#"{"op":"ping","id":"after"}"#)
        #expect(try c.readObject()["id"] as? String == "after")
        #expect(try c.request(#"{"op":"unlisten","sub":"\#(sub)"}"#).errorCode == "NOT_FOUND")
    }

    @Test func resumeWithinRetentionAfterRestartAndPastRetention() throws {
        try write(#"{"op":"commit","writes":[{"op":"set","path":"r/a","data":{"v":1}},{"op":"set","path":"r/b","data":{"v":2}}]}"#)
        let (_, first) = try listen(c, #""query":{"collection":"r","orderBy":["v"]}"#)
        let seq = first["seq"] as! Int
        try write(#"{"op":"set","path":"r/c","data":{"v":3}}"#)
        try write(#"{"op":"delete","path":"r/a"}"#)
        daemon.stop()
        try daemon.start()
        let c2 = try daemon.connect()
        let (_, resumed) = try listen(c2, #""query":{"collection":"r","orderBy":["v"]},"resumeAfter":\#(seq)"#)
        #expect(resumed["initial"] as? Bool == false)
        #expect(resumed["reset"] == nil)
        #expect(changes(resumed) == ["removed a 0 -1", "added c -1 1"])
        // Push the log past its 200 kB retention, then resume from the old seq: a reset. Retention prunes when the
        // store applies the commits to SQLite, which may trail their acknowledgement (history stays resumable
        // meanwhile, never less); a restart applies everything first, so the resume below finds the log pruned.
        let big = String(repeating: "x", count: 50_000)
        for i in 0..<8 { try write(#"{"op":"set","path":"filler/f\#(i)","data":{"s":"\#(big)"}}"#) }
        daemon.stop()
        try daemon.start()
        let c3 = try daemon.connect()
        let (_, reset) = try listen(c3, #""query":{"collection":"r","orderBy":["v"]},"resumeAfter":\#(seq)"#)
        #expect(reset["reset"] as? Bool == true)
        #expect(changes(reset) == ["added b -1 0", "added c -1 1"])
    }

    @Test func invalidListenIsRejectedBeforeAnySubscription() throws {
        #expect(try c.request(#"{"op":"listen","query":{"collection":"x","where":[["a","in",[]]]}}"#).errorCode == "INVALID_ARGUMENT")
        #expect(try c.request(#"{"op":"listen"}"#).errorCode == "INVALID_ARGUMENT")
        #expect(try c.request(#"{"op":"listen","path":"x/y","query":{"collection":"x"}}"#).errorCode == "INVALID_ARGUMENT")
        #expect(try c.request(#"{"op":"listen","query":{"collection":"x","where":[["a","==",1]],"orderBy":["b"]}}"#).errorCode == "FAILED_PRECONDITION")
        let (sub, _) = try listen(c, #""path":"x/y""#)
        #expect(sub == "1")   // the failed listens created no subscription
    }

    /// Identical queries share one result: both subscribers see the same snapshots, and removing one
    /// leaves the other intact.
    @Test func identicalQueriesShareWorkButNotFate() throws {
        let d = try daemon.connect()
        let (subA, _) = try listen(c, #""query":{"collection":"shared","orderBy":["v"]}"#)
        let (subB, _) = try listen(d, #""query":{"collection":"shared","orderBy":["v"]}"#)
        try write(#"{"op":"set","path":"shared/x","data":{"v":1}}"#)
        #expect(changes(try nextEvent(c, sub: subA)) == ["added x -1 0"])
        #expect(changes(try nextEvent(d, sub: subB)) == ["added x -1 0"])
        #expect(try c.request(#"{"op":"unlisten","sub":"\#(subA)"}"#).isOK)
        try write(#"{"op":"set","path":"shared/y","data":{"v":0}}"#)
        #expect(changes(try nextEvent(d, sub: subB)) == ["added y -1 0"])
        let (subC, late) = try listen(c, #""query":{"collection":"shared","orderBy":["v"]}"#)
        _ = subC
        #expect(changes(late) == ["added y -1 0", "added x -1 1"])
    }

    @Test func heartbeatsWhenIdle() throws {
        #expect(try c.request(#"{"op":"hello","heartbeatMs":100}"#).isOK)
        let hb = try c.readObject(timeout: 5)
        #expect(hb["type"] as? String == "heartbeat")
        #expect(hb["seq"] is Int)
        #expect(hb["ok"] == nil)
        try c.send(#"{"op":"hello","heartbeatMs":0}"#)
        var r = try c.readObject()
        while r["type"] as? String == "heartbeat" { r = try c.readObject() }   // one may have been on its way
        #expect(r.isOK, "\(r)")
    }

    /// `heartbeatMs` is 0 or from 100 ms to an hour: `1` used to be accepted and sent hundreds of heartbeats a
    /// second. A refused value changes nothing: the next line is the next response, no heartbeat before it.
    @Test(arguments: [1, 99, 3_600_001, -1])
    func heartbeatsOutsideTheRangeAreRefused(_ ms: Int) throws {
        for line in [#"{"op":"hello","heartbeatMs":\#(ms),"id":1}"#, #"{"op":"listen","path":"hb/a","heartbeatMs":\#(ms),"id":1}"#] {
            let r = try c.request(line)
            #expect(r.errorCode == "INVALID_ARGUMENT", "\(r)")
            #expect(r.errorMessage?.contains("0 (no heartbeats) or an integer from 100 to 3600000") == true, "\(r)")
            #expect(r.errorMessage?.contains("got \(ms)") == true, "\(r)")
            let line = try { try c.send(#"{"op":"ping","id":2}"#); return try c.readLine() }()
            #expect(line.hasPrefix(#"{"id":2,"ok":true"#), "\(line)")
        }
    }

    @Test func heartbeatBoundsAreAccepted() throws {
        #expect(try c.request(#"{"op":"hello","heartbeatMs":3600000}"#).isOK)
        #expect(try c.request(#"{"op":"hello","heartbeatMs":0}"#).isOK)
    }
}
