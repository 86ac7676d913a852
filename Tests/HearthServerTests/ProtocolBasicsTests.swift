import Foundation
import HearthTesting
import Testing

/// The real hearthd over TCP: framing, ids, help/ping, and the document ops.
@Suite(.serialized) final class ProtocolBasicsTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    @Test func pingAndHelp() throws {
        let pong = try c.request(#"{"op":"ping","id":1}"#)
        #expect(pong.isOK)
        #expect(pong["id"] as? Int == 1)
        let help = try c.request(#"{"op":"help","id":"h"}"#)
        #expect(help["id"] as? String == "h")
        let ops = (help["ops"] as? [[String: Any]])?.compactMap { $0["op"] as? String } ?? []
        for op in ["get", "getAll", "create", "set", "update", "delete", "add", "commit", "ping", "help"] {
            #expect(ops.contains(op), "help lists \(op)")
        }
    }

    @Test func idIsEchoedAndOmittedWhenAbsent() throws {
        let r = try c.request(#"{"op":"ping"}"#)
        #expect(r["id"] == nil)
        let line = try { try c.send(#"{"op":"ping","id":"x\"y"}"#); return try c.readLine() }()
        #expect(line.hasPrefix(#"{"id":"x\"y","ok":true"#))
    }

    @Test func crlfAndBlankLinesAreAccepted() throws {
        try c.sendRaw(Array("\r\n\n   \n{\"op\":\"ping\",\"id\":2}\r\n".utf8))
        let r = try c.readObject()
        #expect(r["id"] as? Int == 2)
    }

    @Test func setGetRoundTripsEveryValueForm() throws {
        let data = #"{"n":null,"b":true,"i":42,"big":9223372036854775807,"d":3.5,"whole":{"$double":3},"nan":{"$double":"NaN"},"inf":{"$double":"-Infinity"},"s":"héllo\n\"q\"","t":{"$timestamp":"2026-11-29T12:00:00.123456789Z"},"by":{"$bytes":"AAEC/w=="},"r":{"$ref":"customers/c1"},"g":{"$geopoint":[48.85,2.35]},"a":[1,"x",{"k":[2]}],"m":{"z":1,"a":{"b":2}}}"#
        let w = try c.request(#"{"op":"set","id":1,"path":"things/t1","data":\#(data)}"#)
        #expect(w.isOK, "\(w)")
        #expect(w["path"] as? String == "things/t1")
        #expect(w["docId"] as? String == "things/t1".split(separator: "/").last.map(String.init))
        #expect((w["seq"] as? Int ?? 0) > 0)
        try c.send(#"{"op":"get","path":"things/t1"}"#)
        let line = try c.readLine()
        // Typed values come back in the same forms; timestamps to the microsecond; keys sorted.
        #expect(line.contains(#""t":{"$timestamp":"2026-11-29T12:00:00.123456Z"}"#), "\(line)")
        #expect(line.contains(#""whole":{"$double":3.0}"#) || line.contains(#""whole":3.0"#), "\(line)")
        #expect(line.contains(#""nan":{"$double":"NaN"}"#))
        #expect(line.contains(#""inf":{"$double":"-Infinity"}"#))
        #expect(line.contains(#""by":{"$bytes":"AAEC/w=="}"#))
        #expect(line.contains(#""r":{"$ref":"customers/c1"}"#))
        #expect(line.contains(#""g":{"$geopoint":[48.85,2.35]}"#))
        #expect(line.contains(#""big":9223372036854775807"#))
        let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        let doc = obj["doc"] as! [String: Any]
        #expect(doc["path"] as? String == "things/t1")
        #expect(doc["id"] as? String == "t1")
        #expect(doc["createTime"] as? String != nil)
        #expect(doc["updateTime"] as? String == w["updateTime"] as? String)
        let d = doc["data"] as! [String: Any]
        #expect(d["s"] as? String == "héllo\n\"q\"")
        #expect(d["i"] as? Int == 42)
        #expect((d["m"] as? [String: Any])?["a"] != nil)
    }

    @Test func getMissingIsNullAndGetAllKeepsOrder() throws {
        _ = try c.request(#"{"op":"set","path":"g/a","data":{"v":1}}"#)
        _ = try c.request(#"{"op":"set","path":"g/c","data":{"v":3}}"#)
        let r = try c.request(#"{"op":"get","path":"g/missing"}"#)
        #expect(r.isOK)
        #expect(r["doc"] is NSNull)
        let all = try c.request(#"{"op":"getAll","paths":["g/c","g/missing","g/a"]}"#)
        let docs = all["docs"] as! [Any]
        #expect(docs.count == 3)
        #expect((docs[0] as? [String: Any])?["id"] as? String == "c")
        #expect(docs[1] is NSNull)
        #expect((docs[2] as? [String: Any])?["id"] as? String == "a")
    }

    @Test func createUpdateDeleteSemantics() throws {
        #expect(try c.request(#"{"op":"create","path":"u/1","data":{"a":1}}"#).isOK)
        let again = try c.request(#"{"op":"create","path":"u/1","data":{"a":2}}"#)
        #expect(again.errorCode == "ALREADY_EXISTS")
        let missing = try c.request(#"{"op":"update","path":"u/2","data":{"a":1}}"#)
        #expect(missing.errorCode == "NOT_FOUND")
        #expect(try c.request(#"{"op":"delete","path":"u/2"}"#).isOK)
        #expect(try c.request(#"{"op":"update","path":"u/1","data":{"b.c":2,"`x.y`":3}}"#).isOK)
        let doc = try c.request(#"{"op":"get","path":"u/1"}"#)["doc"] as! [String: Any]
        let data = doc["data"] as! [String: Any]
        #expect((data["b"] as? [String: Any])?["c"] as? Int == 2)
        #expect(data["x.y"] as? Int == 3)
        #expect(data["a"] as? Int == 1)
        #expect(try c.request(#"{"op":"delete","path":"u/1"}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"u/1"}"#)["doc"] is NSNull)
    }

    @Test func setMergeAndMergeFields() throws {
        _ = try c.request(#"{"op":"set","path":"m/1","data":{"a":1,"n":{"x":1,"y":2}}}"#)
        _ = try c.request(#"{"op":"set","path":"m/1","merge":true,"data":{"n":{"y":20,"z":30},"gone":{"$delete":true}}}"#)
        var data = (try c.request(#"{"op":"get","path":"m/1"}"#)["doc"] as! [String: Any])["data"] as! [String: Any]
        #expect(data["a"] as? Int == 1)
        #expect(data["n"] as? [String: Int] == ["x": 1, "y": 20, "z": 30])
        _ = try c.request(#"{"op":"set","path":"m/1","mergeFields":["a"],"data":{"a":2,"n":{"ignored":true}}}"#)
        data = (try c.request(#"{"op":"get","path":"m/1"}"#)["doc"] as! [String: Any])["data"] as! [String: Any]
        #expect(data["a"] as? Int == 2)
        #expect((data["n"] as? [String: Any])?["ignored"] == nil)
    }

    @Test func transformsAndDocumentId() throws {
        let add = try c.request(#"{"op":"add","collection":"departments","data":{"departmentId":{"$documentId":true},"createdAt":{"$serverTimestamp":true},"memberCount":{"$increment":1}}}"#)
        #expect(add.isOK, "\(add)")
        let path = add["path"] as! String
        let id = add["docId"] as! String
        #expect(id.count == 20)
        #expect(id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(path == "departments/\(id)")
        let doc = try c.request(#"{"op":"get","path":"\#(path)"}"#)["doc"] as! [String: Any]
        let data = doc["data"] as! [String: Any]
        #expect(data["departmentId"] as? String == id)
        #expect(data["memberCount"] as? Int == 1)
        #expect((data["createdAt"] as? [String: Any])?["$timestamp"] as? String == doc["createTime"] as? String)
        let u = try c.request(#"{"op":"update","path":"\#(path)","data":{"memberCount":{"$increment":2},"tags":{"$arrayUnion":["a","b","a"]},"hi":{"$maximum":5}}}"#)
        #expect(u["transformResults"] as? [Any] != nil)
        let d2 = (try c.request(#"{"op":"get","path":"\#(path)"}"#)["doc"] as! [String: Any])["data"] as! [String: Any]
        #expect(d2["memberCount"] as? Int == 3)
        #expect(d2["tags"] as? [String] == ["a", "b"])
        #expect(d2["hi"] as? Int == 5)
    }

    @Test func updateTimeAdvancesOnlyOnRealChange() throws {
        let a = try c.request(#"{"op":"set","path":"ut/1","data":{"v":1}}"#)
        let b = try c.request(#"{"op":"set","path":"ut/1","data":{"v":1}}"#)
        #expect(a["updateTime"] as? String == b["updateTime"] as? String)
        #expect((b["seq"] as! Int) > (a["seq"] as! Int))
        let c2 = try c.request(#"{"op":"set","path":"ut/1","data":{"v":2}}"#)
        #expect(a["updateTime"] as? String != c2["updateTime"] as? String)
    }

    @Test func preconditions() throws {
        let w = try c.request(#"{"op":"set","path":"p/1","data":{"v":1}}"#)
        let t = w["updateTime"] as! String
        let stale = try c.request(#"{"op":"set","path":"p/1","data":{"v":2},"precondition":{"updateTime":"2001-01-01T00:00:00Z"}}"#)
        #expect(stale.errorCode == "FAILED_PRECONDITION")
        #expect(try c.request(#"{"op":"set","path":"p/1","data":{"v":2},"precondition":{"updateTime":"\#(t)"}}"#).isOK)
        #expect(try c.request(#"{"op":"delete","path":"p/9","precondition":{"exists":true}}"#).errorCode == "NOT_FOUND")
        #expect(try c.request(#"{"op":"set","path":"p/1","data":{},"precondition":{"exists":false}}"#).errorCode == "ALREADY_EXISTS")
    }

    @Test func commitIsAtomicAndNamesTheFailingWrite() throws {
        _ = try c.request(#"{"op":"set","path":"k/taken","data":{}}"#)
        let bad = try c.request(#"{"op":"commit","id":5,"writes":[{"op":"set","path":"k/new","data":{"v":1}},{"op":"create","path":"k/taken","data":{}}]}"#)
        #expect(bad.errorCode == "ALREADY_EXISTS")
        #expect(bad.errorMessage?.contains("writes[1]") == true)
        #expect(try c.request(#"{"op":"get","path":"k/new"}"#)["doc"] is NSNull)
        let single = try c.request(#"{"op":"commit","writes":[{"op":"create","path":"k/taken","data":{}}]}"#)
        #expect(single.errorMessage?.hasPrefix("commit: writes[0]: ") == true, "\(single)")
        let ok = try c.request(#"{"op":"commit","writes":[{"op":"set","path":"k/a","data":{"v":1}},{"op":"update","path":"k/taken","data":{"v":{"$increment":1}}},{"op":"verify","path":"k/a","precondition":{"exists":true}},{"op":"delete","path":"k/zzz"}]}"#)
        #expect(ok.isOK, "\(ok)")
        let results = ok["results"] as! [[String: Any]]
        #expect(results.count == 4)
        #expect(results[0]["path"] as? String == "k/a")
        #expect(ok["seq"] as? Int != nil)
    }

    /// Requests pipelined without reading, each answer larger than `--output-high-water`: the lines wait behind
    /// the unread output, and every answer still arrives, in order, as the client reads. This checks that the
    /// real socket's drains run the waiting lines to the last one (that the output stays bounded meanwhile is
    /// `PipelinedOrderingTests.pipelinedLinesWaitWhileTheOutputIsBacklogged`).
    @Test func pipelinedReadsBehindUnreadOutputAllArriveInOrder() throws {
        let d = try DaemonProcess(extraArgs: ["--output-high-water", "65536"])
        let c = try d.connect()
        let big = String(repeating: "y", count: 50_000)
        #expect(try c.request(#"{"op":"set","path":"big/a","data":{"s":"\#(big)"}}"#).isOK)
        let n = 150
        try c.sendRaw(Array(((1...n).map { #"{"op":"get","path":"big/a","id":\#($0)}"# + "\n" }.joined()
                             + #"{"op":"query","collection":"big","id":"q"}"# + "\n").utf8))
        for i in 1...n {
            let r = try c.readObject()
            #expect(r["id"] as? Int == i && r.isOK, "\(r["id"] ?? "?")")
        }
        let q = try c.readObject()
        #expect(q["id"] as? String == "q" && (q["docs"] as? [Any])?.count == 1)
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }

    /// A ping or hello pipelined behind a write reports a seq no older than the write's: what a meta op
    /// reports is never older than an answer before it (a ping is the barrier clients and tests use).
    @Test func pipelinedPingAndHelloReportTheirConnectionsWrites() throws {
        var lines = ""
        for i in 0..<200 {
            lines += #"{"op":"set","id":\#(i * 3),"path":"pipe/p\#(i % 7)","data":{"i":\#(i)}}"# + "\n"
            lines += #"{"op":"ping","id":\#(i * 3 + 1)}"# + "\n"
            lines += #"{"op":"hello","id":\#(i * 3 + 2)}"# + "\n"
        }
        try c.sendRaw(Array(lines.utf8))
        var written = 0
        for i in 0..<600 {
            let r = try c.readObject()
            #expect(r["id"] as? Int == i && r.isOK, "\(r)")
            let seq = r["seq"] as? Int ?? -1
            if i % 3 == 0 { written = seq } else { #expect(seq >= written, "answer \(i) reports seq \(seq) after a write at \(written)") }
        }
    }

    @Test func pipelinedRequestsAnswerInOrderAndReadTheirWrites() throws {
        var lines = ""
        for i in 0..<500 {
            lines += #"{"op":"set","id":\#(i * 2),"path":"pipe/d","data":{"i":\#(i)}}"# + "\n"
            lines += #"{"op":"get","id":\#(i * 2 + 1),"path":"pipe/d"}"# + "\n"
        }
        try c.sendRaw(Array(lines.utf8))
        for i in 0..<1000 {
            let r = try c.readObject()
            #expect(r["id"] as? Int == i)
            if i % 2 == 1 {
                let v = ((r["doc"] as? [String: Any])?["data"] as? [String: Any])?["i"] as? Int
                #expect(v == i / 2, "get \(i) sees its preceding set")
            }
        }
    }
}
