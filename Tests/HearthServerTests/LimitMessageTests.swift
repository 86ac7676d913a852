import Foundation
import HearthTesting
import Testing

/// Every limit a request can exceed is refused with a message that states the limit's number, and the
/// connection carries on.
@Suite(.serialized) final class LimitMessageTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let line: String
        let code: String
        /// Every one of these appears in the message.
        let mentions: [String]
        var testDescription: String { String(line.prefix(120)) }
        init(_ line: String, _ mentions: String..., code: String = "INVALID_ARGUMENT") {
            self.line = line
            self.mentions = mentions
            self.code = code
        }
    }

    static func list(_ count: Int, _ element: String) -> String { Array(repeating: element, count: count).joined(separator: ",") }

    static let cases: [Case] = [
        Case(#"{"op":"query","collection":"c","limit":2147483648}"#, #"field "limit""#, "0 to 2147483647", "got 2147483648"),
        Case(#"{"op":"query","collection":"c","limit":-1}"#, #"field "limit""#, "0 to 2147483647", "got -1"),
        Case(#"{"op":"query","collection":"c","limit":1.5}"#, #"field "limit""#, "0 to 2147483647", "not a double"),
        Case(#"{"op":"query","collection":"c","limitToLast":2147483648,"orderBy":["v"]}"#, #"field "limitToLast""#, "0 to 2147483647"),
        Case(#"{"op":"count","collection":"c","offset":"9"}"#, #"field "offset""#, "0 to 2147483647", "not a string"),
        Case(#"{"op":"explain","collection":"c","offset":99999999999}"#, #"field "offset""#, "0 to 2147483647"),
        Case(#"{"op":"aggregate","query":{"collection":"c","limit":-5},"aggregations":{"n":{"count":{}}}}"#, "query", #"field "limit""#, "0 to 2147483647"),
        Case(#"{"op":"getAll","paths":["# + list(1001, #""c/d""#) + "]}", #"field "paths""#, "at most 1000", "got 1001"),
        Case(#"{"op":"commit","writes":["# + list(10_001, #"{"op":"delete","path":"c/d"}"#) + "]}", #"field "writes""#, "at most 10000", "got 10001"),
        Case(#"{"op":"aggregate","query":{"collection":"c"},"aggregations":{"a":{"count":{}},"b":{"count":{}},"c":{"count":{}},"d":{"count":{}},"e":{"count":{}},"f":{"count":{}}}}"#,
             "at most 5", "got 6"),
        Case(#"{"op":"hello","heartbeatMs":1}"#, #"field "heartbeatMs""#, "0 (no heartbeats)", "100 to 3600000", "got 1"),
        Case(#"{"op":"hello","heartbeatMs":99}"#, "100 to 3600000", "got 99"),
        Case(#"{"op":"hello","heartbeatMs":3600001}"#, "100 to 3600000", "got 3600001"),
        Case(#"{"op":"hello","heartbeatMs":-1}"#, "100 to 3600000", "got -1"),
        Case(#"{"op":"hello","heartbeatMs":"100"}"#, "100 to 3600000", "not a string"),
        Case(#"{"op":"listen","path":"c/d","heartbeatMs":50}"#, "100 to 3600000", "got 50"),
        Case(#"{"op":"listen","path":"c/d","resumeAfter":-1}"#, #"field "resumeAfter""#, "0 to 9223372036854775807", "got -1"),
        Case(#"{"op":"index","action":"drop","indexId":0}"#, #"field "indexId""#, "1 to 9223372036854775807", "got 0"),
        Case(#"{"op":"query","collection":"c","where":[["v","in",["# + list(31, "1") + "]]]}", "31 values", "at most 30"),
        Case(#"{"op":"query","collection":"c","where":[["v","not-in",["# + list(11, "1") + "]]]}", "11 values", "at most 10"),
        Case(#"{"op":"set","path":"c/d","data":{"s":""# + String(repeating: "x", count: 1_048_600) + #""}}"#, "limit is 1048576 bytes"),
        Case(#"{"op":"get","path":"c/"# + String(repeating: "i", count: 1501) + #""}"#, "at most 1500 bytes"),
        Case(#"{"op":"set","path":"c/d","data":"# + String(repeating: #"{"a":"#, count: 21) + "1" + String(repeating: "}", count: 21) + "}",
             "deeper than 20 levels"),
    ]

    @Test(arguments: cases)
    func refusedStatingTheLimit(_ bad: Case) throws {
        let r = try c.request(bad.line)
        #expect(r.errorCode == bad.code, "\(r)")
        for m in bad.mentions {
            #expect(r.errorMessage?.contains(m) == true, "message \(r.errorMessage ?? "nil") states \(m)")
        }
        #expect(try c.request(#"{"op":"ping","id":"after"}"#)["id"] as? String == "after")
    }

    @Test func limitsAtTheirBoundsAreAccepted() throws {
        #expect(try c.request(#"{"op":"query","collection":"c","limit":2147483647,"offset":2147483647}"#).isOK)
        #expect(try c.request(#"{"op":"getAll","paths":["# + Self.list(1000, #""c/d""#) + "]}").isOK)
        #expect(try c.request(#"{"op":"hello","heartbeatMs":3600000}"#).isOK)
        #expect(try c.request(#"{"op":"hello","heartbeatMs":0}"#).isOK)
    }
}
