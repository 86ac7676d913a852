import HearthModel
import HearthProtocol
import Testing

@Suite struct ValueRoundTripTests {
    static let values: [Value] = [
        .null, .bool(true), .bool(false),
        .int(0), .int(-1), .int(Int64.max), .int(Int64.min),
        .double(0.1), .double(1e-300), .double(.leastNonzeroMagnitude), .double(1.7976931348623157e308), .double(-0.0), .double(0.0),
        .double(3.0), .double(-3.0), .double(1e16), .double(.nan), .double(.infinity), .double(-.infinity),
        .string(""), .string("plain"), .string("quote\" backslash\\ slash/"), .string("\u{0}\u{1}\n\t\u{1F}"),
        .string("é e\u{301} 😀 \u{2028}\u{FFFF}"),
        .timestamp(Timestamp(micros: 0)), .timestamp(Timestamp(micros: 1_795_953_600_123_456)),
        .timestamp(Timestamp(micros: Timestamp.minMicros)), .timestamp(Timestamp(micros: Timestamp.maxMicros)),
        .timestamp(Timestamp(micros: -1)),
        .bytes([]), .bytes([0]), .bytes([0, 1]), .bytes([0, 1, 2]), .bytes(Array(0...255)),
        .reference(try! DocumentPath(parsing: "customers/c1")), .reference(try! DocumentPath(parsing: "a/b/c/d é \"q\"")),
        .geoPoint(GeoPoint(latitude: 51.5, longitude: -0.12)), .geoPoint(GeoPoint(latitude: -90, longitude: 180)),
        .array([]), .array([1, "two", 3.0, nil, [:]]),
        .map(MapValue()), ["b": 1, "a": ["c": [true, false]], "é": "x", "A": .bytes([9])],
    ]

    @Test(arguments: values)
    func roundTrip(_ v: Value) throws {
        let text = encode(v)
        let back = try decodeValue(text)
        #expect(back == v, "\(text)")
        // Encoding is canonical: re-encoding gives the same bytes.
        #expect(encode(back) == text)
    }

    @Test func wireForms() {
        #expect(encode(.timestamp(Timestamp(micros: 1_795_953_600_123_456))) == #"{"$timestamp":"2026-11-29T12:00:00.123456Z"}"#)
        #expect(encode(.bytes(Array("hello".utf8))) == #"{"$bytes":"aGVsbG8="}"#)
        #expect(encode(.reference(try! DocumentPath(parsing: "customers/c1"))) == #"{"$ref":"customers/c1"}"#)
        #expect(encode(.geoPoint(GeoPoint(latitude: 1, longitude: 2.5))) == #"{"$geopoint":[1.0,2.5]}"#)
        #expect(encode(["b": 1, "a": 2]) == #"{"a":2,"b":1}"#)
        #expect(encode([.double(3), .int(3)]) == "[3.0,3]")
    }

    @Test func fieldsJSON() throws {
        let m = MapValue([.init(key: "z", value: .int(1)), .init(key: "a", value: .timestamp(Timestamp(micros: 5)))])
        let codec = FieldsJSON()
        let bytes = codec.encodeFields(m)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"a":{"$timestamp":"1970-01-01T00:00:00.000005Z"},"z":1}"#)
        #expect(try codec.decodeFields(bytes) == m)
        #expect(try codec.decodeFields(bytes, parser: JSONParser()) == m)
        // Stored bytes splice verbatim into a response.
        var w = JSONWriter()
        w.beginObject(); w.key("data"); w.raw(bytes); w.endObject()
        #expect(String(decoding: w.bytes, as: UTF8.self) == #"{"data":{"a":{"$timestamp":"1970-01-01T00:00:00.000005Z"},"z":1}}"#)
        expectError("fields must be an object") { _ = try codec.decodeFields(Array("[1]".utf8)) }
        expectError("invalid JSON at byte 1") { _ = try codec.decodeFields(Array("{".utf8)) }
    }

    @Test func fieldsJSONOnManyThreads() async throws {
        let v: Value = ["a": [1, 2, "x"], "b": ["c": .double(2.5)]]
        let m = v.mapValue!
        let bytes = FieldsJSON().encodeFields(m)
        try await withThrowingTaskGroup(of: Void.self) { g in
            for _ in 0..<8 {
                g.addTask { () throws in
                    for _ in 0..<200 { #expect(try FieldsJSON().decodeFields(bytes) == m) }
                }
            }
            try await g.waitForAll()
        }
    }
}
