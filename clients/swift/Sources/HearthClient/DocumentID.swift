import Foundation

/// Types `@DocumentID` can hold: `String` (the ID) or `DocumentReference`.
public protocol DocumentIDWrappable {
    static func wrap(_ reference: DocumentReference) throws -> Self
}

extension String: DocumentIDWrappable {
    public static func wrap(_ reference: DocumentReference) throws -> String { reference.documentID }
}

extension DocumentReference: DocumentIDWrappable {
    public static func wrap(_ reference: DocumentReference) throws -> Self { reference as! Self }
}

/// Firestore's `@DocumentID`: filled with the document's ID (or reference) by `Hearth.Decoder`, left out of
/// the data by `Hearth.Encoder`. Other coders encode and decode the wrapped value as a plain optional.
@propertyWrapper
public struct DocumentID<Value: DocumentIDWrappable & Codable>: Codable, DocumentIDMarker, ReferenceDecodable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    init(hearthReference: DocumentReference?, decoder: ValueDecoder) throws {
        wrappedValue = try hearthReference.map { try Value.wrap($0) }
    }

    public init(from decoder: Swift.Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: Swift.Encoder) throws {
        var c = encoder.singleValueContainer()
        if let wrappedValue { try c.encode(wrappedValue) } else { try c.encodeNil() }
    }
}

extension DocumentID: Sendable where Value: Sendable {}
extension DocumentID: Equatable where Value: Equatable {}
extension DocumentID: Hashable where Value: Hashable {}
