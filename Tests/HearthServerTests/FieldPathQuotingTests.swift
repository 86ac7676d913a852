import Foundation
import HearthTesting
import Testing

/// Field paths (update keys, mergeFields, query fields, orderBy, select, aggregations, index fields) may
/// contain Firestore's reserved characters `~ * / [ ]` only inside backticks; `set` data keys are literal
/// names, not field paths, and take any of them.
@Suite(.serialized) final class FieldPathQuotingTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    static let refused: [(line: String, path: String)] = [
        (#"{"op":"update","path":"fp/a","data":{"a~b":1}}"#, "a~b"),
        (#"{"op":"update","path":"fp/a","data":{"x.y/z":1}}"#, "x.y/z"),
        (#"{"op":"set","path":"fp/a","merge":false,"mergeFields":["a*"],"data":{"a*":1}}"#, "a*"),
        (#"{"op":"commit","writes":[{"op":"update","path":"fp/a","data":{"tags[0]":1}}]}"#, "tags[0]"),
        (#"{"op":"query","collection":"fp","where":[["a/b","==",1]]}"#, "a/b"),
        (#"{"op":"query","collection":"fp","orderBy":["x]"]}"#, "x]"),
        (#"{"op":"query","collection":"fp","select":["*"]}"#, "*"),
        (#"{"op":"aggregate","query":{"collection":"fp"},"aggregations":{"s":{"sum":"n~"}}}"#, "n~"),
        (#"{"op":"index","action":"create","collection":"fp","fields":[["a","asc"],["b/c","desc"]]}"#, "b/c"),
    ]

    @Test(arguments: refused.indices)
    func unquotedReservedCharactersAreRefused(_ i: Int) throws {
        _ = try c.request(#"{"op":"set","path":"fp/a","data":{"v":1}}"#)
        let (line, path) = Self.refused[i]
        let r = try c.request(line)
        #expect(r.errorCode == "INVALID_ARGUMENT", "\(r)")
        #expect(r.errorMessage?.contains(#"field path "\#(path)""#) == true, "\(r)")
        #expect(r.errorMessage?.contains("backticks") == true, "\(r)")
        let doc = try c.request(#"{"op":"get","path":"fp/a"}"#)["doc"] as? [String: Any]
        #expect(doc?["data"] as? [String: Int] == ["v": 1], "nothing was written")
    }

    @Test func quotedTheyAreFieldNames() throws {
        #expect(try c.request(#"{"op":"set","path":"fp/q","data":{"v":1}}"#).isOK)
        let u = try c.request(#"{"op":"update","path":"fp/q","data":{"`a~b`":1,"m.`x/y`":2}}"#)
        #expect(u.isOK, "\(u)")
        let doc = try c.request(#"{"op":"get","path":"fp/q"}"#)["doc"] as? [String: Any]
        let data = doc?["data"] as? [String: Any]
        #expect(data?["a~b"] as? Int == 1)
        #expect((data?["m"] as? [String: Any])?["x/y"] as? Int == 2)
        let q = try c.request(#"{"op":"query","collection":"fp","where":[["`a~b`","==",1]],"select":["`m`.`x/y`"]}"#)
        #expect((q["docs"] as? [[String: Any]])?.count == 1, "\(q)")
    }

    @Test func setKeysAreLiteral() throws {
        let s = try c.request(#"{"op":"set","path":"fp/s","data":{"a~b":1,"c/d":{"[e]":2},"*":3}}"#)
        #expect(s.isOK, "\(s)")
        let m = try c.request(#"{"op":"set","path":"fp/s","merge":true,"data":{"x]":4}}"#)
        #expect(m.isOK, "\(m)")
        let doc = try c.request(#"{"op":"get","path":"fp/s"}"#)["doc"] as? [String: Any]
        let data = doc?["data"] as? [String: Any]
        #expect(data?["a~b"] as? Int == 1)
        #expect((data?["c/d"] as? [String: Any])?["[e]"] as? Int == 2)
        #expect(data?["*"] as? Int == 3)
        #expect(data?["x]"] as? Int == 4)
    }
}
