import HearthModel
import Testing

@Suite("Errors, geopoints, writes")
struct ErrorAndMiscTests {
    @Test("error codes use Firestore's names", arguments: [
        (ErrorCode.invalidArgument, "INVALID_ARGUMENT"),
        (.notFound, "NOT_FOUND"),
        (.alreadyExists, "ALREADY_EXISTS"),
        (.failedPrecondition, "FAILED_PRECONDITION"),
        (.aborted, "ABORTED"),
        (.resourceExhausted, "RESOURCE_EXHAUSTED"),
        (.permissionDenied, "PERMISSION_DENIED"),
        (.unauthenticated, "UNAUTHENTICATED"),
        (.unimplemented, "UNIMPLEMENTED"),
        (.unavailable, "UNAVAILABLE"),
        (.internal, "INTERNAL"),
        (.dataLoss, "DATA_LOSS"),
    ] as [(ErrorCode, String)])
    func codes(code: ErrorCode, name: String) {
        #expect(code.rawValue == name)
        #expect(ErrorCode(rawValue: name) == code)
        #expect(!code.summary.isEmpty)
    }

    @Test("every code is listed")
    func allCodes() {
        #expect(ErrorCode.allCases.count == 12)
        #expect(Set(ErrorCode.allCases.map(\.summary)).count == 12)
    }

    @Test("HearthError")
    func hearthError() {
        let e = HearthError.invalid("bad path")
        #expect(e.code == .invalidArgument)
        #expect(e.message == "bad path")
        #expect(e.description == "INVALID_ARGUMENT: bad path")
        #expect(e.prefixed("write 3") == HearthError(.invalidArgument, "write 3: bad path"))
        #expect(HearthError(.notFound, "x") != HearthError(.aborted, "x"))
    }

    @Test("geopoint validity", arguments: [
        (0.0, 0.0, true), (90, 180, true), (-90, -180, true), (90.0000001, 0, false), (-90.0000001, 0, false),
        (0, 180.0000001, false), (0, -180.0000001, false), (.nan, 0, false), (0, .nan, false),
        (.infinity, 0, false), (0, -.infinity, false),
    ] as [(Double, Double, Bool)])
    func geoValidity(lat: Double, lng: Double, valid: Bool) {
        #expect(GeoPoint(latitude: lat, longitude: lng).isValid == valid)
    }

    @Test("transform names", arguments: [
        (Transform.serverTimestamp, "$serverTimestamp"),
        (.increment(1), "$increment"),
        (.maximum(1), "$maximum"),
        (.minimum(1), "$minimum"),
        (.arrayUnion([1]), "$arrayUnion"),
        (.arrayRemove([1]), "$arrayRemove"),
    ] as [(Transform, String)])
    func transformNames(t: Transform, name: String) {
        #expect(t.name == name)
    }

    @Test("write defaults")
    func writeDefaults() throws {
        let path = try DocumentPath(parsing: "a/b")
        let w = Write(kind: .delete, path: path, operation: .delete)
        #expect(w.transforms.isEmpty)
        #expect(w.precondition == .none)
        #expect(Write.Kind(rawValue: "create") == .create)
        let r = WriteResult(path: path, updateTime: Timestamp(micros: 1))
        #expect(r.transformResults.isEmpty)
    }
}
