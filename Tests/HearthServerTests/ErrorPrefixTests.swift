import Foundation
import HearthTesting
import Testing

/// Every error about a request whose op is known starts with `op: `, exactly once: the dispatcher adds it,
/// and no helper, decoder or handler adds another (before, `{"op":"get"}` was answered
/// `get: field "path": get: field "path" is required`).
@Suite(.serialized) final class ErrorPrefixTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
        #expect(try c.request(#"{"op":"set","path":"pre/taken","data":{"v":1}}"#).isOK)
    }

    static let lines: [String] = [
        #"{"op":"ping","x":1}"#,
        #"{"op":"help","x":1}"#,
        #"{"op":"get"}"#,
        #"{"op":"get","path":7}"#,
        #"{"op":"get","path":"onlycollection"}"#,
        #"{"op":"get","path":"a/b","extra":1}"#,
        #"{"op":"getAll"}"#,
        #"{"op":"getAll","paths":"a/b"}"#,
        #"{"op":"getAll","paths":["a/b",3]}"#,
        #"{"op":"getAll","paths":["a"]}"#,
        #"{"op":"create","path":"pre/x"}"#,
        #"{"op":"create","path":"pre","data":{}}"#,
        #"{"op":"create","path":"pre/taken","data":{}}"#,
        #"{"op":"set"}"#,
        #"{"op":"set","path":"a/b","merge":"yes","data":{}}"#,
        #"{"op":"set","path":"a/b","mergeFields":["a/b"],"data":{}}"#,
        #"{"op":"set","path":"a/b","data":{"a":{"$delete":true}}}"#,
        #"{"op":"set","path":"a/b","data":{},"precondition":{"exists":"maybe"}}"#,
        #"{"op":"update","path":"a/b","data":{}}"#,
        #"{"op":"update","path":"a/b","data":{"a..b":1}}"#,
        #"{"op":"update","path":"pre/missing","data":{"v":1}}"#,
        #"{"op":"delete"}"#,
        #"{"op":"delete","path":"a/b","data":{}}"#,
        #"{"op":"add","data":{}}"#,
        #"{"op":"add","collection":"a/b","data":{}}"#,
        #"{"op":"add","collection":"a","data":[1]}"#,
        #"{"op":"add","collection":"a","data":{"__x__":1}}"#,
        #"{"op":"commit"}"#,
        #"{"op":"commit","writes":[]}"#,
        #"{"op":"commit","writes":[1]}"#,
        #"{"op":"commit","writes":[{"op":"launch","path":"a/b"}]}"#,
        #"{"op":"commit","writes":[{"op":"set","path":"bad","data":{}}]}"#,
        #"{"op":"commit","writes":[{"op":"set","path":"a/b"}]}"#,
        #"{"op":"commit","writes":[{"op":"set","path":"a/b","data":{},"x":1}]}"#,
        #"{"op":"commit","writes":[{"op":"create","path":"pre/taken","data":{}}]}"#,
        #"{"op":"query"}"#,
        #"{"op":"query","collection":"a/b"}"#,
        #"{"op":"query","collection":"c","where":["v","~",1]}"#,
        #"{"op":"query","collection":"c","orderBy":[["v","up"]]}"#,
        #"{"op":"query","collection":"c","limit":-1}"#,
        #"{"op":"count","collection":"c","offset":"x"}"#,
        #"{"op":"count"}"#,
        #"{"op":"explain","collection":"c","select":"v"}"#,
        #"{"op":"aggregate","aggregations":{"n":{"count":{}}}}"#,
        #"{"op":"aggregate","query":{"collection":"c"}}"#,
        #"{"op":"aggregate","query":{"collection":"c"},"aggregations":{"n":{"median":"v"}}}"#,
        #"{"op":"aggregate","query":{"collection":"c","limit":"x"},"aggregations":{"n":{"count":{}}}}"#,
        #"{"op":"index"}"#,
        #"{"op":"index","action":"rebuild"}"#,
        #"{"op":"index","action":"drop"}"#,
        #"{"op":"index","action":"create","collection":"c","fields":[["a","up"]]}"#,
        #"{"op":"index","action":"create","collection":"c","fields":[["a","asc"],["a","asc"]]}"#,
        #"{"op":"listen"}"#,
        #"{"op":"listen","path":"a"}"#,
        #"{"op":"listen","path":7}"#,
        #"{"op":"listen","query":{"collection":"a/b"}}"#,
        #"{"op":"listen","path":"a/b","history":"00"}"#,
        #"{"op":"listen","path":"a/b","heartbeatMs":1}"#,
        #"{"op":"unlisten"}"#,
        #"{"op":"unlisten","sub":"nope"}"#,
        #"{"op":"hello","heartbeatMs":"x"}"#,
    ]

    @Test(arguments: lines)
    func oneOpPrefixPerMessage(_ line: String) throws {
        let op = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["op"] as? String)
        let r = try c.request(line)
        let message = try #require(r.errorMessage, "\(r)")
        // `a: b: reason`: the prefixes are a and b.
        let prefixes = message.components(separatedBy: ": ").dropLast()
        #expect(prefixes.first == op, "\(message)")
        #expect(prefixes.filter { $0 == op }.count == 1, "\(op) repeated in \(message)")
        // Nor does any other prefix repeat (`field "path": ... field "path": ...`).
        #expect(Set(prefixes).count == prefixes.count, "a repeated prefix in \(message)")
    }

    /// Errors found before the op is known carry no op.
    @Test func errorsBeforeTheOpIsKnownHaveNoPrefix() throws {
        #expect(try c.request(#"{"op":"launch"}"#).errorMessage == #"unknown op "launch" (try {"op":"help"})"#)
        #expect(try c.request(#"{"id":1}"#).errorMessage?.hasPrefix(#"field "op" is required"#) == true)
        #expect(try c.request(#"{"op":"get""#).errorMessage?.hasPrefix("invalid JSON at byte") == true)
    }
}
