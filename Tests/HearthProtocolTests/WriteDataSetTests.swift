import HearthModel
import HearthProtocol
import Testing

@Suite struct WriteDataSetTests {
    @Test func setKeepsDataAndExtractsTransforms() throws {
        let d = try decodeWrite(#"{"a":1,"b":{"c":{"$serverTimestamp":true},"d":"x"},"e":{"$increment":2},"f.g":true}"#, .set)
        #expect(d.fields == fields(["a": 1, "b": ["d": "x"], "f.g": true]))
        #expect(d.mask == nil)
        #expect(d.transforms == [FieldTransform(field: path("b.c"), transform: .serverTimestamp),
                                 FieldTransform(field: path("e"), transform: .increment(.int(2)))])
        #expect(d.operation == .update(fields: d.fields, mask: nil))
    }

    @Test func everyTransformKind() throws {
        let d = try decodeWrite(#"""
            {"t":{"$serverTimestamp":true},"i":{"$increment":1.5},"mx":{"$maximum":3},"mn":{"$minimum":{"$double":"-Infinity"}},
             "u":{"$arrayUnion":[1,"a",{"m":[2]},{"$timestamp":"2026-01-01T00:00:00Z"}]},"r":{"$arrayRemove":[]}}
            """#, .create)
        #expect(d.fields == MapValue())
        // Transforms come in field path order, whatever the key order of the JSON.
        #expect(d.transforms.map(\.field) == [path("i"), path("mn"), path("mx"), path("r"), path("t"), path("u")])
        #expect(d.transforms.map(\.transform) == [
            .increment(.double(1.5)), .minimum(.double(-.infinity)), .maximum(.int(3)), .arrayRemove([]), .serverTimestamp,
            .arrayUnion([1, "a", ["m": [2]], .timestamp(Timestamp.parse("2026-01-01T00:00:00Z")!)]),
        ])
    }

    @Test func transformOnlyMapLeavesAnEmptyMap() throws {
        let d = try decodeWrite(#"{"a":{"b":{"$serverTimestamp":true}}}"#, .set)
        #expect(d.fields == fields(["a": [:]]))
        #expect(d.transforms == [FieldTransform(field: path("a.b"), transform: .serverTimestamp)])
    }

    @Test func documentIdIsAPlainValue() throws {
        let d = try decodeWrite(#"{"id":{"$documentId":true},"n":{"k":{"$documentId":true}},"l":[{"$documentId":true}]}"#, .set)
        #expect(d.fields == fields(["id": "u1", "n": ["k": "u1"], "l": ["u1"]]))
        #expect(d.transforms.isEmpty)
        expectError("data.id: $documentId needs the value true") { _ = try decodeWrite(#"{"id":{"$documentId":1}}"#, .set) }
    }

    @Test func deleteIsRejectedInSetAndCreate() {
        for mode in [WriteDataDecoder.Mode.set, .create] {
            expectError("data.a.b: $delete is only allowed in update or set with merge") {
                _ = try decodeWrite(#"{"a":{"b":{"$delete":true}}}"#, mode)
            }
        }
    }

    @Test func transformsAndDeletesNeverInsideArrays() {
        expectError("data.a[0]: transforms are not allowed inside arrays") { _ = try decodeWrite(#"{"a":[{"$serverTimestamp":true}]}"#, .set) }
        expectError("data.a[1].b: transforms are not allowed inside arrays") { _ = try decodeWrite(#"{"a":[1,{"b":{"$increment":1}}]}"#, .merge) }
        expectError("data.a[0]: $delete is not allowed inside arrays") { _ = try decodeWrite(#"{"a":[{"$delete":true}]}"#, .merge) }
        expectError("data.a[0]: $delete is not allowed inside arrays") { _ = try decodeWrite(#"{"a":[{"$delete":true}]}"#, .update) }
        expectError("data.a.$arrayUnion[0]: $delete is not allowed inside arrays") {
            _ = try decodeWrite(#"{"a":{"$arrayUnion":[{"$delete":true}]}}"#, .merge)
        }
        expectError("data.a.$arrayRemove[0]: transforms are not allowed inside arrays") {
            _ = try decodeWrite(#"{"a":{"$arrayRemove":[{"$serverTimestamp":true}]}}"#, .set)
        }
    }

    @Test func sentinelOperands() {
        let cases: [(String, String)] = [
            (#"{"a":{"$serverTimestamp":false}}"#, "data.a: $serverTimestamp needs the value true"),
            (#"{"a":{"$serverTimestamp":1}}"#, "data.a: $serverTimestamp needs the value true"),
            (#"{"a":{"$increment":"1"}}"#, "data.a: $increment needs a number, found string"),
            (#"{"a":{"$maximum":null}}"#, "data.a: $maximum needs a number, found null"),
            (#"{"a":{"$minimum":[1]}}"#, "data.a: $minimum needs a number, found array"),
            (#"{"a":{"$increment":{"$delete":true}}}"#, "data.a: $increment needs a number, found object"),
            (#"{"a":{"$arrayUnion":1}}"#, "data.a: $arrayUnion needs an array, found integer"),
            (#"{"a":{"$arrayUnion":[[1]]}}"#, "data.a.$arrayUnion[0]: an array cannot directly contain another array"),
            (#"{"a":{"$arrayRemove":[{"$documentId":true}]}}"#, "data.a.$arrayRemove[0]: $documentId is not allowed here"),
            (#"{"a":{"$arrayUnion":[{"$bytes":"!"}]}}"#, "data.a.$arrayUnion[0]: $bytes needs"),
            (#"{"a":{"$delete":1}}"#, "data.a: $delete needs the value true"),
            (#"{"a":{"$increment":1,"b":2}}"#, "data.a: map key \"$increment\" is not allowed"),
        ]
        for (json, message) in cases {
            expectError(message) { _ = try decodeWrite(json, .merge) }
        }
    }

    @Test func dataValidation() {
        expectError("data must be an object, not array") { _ = try decodeWrite("[1]", .set) }
        expectError("duplicate key \"x\" in a") { _ = try decodeWrite(#"{"a":{"x":1,"x":{"$increment":1}}}"#, .set) }
        expectError("data.a: duplicate key \"x\"") { _ = try decodeWrite(#"{"a":{"x":1,"x":{"$increment":1}}}"#, .set, lenient: true) }
        expectError("data: duplicate key \"a\"") { _ = try decodeWrite(#"{"a":1,"a":2}"#, .merge, lenient: true) }
        expectError("data: map key \"__name__\" is reserved") { _ = try decodeWrite(#"{"__name__":1}"#, .set) }
        expectError("data: map key \"$a\" is not allowed") { _ = try decodeWrite(#"{"$a":1,"b":2}"#, .set) }
        expectError("data.x: unknown type \"$a\"") { _ = try decodeWrite(#"{"x":{"$a":1}}"#, .set) }
        expectError("data.a[0]: an array cannot directly contain another array") { _ = try decodeWrite(#"{"a":[[1]]}"#, .set) }
        let deep = String(repeating: "{\"a\":", count: 20) + "{\"$serverTimestamp\":true}" + String(repeating: "}", count: 20)
        #expect(throws: Never.self) { _ = try decodeWrite(deep, .set) }
        let tooDeep = String(repeating: "{\"a\":", count: 21) + "1" + String(repeating: "}", count: 21)
        expectError("nest deeper than 20 levels") { _ = try decodeWrite(tooDeep, .set) }
    }

    @Test func documentSizeLimit() throws {
        // Path "users/u1" (16 + 6 + 3) + 32 + key "s" (2) + string (n + 1) = n + 60.
        let fits = String(repeating: "x", count: Limits.maxDocumentBytes - 60)
        #expect(try decodeWrite("{\"s\":\"\(fits)\"}", .set).fields.count == 1)
        expectError("document users/u1 is too large: 1048577 bytes (the limit is 1048576 bytes)") {
            _ = try decodeWrite("{\"s\":\"\(fits)x\"}", .set)
        }
        expectError("is too large") { _ = try decodeWrite("{\"s\":\"\(fits)x\"}", .update) }
    }
}
