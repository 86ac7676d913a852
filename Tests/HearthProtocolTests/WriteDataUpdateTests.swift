import HearthModel
import HearthProtocol
import Testing

@Suite struct WriteDataUpdateTests {
    @Test func dottedKeysAreFieldPaths() throws {
        let d = try decodeWrite(#"{"a.b":1,"c":{"d":2},"`x.y`.z":3,"e":{"$delete":true}}"#, .update)
        #expect(d.fields == fields(["a": ["b": 1], "c": ["d": 2], "x.y": ["z": 3]]))
        #expect(d.mask == [path("a.b"), path("c"), path("e"), FieldPath(["x.y", "z"])])
        #expect(d.transforms.isEmpty)
    }

    @Test func transformsAreNotMasked() throws {
        let d = try decodeWrite(#"{"a.b":{"$serverTimestamp":true},"c":{"d":{"$increment":1},"e":1},"f":{"g":{"$maximum":2}}}"#, .update)
        // A map value replaces the field wholesale, so its key is masked even when it held only transforms.
        #expect(d.fields == fields(["c": ["e": 1], "f": [:]]))
        #expect(d.mask == [path("c"), path("f")])
        #expect(d.transforms == [FieldTransform(field: path("a.b"), transform: .serverTimestamp),
                                 FieldTransform(field: path("c.d"), transform: .increment(1)),
                                 FieldTransform(field: path("f.g"), transform: .maximum(2))])
    }

    @Test func documentIdInUpdate() throws {
        let d = try decodeWrite(#"{"owner.id":{"$documentId":true}}"#, .update)
        #expect(d.fields == fields(["owner": ["id": "u1"]]))
        #expect(d.mask == [path("owner.id")])
    }

    @Test func prefixConflicts() {
        expectError("data: fields a and a.b conflict (one is a prefix of the other)") { _ = try decodeWrite(#"{"a.b":1,"a":2}"#, .update) }
        expectError("data: field a.b is given twice") { _ = try decodeWrite(#"{"a.b":1,"`a`.b":2}"#, .update) }
        expectError("data: field a is given twice") { _ = try decodeWrite(#"{"a":1,"`a`":2}"#, .update) }
        expectError("duplicate key \"a\"") { _ = try decodeWrite(#"{"a":1,"a":2}"#, .update) }
        #expect(throws: Never.self) { _ = try decodeWrite(#"{"a.b":1,"a.c":2,"ab":3}"#, .update) }
    }

    @Test func emptyAndBadKeys() {
        expectError("data: update needs at least one field") { _ = try decodeWrite("{}", .update) }
        expectError("data: field path \"a..b\" has an empty segment") { _ = try decodeWrite(#"{"a..b":1}"#, .update) }
        expectError("data: field path \"\" has an empty segment") { _ = try decodeWrite(#"{"":1}"#, .update) }
        expectError("data.a.__x__: map key \"__x__\" is reserved") { _ = try decodeWrite(#"{"a.__x__":1}"#, .update) }
        expectError("data.`$x`: map key \"$x\" is not allowed") { _ = try decodeWrite(#"{"$x":1}"#, .update) }
    }

    @Test func deleteOnlyAtTopLevel() {
        expectError("data.a.b: $delete cannot be nested inside a value in update") { _ = try decodeWrite(#"{"a":{"b":{"$delete":true}}}"#, .update) }
        expectError("data.a: $delete needs the value true") { _ = try decodeWrite(#"{"a":{"$delete":false}}"#, .update) }
    }

    @Test func valueErrorsNameTheFieldPath() {
        expectError("data.a.b.c: $timestamp needs") { _ = try decodeWrite(#"{"a.b":{"c":{"$timestamp":"x"}}}"#, .update) }
        expectError("data.a.b[0]: transforms are not allowed inside arrays") {
            _ = try decodeWrite(#"{"a.b":[{"$serverTimestamp":true}]}"#, .update)
        }
    }

    @Test func depthCountsPathSegments() {
        let twenty = Array(repeating: "a", count: 20).joined(separator: ".")
        #expect(throws: Never.self) { _ = try decodeWrite("{\"\(twenty)\":1}", .update) }
        expectError("nest deeper than 20 levels") { _ = try decodeWrite("{\"\(twenty).b\":1}", .update) }
        expectError("nest deeper than 20 levels") { _ = try decodeWrite("{\"\(twenty)\":{\"b\":1}}", .update) }
    }
}
