import HearthModel
import HearthProtocol
import Testing

@Suite struct WriteDataMergeTests {
    @Test func mergeMasksEveryLeaf() throws {
        let d = try decodeWrite(#"{"a":1,"b":{"c":[1,2],"d":{},"e":{"f":null}},"g":{"$delete":true},"h":{"i":{"$delete":true}},"t":{"$serverTimestamp":true},"m":{"n":{"$increment":1}}}"#, .merge)
        #expect(d.fields == fields(["a": 1, "b": ["c": [1, 2], "d": [:], "e": ["f": nil]], "h": [:], "m": [:]]))
        #expect(d.mask == [path("a"), path("b.c"), path("b.d"), path("b.e.f"), path("g"), path("h.i")])
        #expect(d.transforms == [FieldTransform(field: path("m.n"), transform: .increment(1)),
                                 FieldTransform(field: path("t"), transform: .serverTimestamp)])
    }

    @Test func mergeWithOnlyTransformsHasAnEmptyMask() throws {
        let d = try decodeWrite(#"{"a":{"$serverTimestamp":true}}"#, .merge)
        #expect(d.mask == [])
        #expect(d.transforms.count == 1)
        #expect(try decodeWrite("{}", .merge).mask == [])
    }

    @Test func mergeFieldsKeepsOnlyListedPaths() throws {
        let d = try decodeWrite(#"{"a":1,"b":{"c":2,"d":3},"e":{"$increment":1},"f":{"g":{"$serverTimestamp":true},"h":4},"z":5}"#,
                                .mergeFields([path("b.c"), path("f"), path("e")]))
        #expect(d.fields == fields(["b": ["c": 2], "f": ["h": 4]]))
        // "e" is a transform target, so it is not in the mask.
        #expect(d.mask == [path("b.c"), path("f")])
        #expect(d.transforms == [FieldTransform(field: path("e"), transform: .increment(1)),
                                 FieldTransform(field: path("f.g"), transform: .serverTimestamp)])
    }

    @Test func mergeFieldsDropsTransformsOutsideTheMask() throws {
        let d = try decodeWrite(#"{"a":{"$increment":1},"b":2}"#, .mergeFields([path("b")]))
        #expect(d.transforms.isEmpty)
        #expect(d.mask == [path("b")])
    }

    @Test func mergeFieldsOnAMapOfTransformsClearsIt() throws {
        let d = try decodeWrite(#"{"h":{"g":{"$serverTimestamp":true}}}"#, .mergeFields([path("h")]))
        #expect(d.fields == fields(["h": [:]]))
        #expect(d.mask == [path("h")])
        #expect(d.transforms == [FieldTransform(field: path("h.g"), transform: .serverTimestamp)])
    }

    @Test func mergeFieldsPresence() throws {
        expectError("mergeFields: field b is not present in data") { _ = try decodeWrite(#"{"a":1}"#, .mergeFields([path("b")])) }
        expectError("mergeFields: field a.b is not present in data") { _ = try decodeWrite(#"{"a":1}"#, .mergeFields([path("a.b")])) }
        expectError("mergeFields: field a.b is not present") { _ = try decodeWrite(#"{"a":{}}"#, .mergeFields([path("a.b")])) }
        // A listed path may name a map (its whole value) or an empty map.
        #expect(try decodeWrite(#"{"a":{}}"#, .mergeFields([path("a")])).fields == fields(["a": [:]]))
    }

    @Test func mergeFieldsDeletes() throws {
        let d = try decodeWrite(#"{"a":{"$delete":true},"b":1}"#, .mergeFields([path("a")]))
        #expect(d.fields == MapValue())
        #expect(d.mask == [path("a")])
        expectError("data.h.g: $delete is only allowed on a field listed in mergeFields") {
            _ = try decodeWrite(#"{"h":{"g":{"$delete":true}}}"#, .mergeFields([path("h")]))
        }
        expectError("data.x: $delete is only allowed on a field listed in mergeFields") {
            _ = try decodeWrite(#"{"x":{"$delete":true},"b":1}"#, .mergeFields([path("b")]))
        }
    }

    @Test func mergeFieldsListValidation() {
        expectError("mergeFields: field a is listed twice") { _ = try decodeWrite(#"{"a":1}"#, .mergeFields([path("a"), path("a")])) }
        expectError("mergeFields: fields a and a.b overlap") { _ = try decodeWrite(#"{"a":{"b":1}}"#, .mergeFields([path("a.b"), path("a")])) }
    }

    @Test func parsingMergeFieldsLists() throws {
        #expect(try withJSON(#"["a.b","`x.y`.z"]"#) { (r) throws(HearthError) in try WriteDataDecoder.fieldPaths(r) }
            == [path("a.b"), FieldPath(["x.y", "z"])])
        expectError("mergeFields must be an array of field paths, not string") {
            _ = try withJSON(#""a""#) { (r) throws(HearthError) in try WriteDataDecoder.fieldPaths(r) }
        }
        expectError("mergeFields[1] must be a string, not integer") {
            _ = try withJSON(#"["a",1]"#) { (r) throws(HearthError) in try WriteDataDecoder.fieldPaths(r) }
        }
        expectError("mergeFields[0]: field path \"a..b\" has an empty segment") {
            _ = try withJSON(#"["a..b"]"#) { (r) throws(HearthError) in try WriteDataDecoder.fieldPaths(r) }
        }
    }
}
