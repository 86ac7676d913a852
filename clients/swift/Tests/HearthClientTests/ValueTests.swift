import Foundation
import Testing
@testable import HearthClient

/// Every value type survives a write and a read through the real daemon with its type intact.
@Suite struct ValueTests {
    let env: TestEnv
    init() throws { env = try TestEnv() }

    @Test func everyValueTypeRoundTrips() async throws {
        let db = env.db
        let when = Timestamp(seconds: 1_795_953_600, nanoseconds: 123_456_000)
        let ref = db.document("customers/c1")
        let data: [String: Any] = [
            "string": "Ada ✓ \"quoted\" \\ \n tab\t",
            "true": true, "false": false,
            "int": 42, "int64": Int64.max, "negative": -7,
            "double": 3.5, "integralDouble": 3.0, "tiny": Double.leastNonzeroMagnitude, "huge": 1e300,
            "nan": Double.nan, "inf": Double.infinity, "negInf": -Double.infinity,
            "null": NSNull(),
            "timestamp": when,
            "bytes": Data([0, 1, 2, 255]),
            "ref": db.document("orders/o1"),
            "geo": GeoPoint(latitude: 48.85, longitude: 2.35),
            "array": [1, "two", 3.0, NSNull(), ["nested": true]] as [Any],
            "map": ["a": ["b": ["c": 1]]],
            "float": Float(1.5),
            "uint8": UInt8(200),
        ]
        try await ref.setData(data)
        let snap = try await ref.getDocument()
        #expect(snap.exists)
        let d = try #require(snap.data())
        #expect(d["string"] as? String == data["string"] as? String)
        #expect(d["true"] as? Bool == true && d["false"] as? Bool == false)
        #expect(d["int"] as? Int == 42)
        #expect(d["int64"] as? Int == Int.max)
        #expect(d["negative"] as? Int == -7)
        #expect(d["double"] as? Double == 3.5)
        #expect(d["integralDouble"] as? Double == 3.0)
        #expect(d["integralDouble"] as? Int == nil, "3.0 must stay a double")
        #expect(d["int"] as? Double == nil, "42 must stay an integer")
        #expect(d["tiny"] as? Double == Double.leastNonzeroMagnitude)
        #expect(d["huge"] as? Double == 1e300)
        #expect((d["nan"] as? Double)?.isNaN == true)
        #expect(d["inf"] as? Double == .infinity)
        #expect(d["negInf"] as? Double == -.infinity)
        #expect(d["null"] is NSNull)
        #expect(d["timestamp"] as? Timestamp == when)
        #expect(d["bytes"] as? Data == Data([0, 1, 2, 255]))
        #expect((d["ref"] as? DocumentReference)?.path == "orders/o1")
        #expect(d["geo"] as? GeoPoint == GeoPoint(latitude: 48.85, longitude: 2.35))
        let array = try #require(d["array"] as? [Any])
        #expect(array.count == 5)
        #expect(array[0] as? Int == 1 && array[1] as? String == "two" && array[2] as? Double == 3.0 && array[3] is NSNull)
        #expect((array[4] as? [String: Any])?["nested"] as? Bool == true)
        #expect(snap.get("map.a.b.c") as? Int == 1)
        #expect(snap.get(FieldPath(["map", "a"])) is [String: Any])
        #expect(snap.get("missing") == nil)
        #expect(d["float"] as? Double == 1.5)
        #expect(d["uint8"] as? Int == 200)
        #expect(snap.createTime != nil && snap.updateTime != nil)
        #expect(snap.documentID == "c1" && snap.reference.path == "customers/c1")
    }

    @Test func datesRoundTripToTheMicrosecond() async throws {
        let date = Date(timeIntervalSince1970: 1_795_953_600.123456)
        let ref = env.db.collection("dates").document("d")
        try await ref.setData(["at": date, "old": Date(timeIntervalSince1970: -86_400.5)])
        let snap = try await ref.getDocument()
        let back = try #require(snap.get("at") as? Timestamp).dateValue()
        #expect(abs(back.timeIntervalSince(date)) < 1e-6)
        #expect(snap.get("old") as? Timestamp == Timestamp(seconds: -86_401, nanoseconds: 500_000_000))
    }

    @Test func missingDocumentAndFieldNamesNeedingQuotes() async throws {
        let missing = try await env.db.document("nobody/here").getDocument()
        #expect(!missing.exists && missing.data() == nil && missing.updateTime == nil)

        let ref = env.db.document("odd/names")
        try await ref.setData(["a.b": 1, "with space": ["x`y": 2], "plain": ["c": 3]])
        try await ref.updateData([FieldPath(["a.b"]): 10, FieldPath(["with space", "x`y"]): 20, "plain.c": 30])
        let snap = try await ref.getDocument()
        #expect(snap.get(FieldPath(["a.b"])) as? Int == 10)
        #expect(snap.get("`a.b`") as? Int == 10)
        #expect(snap.get(FieldPath(["with space", "x`y"])) as? Int == 20)
        #expect(snap.get("plain.c") as? Int == 30)
        #expect(snap.data()?.count == 3)
    }

    @Test func unsupportedValuesAreRefusedBeforeSending() async throws {
        struct Opaque {}
        let code = await hearthCode { try await env.db.document("x/y").setData(["bad": ["deep": Opaque()]]) }
        #expect(code == .invalidArgument)
        do {
            try await env.db.document("x/y").setData(["bad": ["deep": Opaque()]])
        } catch let e as HearthError {
            #expect(e.message.contains("bad.deep"))
        }
        let after = try await env.db.document("x/y").getDocument()
        #expect(!after.exists)
    }

    @Test func serverErrorsCarryCodeAndMessage() async throws {
        do {
            try await env.db.document("nobody/here").updateData(["a": 1])
            Issue.record("update of a missing document succeeded")
        } catch let e as HearthError {
            #expect(e.code == .notFound)
            #expect(e.message.contains("nobody/here"))
        }
        #expect(await hearthCode { _ = try await env.db.document("odd").getDocument() } == .invalidArgument)
    }

    @Test func connectionErrorsAreUnavailable() async throws {
        let port = try freePort()
        let db = Hearth(host: "127.0.0.1", port: port)
        #expect(await hearthCode { _ = try await db.document("a/b").getDocument() } == .unavailable)
    }

    @Test func jsonWriterAndParserKeepNumbersApart() throws {
        let value = JSON.object(["i": .int(3), "d": .double(3), "s": .string("é\u{1}\"\\"), "a": .array([.null, .bool(true)]),
                                 "n": .double(.nan), "big": .double(1e21), "neg": .double(-0.5)])
        let text = String(decoding: value.serialized, as: UTF8.self)
        #expect(text.contains(#""d":3.0"#) && text.contains(#""i":3"#) && text.contains(#""n":{"$double":"NaN"}"#))
        let back = try JSON.parse(Array(text.utf8))
        #expect(back["i"] == .int(3) && back["d"] == .double(3) && back["s"] == .string("é\u{1}\"\\"))
        #expect(back["big"] == .double(1e21) && back["neg"] == .double(-0.5))
        #expect(try JSON.parse(Array(#""\ud83d\ude00""#.utf8)) == .string("😀"))
        #expect(try JSON.parse(Array("18446744073709551615".utf8)) == .double(18446744073709551616.0))
        #expect(throws: (any Error).self) { try JSON.parse(Array(#"{"a":1,}"#.utf8)) }
        #expect(throws: (any Error).self) { try JSON.parse(Array("[1] x".utf8)) }
    }

    @Test func timestampsParseAndFormatRFC3339() {
        let t = Timestamp(rfc3339: "2026-11-29T12:00:00.123456789Z")
        #expect(t == Timestamp(seconds: 1_795_953_600, nanoseconds: 123_456_789))
        #expect(t?.rfc3339 == "2026-11-29T12:00:00.123456789Z")
        #expect(Timestamp(rfc3339: "2026-11-29T13:30:00+01:30") == Timestamp(seconds: 1_795_953_600, nanoseconds: 0))
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59.5Z") == Timestamp(seconds: -1, nanoseconds: 500_000_000))
        #expect(Timestamp(rfc3339: "0001-01-01T00:00:00Z")?.rfc3339 == "0001-01-01T00:00:00.000000000Z")
        #expect(Timestamp(rfc3339: "yesterday") == nil)
        #expect(Timestamp(seconds: 0, nanoseconds: -1) == Timestamp(seconds: -1, nanoseconds: 999_999_999))
    }

    @Test func fieldPathsEscapeAsTheServerParses() {
        #expect(FieldPath(["a", "b_1"]).description == "a.b_1")
        #expect(FieldPath(["a.b", "x`y", "back\\slash", "1st"]).description == #"`a.b`.`x\`y`.`back\\slash`.`1st`"#)
        #expect(FieldPath.segments(ofDotted: #"`a.b`.`x\`y`.c"#) == ["a.b", "x`y", "c"])
        #expect(FieldPath.segments(ofDotted: "a..b") == nil)
    }

    @Test func autoIDsAreTwentyAlphanumerics() {
        let ids = (0..<200).map { _ in env.db.collection("c").document().documentID }
        #expect(Set(ids).count == 200)
        #expect(ids.allSatisfy { $0.count == 20 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
    }
}
