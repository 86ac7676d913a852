import Foundation
import HearthTesting
import Testing

/// A key repeated in any object of a request, at any depth, is refused with INVALID_ARGUMENT naming the key
/// and where it is; nothing is written, the request's id is echoed (unless `id` itself is repeated), and the
/// connection carries on.
@Suite(.serialized) final class DuplicateKeyTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let line: String
        let message: String
        var testDescription: String { line }
    }

    static let cases: [Case] = [
        // Top level: before, the first value won silently.
        Case(line: #"{"op":"get","op":"set","path":"dup/top","data":{"v":1},"id":1}"#, message: #"duplicate key "op""#),
        Case(line: #"{"op":"set","path":"dup/first","path":"dup/second","data":{"v":1},"id":1}"#, message: #"duplicate key "path""#),
        Case(line: #"{"op":"set","path":"dup/d","data":{"v":1},"data":{"v":2},"id":1}"#, message: #"duplicate key "data""#),
        Case(line: #"{"op":"set","path":"dup/m","merge":true,"merge":false,"data":{"v":1},"id":1}"#, message: #"duplicate key "merge""#),
        // Inside data (refused before too), now with where it is.
        Case(line: #"{"op":"set","path":"dup/n","data":{"a":{"x":1,"x":2}},"id":1}"#, message: #"duplicate key "x" in data.a"#),
        Case(line: #"{"op":"update","path":"dup/u","data":{"a":1,"a":2},"id":1}"#, message: #"duplicate key "a" in data"#),
        // Preconditions, write objects in a commit, queries, aggregations, listens, index definitions.
        Case(line: #"{"op":"set","path":"dup/p","data":{},"precondition":{"exists":true,"exists":false},"id":1}"#,
             message: #"duplicate key "exists" in precondition"#),
        Case(line: #"{"op":"commit","writes":[{"op":"set","path":"dup/c1","data":{}},{"op":"set","path":"dup/c2","path":"dup/c3","data":{}}],"id":1}"#,
             message: #"duplicate key "path" in writes[1]"#),
        Case(line: #"{"op":"commit","writes":[{"op":"delete","op":"set","path":"dup/c4","data":{}}],"id":1}"#,
             message: #"duplicate key "op" in writes[0]"#),
        Case(line: #"{"op":"query","collection":"dup","collection":"other","id":1}"#, message: #"duplicate key "collection""#),
        Case(line: #"{"op":"query","collection":"dup","where":{"and":[["v","==",1]],"and":[]},"id":1}"#,
             message: #"duplicate key "and" in where"#),
        Case(line: #"{"op":"aggregate","query":{"collection":"dup","limit":1,"limit":2},"aggregations":{"n":{"count":{}}},"id":1}"#,
             message: #"duplicate key "limit" in query"#),
        Case(line: #"{"op":"aggregate","query":{"collection":"dup"},"aggregations":{"n":{"count":{}},"n":{"sum":"v"}},"id":1}"#,
             message: #"duplicate key "n" in aggregations"#),
        Case(line: #"{"op":"listen","query":{"collection":"dup","collection":"x"},"id":1}"#, message: #"duplicate key "collection" in query"#),
        Case(line: #"{"op":"index","action":"create","collection":"dup","fields":[["a","asc"]],"fields":[["b","asc"]],"id":1}"#,
             message: #"duplicate key "fields""#),
        // Equal once unescaped.
        Case(line: #"{"op":"get","path":"dup/a","p\u0061th":"dup/b","id":1}"#, message: #"duplicate key "path""#),
        // Inside a value nested in an array.
        Case(line: #"{"op":"set","path":"dup/arr","data":{"a":[1,{"k":1,"k":2}]},"id":1}"#, message: #"duplicate key "k" in data.a[1]"#),
    ]

    @Test(arguments: cases)
    func refusedNamingTheKeyAndWhere(_ c0: Case) throws {
        let r = try c.request(c0.line)
        #expect(r.errorCode == "INVALID_ARGUMENT", "\(r)")
        #expect(r.errorMessage == c0.message, "\(r)")
        #expect(r["id"] as? Int == 1, "the id is echoed")
        #expect(try c.request(#"{"op":"ping","id":"after"}"#)["id"] as? String == "after")
    }

    @Test func nothingIsWritten() throws {
        for line in Self.cases.map(\.line) { _ = try c.request(line) }
        let paths = ["dup/top", "dup/first", "dup/second", "dup/d", "dup/m", "dup/n", "dup/u", "dup/p", "dup/c1", "dup/c2", "dup/c3", "dup/c4", "dup/arr"]
        let all = try c.call(["op": "getAll", "paths": paths])
        #expect((all["docs"] as? [Any])?.allSatisfy { $0 is NSNull } == true, "\(all)")
        #expect(try c.request(#"{"op":"query","collection":"dup"}"#)["docs"] as? [Any] != nil)
        #expect((try c.request(#"{"op":"index","action":"list"}"#)["indexes"] as? [Any])?.isEmpty == true)
    }

    @Test func aRepeatedIDIsNotEchoed() throws {
        let line = try { try c.send(#"{"op":"ping","id":1,"id":2}"#); return try c.readLine() }()
        #expect(line.hasPrefix(#"{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"duplicate key \"id\""}"#), "\(line)")
    }

    @Test func sameKeysInDifferentObjectsAreFine() throws {
        #expect(try c.request(#"{"op":"set","path":"dup/fine","data":{"path":1,"a":{"path":2,"a":[{"a":3}]}}}"#).isOK)
        let r = try c.request(#"{"op":"commit","writes":[{"op":"set","path":"dup/w1","data":{"op":1}},{"op":"set","path":"dup/w2","data":{"op":2}}]}"#)
        #expect(r.isOK, "\(r)")
    }
}
