import Foundation

/// Sentinel values for write data that the server resolves: Firestore's `FieldValue`, written as Hearth's
/// transform forms (`{"$serverTimestamp":true}`, `{"$increment":n}`, ...). Not allowed inside arrays, nor in
/// query filters and cursors.
public struct FieldValue: Sendable, Equatable {
    let wire: JSON

    init(_ wire: JSON) { self.wire = wire }

    /// The commit time (every server timestamp of one commit is the same instant).
    public static func serverTimestamp() -> FieldValue { FieldValue(.object(["$serverTimestamp": .bool(true)])) }

    /// Removes the field (`updateData` and `setData(merge:)`/`mergeFields` only).
    public static func delete() -> FieldValue { FieldValue(.object(["$delete": .bool(true)])) }

    /// Adds `n`; integer + integer saturates at the Int64 limits, a double on either side gives a double.
    public static func increment(_ n: Int64) -> FieldValue { FieldValue(.object(["$increment": .int(n)])) }
    public static func increment(_ n: Int) -> FieldValue { increment(Int64(n)) }
    public static func increment(_ n: Double) -> FieldValue { FieldValue(.object(["$increment": .double(n)])) }

    /// Appends the elements not already present.
    public static func arrayUnion(_ elements: [Any]) -> FieldValue { array("$arrayUnion", elements) }

    /// Removes every element equal to one given.
    public static func arrayRemove(_ elements: [Any]) -> FieldValue { array("$arrayRemove", elements) }

    /// The document's own ID as a string, resolved by the server (Hearth's `$documentId`; allowed anywhere a
    /// value is, also in arrays).
    public static func documentID() -> FieldValue { FieldValue(.object(["$documentId": .bool(true)])) }

    private static func array(_ op: String, _ elements: [Any]) -> FieldValue {
        do {
            return FieldValue(.object([op: .array(try elements.map { try WireCodec.encode($0) })]))
        } catch {
            // An element that cannot be encoded: keep the error for the write that uses this value.
            return FieldValue(.object(["$invalid": .string("\(op): \(HearthError.from(error).message)")]))
        }
    }

    /// The deferred encoding error of an `arrayUnion`/`arrayRemove` built from an unsupported value.
    var deferredError: HearthError? {
        wire["$invalid"]?.stringValue.map { HearthError.invalid($0) }
    }
}
