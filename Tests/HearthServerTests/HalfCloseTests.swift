import Foundation
import HearthTesting
import Testing

/// A client that sends its requests and then shuts down its side (`printf … | nc -N`, a script closing its
/// write end) gets every answer, in order, and then the close: writes answered once durable, reads run on
/// reader threads, lines parked behind a write. Before, the close came at the FIN and dropped the answers
/// still awaited (the writes were committed; their acknowledgements were lost).
@Suite struct HalfCloseTests {
    @Test func aClientThatFinishesSendingGetsEveryAnswerThenTheClose() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        let lines = [
            #"{"op":"set","id":1,"path":"notes/a","data":{"n":1}}"#,
            #"{"op":"commit","id":2,"writes":[{"op":"update","path":"notes/a","data":{"n":{"$increment":1}}},{"op":"create","path":"notes/b","data":{"n":5}}]}"#,
            #"{"op":"query","id":3,"collection":"notes","orderBy":[["n","desc"]]}"#,
            #"{"op":"get","id":4,"path":"notes/a"}"#,
            #"{"op":"create","id":5,"path":"notes/b","data":{}}"#,
            #"{"op":"ping","id":6}"#,
        ]
        try c.sendRaw(Array(lines.map { $0 + "\n" }.joined().utf8))
        c.shutdownWrite()
        var answers: [[String: Any]] = []
        for _ in lines { answers.append(try c.readObject()) }
        #expect(answers.map { $0["id"] as? Int } == [1, 2, 3, 4, 5, 6])
        #expect(answers[0].isOK && answers[1].isOK && answers[3].isOK && answers[5].isOK, "\(answers)")
        #expect((answers[2]["docs"] as? [[String: Any]])?.map { $0["id"] as? String } == ["b", "a"], "\(answers[2])")
        #expect(((answers[3]["doc"] as? [String: Any])?["data"] as? [String: Any])?["n"] as? Int == 2)
        #expect(answers[4].errorCode == "ALREADY_EXISTS", "\(answers[4])")
        #expect(c.isClosedByPeer(), "the daemon closes once everything is answered")
        // Nothing else was affected.
        #expect(try daemon.connect().request(#"{"op":"get","path":"notes/b"}"#)["doc"] is [String: Any])
    }

    /// Writes and pings only: nothing parks the reading, so the FIN is read while the writes are still being
    /// made durable.
    @Test func writesStillBeingCommittedAtTheFinAreAnswered() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        let lines = (1...20).map { #"{"op":"set","id":\#($0),"path":"notes/n\#($0)","data":{"n":\#($0)}}"# } + [#"{"op":"ping","id":21}"#]
        try c.sendRaw(Array(lines.map { $0 + "\n" }.joined().utf8))
        c.shutdownWrite()
        var ids: [Int] = []
        for _ in lines {
            let answer = try c.readObject()
            #expect(answer.isOK, "\(answer)")
            ids.append(answer["id"] as? Int ?? -1)
        }
        #expect(ids == Array(1...21))
        #expect(c.isClosedByPeer())
    }

    /// A lone read on a reader thread leaves the connection reading, so the FIN may be read while the read
    /// runs: its answer still comes, then the close.
    @Test func aReadRunningAtTheFinIsAnswered() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        let writes = (0..<300).map { #"{"op":"set","path":"notes/n\#($0)","data":{"n":\#($0)}}"# }
        #expect(try c.request(#"{"op":"commit","writes":["# + writes.joined(separator: ",") + "]}").isOK)
        for round in 0..<20 {
            let r = try daemon.connect()
            try r.sendRaw(Array((round % 2 == 0 ? #"{"op":"count","collection":"notes","id":7}"# : #"{"op":"query","collection":"notes","id":7}"#).utf8) + [10])
            r.shutdownWrite()
            let answer = try r.readObject()
            #expect(answer.isOK && answer["id"] as? Int == 7, "\(answer)")
            #expect(round % 2 == 1 || answer["count"] as? Int == 300, "\(answer)")
            #expect(round % 2 == 0 || (answer["docs"] as? [Any])?.count == 300, "round \(round)")
            #expect(r.isClosedByPeer())
        }
    }

    /// With nothing awaited, the FIN closes the connection at once (after what was already sent), as before.
    @Test func aClientThatFinishesWithNothingPendingIsClosed() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
        c.shutdownWrite()
        #expect(c.isClosedByPeer())
    }
}
