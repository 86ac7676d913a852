import Foundation
import HearthTesting
import Testing

/// Every malformed line gets an error with a code and a message naming what was wrong, and the connection,
/// other clients and stored data carry on.
@Suite(.serialized) final class BadInputTests {
    let daemon: DaemonProcess

    init() throws {
        daemon = try DaemonProcess(extraArgs: ["--max-line-bytes", "4096"])
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let line: String
        let code: String
        let mentions: String
        var testDescription: String { line }
    }

    static let corpus: [Bad] = [
        Bad(line: #"{"op":"ping""#, code: "INVALID_ARGUMENT", mentions: "byte"),
        Bad(line: #"{"op":"ping"} trailing"#, code: "INVALID_ARGUMENT", mentions: "byte"),
        Bad(line: #"{"op":"get","path":"a/b",}"#, code: "INVALID_ARGUMENT", mentions: "byte"),
        Bad(line: "not json at all", code: "INVALID_ARGUMENT", mentions: "byte"),
        Bad(line: #"[1,2,3]"#, code: "INVALID_ARGUMENT", mentions: "object"),
        Bad(line: #""just a string""#, code: "INVALID_ARGUMENT", mentions: "object"),
        Bad(line: #"{"id":1}"#, code: "INVALID_ARGUMENT", mentions: "op"),
        Bad(line: #"{"op":42}"#, code: "INVALID_ARGUMENT", mentions: "op"),
        Bad(line: #"{"op":"frobnicate"}"#, code: "INVALID_ARGUMENT", mentions: "frobnicate"),
        Bad(line: #"{"op":"ping","id":{"x":1}}"#, code: "INVALID_ARGUMENT", mentions: "id"),
        Bad(line: #"{"op":"get"}"#, code: "INVALID_ARGUMENT", mentions: "path"),
        Bad(line: #"{"op":"get","path":7}"#, code: "INVALID_ARGUMENT", mentions: "path"),
        Bad(line: #"{"op":"get","path":"onlycollection"}"#, code: "INVALID_ARGUMENT", mentions: "onlycollection"),
        Bad(line: #"{"op":"get","path":"a//b"}"#, code: "INVALID_ARGUMENT", mentions: "a//b"),
        Bad(line: #"{"op":"get","path":"a/__x__"}"#, code: "INVALID_ARGUMENT", mentions: "reserved"),
        Bad(line: #"{"op":"get","path":"a/.."}"#, code: "INVALID_ARGUMENT", mentions: ".."),
        Bad(line: #"{"op":"get","path":"a/b","extra":1}"#, code: "INVALID_ARGUMENT", mentions: "extra"),
        // Keys are compared by their bytes after unescaping: one short of, one longer than, or one byte off
        // an accepted key is unknown (an escaped spelling of "path" is "path").
        Bad(line: #"{"op":"get","pat":"a/b"}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field "pat""#),
        Bad(line: #"{"op":"get","path":"a/b","paths":["a/b"]}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field "paths""#),
        Bad(line: #"{"op":"get","path":"a/b","":1}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field """#),
        Bad(line: #"{"op":"get","p\u00e2th":"a/b"}"#, code: "INVALID_ARGUMENT", mentions: "pâth"),
        Bad(line: #"{"op":"get","p\u0061th":"a/"}"#, code: "INVALID_ARGUMENT", mentions: "a/"),
        Bad(line: #"{"op":"get","path":"a/b","ID":1}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field "ID""#),
        Bad(line: #"{"op":"get","path":"a/b","ops":"get"}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field "ops""#),
        Bad(line: #"{"op":"get","path":"a/b","requestId":"r1"}"#, code: "INVALID_ARGUMENT", mentions: #"unknown field "requestId""#),
        Bad(line: #"{"op":"set","path":"a/","requestId":"r1","data":{}}"#, code: "INVALID_ARGUMENT", mentions: "a/"),
        // Keys are bytes: "admin\u212Aey" (a Kelvin sign, canonically equivalent to K) is not "adminKey".
        Bad(line: #"{"op":"hello","admin\u212Aey":"k"}"#, code: "INVALID_ARGUMENT", mentions: "unknown field"),
        Bad(line: #"{"op":"set","path":"a/b"}"#, code: "INVALID_ARGUMENT", mentions: "data"),
        Bad(line: #"{"op":"set","path":"a/b","data":[1]}"#, code: "INVALID_ARGUMENT", mentions: "data"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"__k__":1}}"#, code: "INVALID_ARGUMENT", mentions: "__k__"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"":1}}"#, code: "INVALID_ARGUMENT", mentions: "empty"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":[[1]]}}"#, code: "INVALID_ARGUMENT", mentions: "array"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$delete":true}}}"#, code: "INVALID_ARGUMENT", mentions: "$delete"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":[{"$serverTimestamp":true}]}}"#, code: "INVALID_ARGUMENT", mentions: "array"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$increment":"x"}}}"#, code: "INVALID_ARGUMENT", mentions: "$increment"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$timestamp":"yesterday"}}}"#, code: "INVALID_ARGUMENT", mentions: "timestamp"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$bytes":"!!"}}}"#, code: "INVALID_ARGUMENT", mentions: "base64"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$ref":"odd"}}}"#, code: "INVALID_ARGUMENT", mentions: "odd"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$geopoint":[91,0]}}}"#, code: "INVALID_ARGUMENT", mentions: "geopoint"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":{"$unknown":1}}}"#, code: "INVALID_ARGUMENT", mentions: "$unknown"),
        Bad(line: #"{"op":"set","path":"a/b","data":{"a":1,"a":2}}"#, code: "INVALID_ARGUMENT", mentions: "duplicate"),
        Bad(line: #"{"op":"set","path":"a/b","merge":"yes","data":{}}"#, code: "INVALID_ARGUMENT", mentions: "merge"),
        Bad(line: #"{"op":"set","path":"a/b","mergeFields":["x"],"data":{}}"#, code: "INVALID_ARGUMENT", mentions: "x"),
        Bad(line: #"{"op":"update","path":"a/b","data":{}}"#, code: "INVALID_ARGUMENT", mentions: "data"),
        Bad(line: #"{"op":"update","path":"a/b","data":{"a":1,"a.b":2}}"#, code: "INVALID_ARGUMENT", mentions: "a.b"),
        Bad(line: #"{"op":"update","path":"a/b","data":{"a..b":1}}"#, code: "INVALID_ARGUMENT", mentions: "a..b"),
        Bad(line: #"{"op":"set","path":"a/b","data":{},"precondition":{"exists":"maybe"}}"#, code: "INVALID_ARGUMENT", mentions: "exists"),
        Bad(line: #"{"op":"set","path":"a/b","data":{},"precondition":{"updateTime":"noon"}}"#, code: "INVALID_ARGUMENT", mentions: "updateTime"),
        Bad(line: #"{"op":"commit","writes":[]}"#, code: "INVALID_ARGUMENT", mentions: "writes"),
        Bad(line: #"{"op":"commit","writes":[{"op":"launch","path":"a/b"}]}"#, code: "INVALID_ARGUMENT", mentions: "writes[0]"),
        Bad(line: #"{"op":"commit","writes":[{"op":"set","path":"a/b","data":{}},{"op":"set","path":"bad"}]}"#, code: "INVALID_ARGUMENT", mentions: "writes[1]"),
        Bad(line: #"{"op":"add","collection":"a/b","data":{}}"#, code: "INVALID_ARGUMENT", mentions: "collection"),
        Bad(line: #"{"op":"getAll","paths":["a/b",3]}"#, code: "INVALID_ARGUMENT", mentions: "paths[1]"),
    ]

    @Test(arguments: corpus)
    func badLineGetsAnErrorAndTheConnectionCarriesOn(_ bad: Bad) throws {
        let c = try daemon.connect()
        let r = try c.request(bad.line)
        #expect(r["ok"] as? Bool == false)
        #expect(r.errorCode == bad.code, "\(r)")
        #expect(r.errorMessage?.contains(bad.mentions) == true, "message \(r.errorMessage ?? "nil") names \(bad.mentions)")
        #expect(try c.request(#"{"op":"ping","id":"after"}"#)["id"] as? String == "after")
    }

    @Test func invalidUTF8() throws {
        let c = try daemon.connect()
        try c.sendRaw(Array(#"{"op":"get","path":"a/"#.utf8) + [0xC3, 0x28] + Array("\"}\n".utf8))
        let r = try c.readObject()
        #expect(r.errorCode == "INVALID_ARGUMENT")
        #expect(r.errorMessage?.contains("UTF-8") == true, "\(r)")
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
    }

    @Test func tooLongLineIsDiscardedUpToTheNextNewline() throws {
        let c = try daemon.connect()
        let long = #"{"op":"set","path":"a/b","data":{"s":""# + String(repeating: "x", count: 10_000) + "\"}}\n"
        try c.sendRaw(Array(long.utf8) + Array("{\"op\":\"ping\",\"id\":9}\n".utf8))
        let r = try c.readObject()
        #expect(r.errorCode == "RESOURCE_EXHAUSTED")
        #expect(r.errorMessage?.contains("4096") == true)
        #expect(try c.readObject()["id"] as? Int == 9)
        #expect(try c.request(#"{"op":"get","path":"a/b"}"#)["doc"] is NSNull)
    }

    @Test func garbageOnOneConnectionDoesNotDisturbAnother() throws {
        let a = try daemon.connect()
        let b = try daemon.connect()
        #expect(try b.request(#"{"op":"set","path":"iso/1","data":{"v":1}}"#).isOK)
        try a.sendRaw((0..<20_000).map { _ in UInt8.random(in: 0...255) } + [10])
        for _ in 0..<3 { _ = try? a.readLine(timeout: 1) }
        #expect(try b.request(#"{"op":"get","path":"iso/1"}"#)["doc"] is [String: Any])
        #expect(try daemon.connect().request(#"{"op":"ping"}"#).isOK)
    }
}
