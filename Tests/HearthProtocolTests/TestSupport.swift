import HearthModel
import HearthProtocol
import Testing

/// Parses `json` and runs `body` on its root while the parser is alive. `lenient`: repeated keys are not a
/// parse error (to reach the decoders' own check).
func withJSON<R>(_ json: String, lenient: Bool = false, _ body: (JSONRef) throws(HearthError) -> R) throws(HearthError) -> R {
    let parser = JSONParser(rejectsDuplicateKeys: !lenient)
    return try withExtendedLifetime(parser) { () throws(HearthError) -> R in
        try body(try parser.parse(json))
    }
}

/// Expects `body` to throw a HearthError with `code` whose message contains every one of `parts`.
func expectError(_ parts: String..., code: ErrorCode = .invalidArgument, sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected an error containing \(parts)", sourceLocation: sourceLocation)
    } catch {
        guard let error = error as? HearthError else {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        for p in parts {
            #expect(error.message.contains(p), "message \"\(error.message)\" lacks \"\(p)\"", sourceLocation: sourceLocation)
        }
    }
}

func decodeValue(_ json: String, options: ValueCodec.Options = .init(), lenient: Bool = false) throws(HearthError) -> Value {
    try withJSON(json, lenient: lenient) { (r) throws(HearthError) -> Value in try ValueCodec.decodeValue(r, path: "value", options: options) }
}

func decodeFields(_ json: String) throws(HearthError) -> MapValue {
    try withJSON(json) { (r) throws(HearthError) -> MapValue in try ValueCodec.decodeFields(r, path: "data") }
}

func encode(_ v: Value) -> String {
    var w = JSONWriter()
    w.value(v)
    return String(decoding: w.bytes, as: UTF8.self)
}

func path(_ s: String) -> FieldPath { try! FieldPath.parse(s) }

let testDocument = try! DocumentPath(parsing: "users/u1")

func decodeWrite(_ json: String, _ mode: WriteDataDecoder.Mode, document: DocumentPath = testDocument,
                 lenient: Bool = false) throws(HearthError) -> WriteData {
    try withJSON(json, lenient: lenient) { (r) throws(HearthError) -> WriteData in try WriteDataDecoder.decode(r, mode: mode, document: document) }
}

func fields(_ v: Value) -> MapValue { v.mapValue! }
