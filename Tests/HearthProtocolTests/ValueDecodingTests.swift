import HearthModel
import HearthProtocol
import Testing

@Suite struct ValueDecodingTests {
    @Test func numbers() throws {
        #expect(try decodeValue("3") == .int(3))
        #expect(try decodeValue("3.0") == .double(3))
        #expect(try decodeValue("1e2") == .double(100))
        #expect(try decodeValue("-0") == .int(0))
        #expect(try decodeValue("-0.0") == .double(-0.0))
        #expect(try decodeValue("9223372036854775808") == .double(9223372036854775808.0))
        #expect(try decodeValue("123456789012345678901234567890") == .double(1.2345678901234568e29))
        #expect(try decodeValue(#"{"$double":3}"#) == .double(3))
        #expect(try decodeValue(#"{"$double":3.5}"#) == .double(3.5))
        #expect(try decodeValue(#"{"$double":"NaN"}"#).isNaN)
        #expect(try decodeValue(#"{"$double":"-Infinity"}"#) == .double(-.infinity))
        expectError("value: $double needs a number") { _ = try decodeValue(#"{"$double":"nan"}"#) }
        expectError("value: $double needs a number") { _ = try decodeValue(#"{"$double":null}"#) }
    }

    @Test func typedValues() throws {
        #expect(try decodeValue(#"{"$timestamp":"2026-11-29T12:00:00.123456Z"}"#) == .timestamp(Timestamp.parse("2026-11-29T12:00:00.123456Z")!))
        #expect(try decodeValue(#"{"$timestamp":"2026-11-29T13:00:00+01:00"}"#) == .timestamp(Timestamp.parse("2026-11-29T12:00:00Z")!))
        #expect(try decodeValue(#"{"$bytes":"aGVsbG8="}"#) == .bytes(Array("hello".utf8)))
        #expect(try decodeValue(#"{"$bytes":""}"#) == .bytes([]))
        #expect(try decodeValue(#"{"$ref":"customers/c1"}"#) == .reference(try DocumentPath(parsing: "customers/c1")))
        #expect(try decodeValue(#"{"$geopoint":[51.5,-1]}"#) == .geoPoint(GeoPoint(latitude: 51.5, longitude: -1)))
    }

    @Test func badTypedValues() {
        let cases: [(String, String)] = [
            (#"{"$timestamp":"2026-13-01T00:00:00Z"}"#, "value: $timestamp needs an RFC 3339 string"),
            (#"{"$timestamp":"10000-01-01T00:00:00Z"}"#, "value: $timestamp needs"),
            (#"{"$timestamp":12}"#, "value: $timestamp needs"),
            (#"{"$bytes":"aGVsbG8"}"#, "value: $bytes needs a standard base64 string with padding"),
            (#"{"$bytes":"aGVsbG8=="}"#, "$bytes needs"),
            (#"{"$bytes":"aGV sbG8="}"#, "$bytes needs"),
            (#"{"$bytes":"aGVsbG9="}"#, "$bytes needs"),       // non-zero unused bits
            (#"{"$bytes":"aG=sbG8="}"#, "$bytes needs"),
            (#"{"$bytes":"aGVsbG8-"}"#, "$bytes needs"),       // URL-safe alphabet
            (#"{"$ref":"customers"}"#, "value: $ref: \"customers\" is not a document path"),
            (#"{"$ref":"a//b"}"#, "value: $ref: document path"),
            (#"{"$ref":1}"#, "$ref needs a document path string"),
            (#"{"$geopoint":[91,0]}"#, "value: $geopoint needs [latitude, longitude]"),
            (#"{"$geopoint":[0,-180.5]}"#, "$geopoint needs"),
            (#"{"$geopoint":[0]}"#, "$geopoint needs"),
            (#"{"$geopoint":[0,1,2]}"#, "$geopoint needs"),
            (#"{"$geopoint":["0","1"]}"#, "$geopoint needs"),
            (#"{"$geopoint":{"lat":0}}"#, "$geopoint needs"),
            (#"{"$nope":1}"#, "value: unknown type \"$nope\""),
            (#"{"$timestamp":"2026-11-29T12:00:00Z","a":1}"#, "value: map key \"$timestamp\" is not allowed"),
            (#"{"a":1,"$b":2}"#, "value: map key \"$b\" is not allowed"),
        ]
        for (json, message) in cases {
            expectError(message) { _ = try decodeValue(json) }
        }
    }

    @Test func mapKeysAreValidatedAndSorted() throws {
        let v = try decodeValue(#"{"b":1,"a":2,"é":3,"Z":4}"#)
        #expect(v.mapValue?.fields.map(\.key) == ["Z", "a", "b", "é"])
        expectError("value: map keys must not be empty") { _ = try decodeValue(#"{"":1}"#) }
        expectError("value.a: map key \"__x__\" is reserved") { _ = try decodeValue(#"{"a":{"__x__":1}}"#) }
        #expect(try decodeValue(#"{"__":1,"__x":2,"x__":3}"#).mapValue?.count == 3)
        // Repeated keys are a parse error (JSONParserTests); the decoder refuses them too when given a
        // document from a lenient parser.
        expectError("duplicate key \"a\"") { _ = try decodeValue(#"{"a":1,"a":2}"#) }
        expectError("value: duplicate key \"a\"") { _ = try decodeValue(#"{"a":1,"a":2}"#, lenient: true) }
        expectError("value: duplicate key \"a\"") { _ = try decodeValue(#"{"b":1,"a":2,"a":3}"#, lenient: true) }
        expectError("value: duplicate key \"a\"") { _ = try decodeValue(#"{"a":1,"b":2,"a":3}"#, lenient: true) }
        // Keys are compared by bytes: NFC and NFD spellings of é are different keys.
        #expect(try decodeValue("{\"\u{E9}\":1,\"e\u{301}\":2}").mapValue?.count == 2)
    }

    /// A field name (a map key at any depth) is at most 1,500 bytes, as in Firestore; stored documents,
    /// perhaps written before the limit, are read whatever their keys' length.
    @Test func mapKeysAreAtMost1500Bytes() throws {
        let longest = String(repeating: "é", count: 750), over = String(repeating: "k", count: 1501)
        #expect(try decodeValue(#"{"a":{"\#(longest)":1}}"#).mapValue?["a"]?.mapValue?[longest] == .int(1))
        expectError("value.a: map key \"kkkk", "is 1501 bytes, above the limit of 1500 for a field name") {
            _ = try decodeValue(#"{"a":{"\#(over)":1}}"#)
        }
        expectError("is 1501 bytes, above the limit of 1500") { _ = try decodeValue(#"[{"\#(over)":1}]"#) }
        // The message quotes whole characters, however many bytes each takes.
        expectError("map key \"\(String(repeating: "é", count: 32))...\" is 1502 bytes") {
            _ = try decodeValue(#"{"\#(longest)é":1}"#)
        }
        expectError("data: map key \"kkkk", "is 1501 bytes") { _ = try decodeWrite(#"{"\#(over)":1}"#, .set) }
        expectError("is 1501 bytes") { _ = try decodeWrite(#"{"a":{"$arrayUnion":[{"\#(over)":1}]}}"#, .set) }
        expectError("field path \"kkkk", "is 1501 bytes, above the limit of 1500") { _ = try decodeWrite(#"{"\#(over)":1}"#, .update) }
        expectError("field path", "is 1503 bytes") { _ = try decodeWrite(#"{"a.\#(over)":1}"#, .update) }
        let stored = try FieldsJSON().decodeFields(Array(#"{"\#(over)":1}"#.utf8))
        #expect(stored[over] == .int(1))
        // An index on such a path: refused in a request, read from a catalog stored before the limit.
        let index = #"{"collection":"c","scope":"collection","fields":[["\#(over)","asc"],["g","asc"]]}"#
        expectError("is 1501 bytes, above the limit of 1500") {
            _ = try withJSON(index) { (r) throws(HearthError) in try IndexCatalogJSON.definition(r, id: 0, state: .building) }
        }
        let old = try withJSON(index) { (r) throws(HearthError) in try IndexCatalogJSON.definition(r, id: 7, state: .ready, maxPathBytes: .max) }
        let catalog = try IndexCatalogJSON.decode(IndexCatalogJSON.encode(IndexCatalog(indexes: [old], nextID: 8)))
        #expect(catalog.indexes.first?.fields.first?.path.segments == [over])
    }

    @Test func errorPathsNameTheField() {
        expectError("value.a.b[1]: $timestamp needs") { _ = try decodeValue(#"{"a":{"b":[1,{"$timestamp":"x"}]}}"#) }
        expectError("value.`first name`.x: unknown type") { _ = try decodeValue(#"{"first name":{"x":{"$x":1}}}"#) }
        expectError("data.a: $bytes needs") { _ = try decodeFields(#"{"a":{"$bytes":"!"}}"#) }
        expectError("data must be an object, not array") { _ = try decodeFields("[]") }
    }

    @Test func nestedArrays() throws {
        expectError("value[1]: an array cannot directly contain another array") { _ = try decodeValue("[1,[2]]") }
        #expect(try decodeValue("[1,{\"a\":[2]}]") == [1, ["a": [2]]])
        let inList = try decodeValue("[[1,2],[3]]", options: .init(allowNestedArrays: true))
        #expect(inList == [[1, 2], [3]])
    }

    @Test func depthLimit() throws {
        // A top-level field is depth 1: 20 levels of maps are fine, 21 are not.
        func nested(_ levels: Int) -> String {
            String(repeating: "{\"a\":", count: levels) + "1" + String(repeating: "}", count: levels)
        }
        #expect(try decodeFields(nested(20)).value(at: FieldPath(Array(repeating: "a", count: 20))) == .int(1))
        expectError("nest deeper than 20 levels") { _ = try decodeFields(nested(21)) }
        // Arrays count as a level too; empty containers at the limit are fine.
        let twenty = String(repeating: "{\"a\":", count: 19) + "[]" + String(repeating: "}", count: 19)
        #expect(try decodeFields(twenty).count == 1)
        let arrayAt21 = String(repeating: "{\"a\":", count: 20) + "[1]" + String(repeating: "}", count: 20)
        expectError("data.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a: maps and arrays nest deeper than 20 levels") {
            _ = try decodeFields(arrayAt21)
        }
        expectError("nest deeper than 3 levels") {
            _ = try decodeValue("[[[[1]]]]", options: .init(allowNestedArrays: true, maxDepth: 3))
        }
    }

    @Test func sentinelsAreNotPlainValues() {
        expectError("value.a: $serverTimestamp is not allowed here") { _ = try decodeValue(#"{"a":{"$serverTimestamp":true}}"#) }
        expectError("value[0]: transforms are not allowed inside arrays") { _ = try decodeValue(#"[{"$increment":1}]"#) }
        expectError("value[0]: $delete is not allowed inside arrays") { _ = try decodeValue(#"[{"$delete":true}]"#) }
        expectError("value: $documentId is not allowed here") { _ = try decodeValue(#"{"$documentId":true}"#) }
    }
}
