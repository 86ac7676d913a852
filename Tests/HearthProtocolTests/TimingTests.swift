import HearthModel
import HearthProtocol
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rough timings, printed and never asserted. Debug builds are many times slower than release; for real
/// figures run `swift test -c release --filter TimingTests`.
@Suite(.serialized) struct TimingTests {
    static let document = #"""
        {"name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.5,"active":true,"tags":["math","poetry","engines"],"address":{"city":"London","zip":"W1","geo":{"$geopoint":[51.5,-0.12]}},"joined":{"$timestamp":"2026-11-29T12:00:00.123456Z"},"notes":null,"visits":1234567,"ratio":0.25}
        """#
    #if DEBUG
    static let iterations = 20_000
    static let build = "debug"
    #else
    static let iterations = 200_000
    static let build = "release"
    #endif

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
    }

    /// Runs `body` `iterations` times (after a warm-up) and prints ns per call.
    static func time(_ label: String, perCall: Int = 1, _ body: () throws -> Void) rethrows {
        for _ in 0..<1000 { try body() }
        let start = now()
        for _ in 0..<iterations { try body() }
        let ns = (now() - start) / Double(iterations * perCall)
        print("timing [\(build)] \(label): \(Int(ns.rounded())) ns/call (\(document.utf8.count)-byte document, \(iterations) iterations)")
    }

    @Test func parseDecodeEncode() throws {
        let bytes = Array(Self.document.utf8)
        let parser = JSONParser()
        defer { withExtendedLifetime(parser) {} }
        let path = try DocumentPath(parsing: "users/ada")
        var sink = 0

        try Self.time("parse only") {
            sink &+= try parser.parse(bytes).count
        }
        try Self.time("parse + ValueCodec.decodeFields") {
            sink &+= try ValueCodec.decodeFields(try parser.parse(bytes)).count
        }
        try Self.time("parse + WriteDataDecoder(.set)") {
            sink &+= try WriteDataDecoder.decode(try parser.parse(bytes), mode: .set, document: path).fields.count
        }
        let fields = try ValueCodec.decodeFields(try parser.parse(bytes))
        var writer = JSONWriter(capacity: 1024)
        Self.time("encode fields (JSONWriter, reused)") {
            writer.reset()
            writer.fields(fields)
            sink &+= writer.bytes.count
        }
        let codec = FieldsJSON()
        Self.time("FieldsJSON.encodeFields (fresh array)") {
            sink &+= codec.encodeFields(fields).count
        }
        try Self.time("FieldsJSON.decodeFields (thread parser)") {
            sink &+= try codec.decodeFields(bytes).count
        }
        // What the engine adds to a document it reads from the store (a cache miss) before serving it.
        try Self.time("FieldsJSON.verifyStored (thread parser)") {
            try codec.verifyStored(bytes)
            sink &+= 1
        }
        let ndjson = Array(repeating: Self.document + "\n", count: 64).joined().utf8.map { $0 }
        var framer = LineFramer()
        Self.time("LineFramer, 64 lines per chunk (per line)", perCall: 64) {
            ndjson.withUnsafeBytes { b in framer.feed(b) { e in if case .line(let l) = e { sink &+= l.count } } }
        }
        #expect(sink != 0)
    }
}
