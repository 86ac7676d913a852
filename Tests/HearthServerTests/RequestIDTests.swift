import Foundation
import HearthTesting
import Testing

/// A request's `id` may be a string, a number or null, and is echoed as the same JSON value on the success
/// and on the error response; any other type is refused.
@Suite(.serialized) final class RequestIDTests {
    let daemon: DaemonProcess
    let c: WireClient

    init() throws {
        daemon = try DaemonProcess()
        c = try daemon.connect()
    }

    /// The id as sent, and as the daemon writes it back.
    static let echoed: [(sent: String, echo: String)] = [
        ("null", "null"),
        ("0", "0"),
        ("-7", "-7"),
        ("9223372036854775807", "9223372036854775807"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),   // above int64: still the same integer
        ("1.5", "1.5"),
        ("1.50", "1.5"),                                     // the same number, in its shortest form
        ("-0.0", "-0.0"),
        ("1e2", "100.0"),
        ("0.1", "0.1"),
        (#""""#, #""""#),
        (#""req-1""#, #""req-1""#),
        (#""x\"y\\z""#, #""x\"y\\z""#),
        (#""\u00e9\ud83d\ude00""#, "\"\u{E9}\u{1F600}\""),
    ]

    @Test(arguments: echoed.indices)
    func echoedOnSuccessAndOnError(_ i: Int) throws {
        let (sent, echo) = Self.echoed[i]
        try c.send(#"{"op":"ping","id":"# + sent + "}")
        let ok = try c.readLine()
        #expect(ok.hasPrefix(#"{"id":"# + echo + #","ok":true"#), "\(ok)")
        try c.send(#"{"op":"get","id":"# + sent + "}")
        let failed = try c.readLine()
        #expect(failed.hasPrefix(#"{"id":"# + echo + #","ok":false"#), "\(failed)")
    }

    @Test(arguments: [("true", "a boolean"), ("[1]", "an array"), (#"{"n":1}"#, "an object")])
    func otherTypesAreRefused(_ sent: String, _ kind: String) throws {
        let r = try c.request(#"{"op":"ping","id":"# + sent + "}")
        #expect(r.errorCode == "INVALID_ARGUMENT")
        #expect(r.errorMessage == #"field "id" must be a string, a number or null, not "# + kind, "\(r)")
        #expect(r["id"] == nil)
        #expect(try c.request(#"{"op":"ping","id":"after"}"#)["id"] as? String == "after")
    }

    @Test func anAbsentIDIsNotEchoed() throws {
        let line = try { try c.send(#"{"op":"ping"}"#); return try c.readLine() }()
        #expect(line.hasPrefix(#"{"ok":true"#), "\(line)")
    }

    @Test func aNullIDIsEchoedOnADurableWrite() throws {
        try c.send(#"{"op":"set","path":"ids/a","data":{},"id":null}"#)
        let line = try c.readLine()
        #expect(line.hasPrefix(#"{"id":null,"ok":true"#), "\(line)")
    }
}
