import Foundation

/// Types `@ServerTimestamp` can hold: `Date` or `Timestamp`.
public protocol ServerTimestampWrappable {
    static func wrap(_ timestamp: Timestamp) throws -> Self
    static func unwrap(_ value: Self) throws -> Timestamp
}

extension Date: ServerTimestampWrappable {
    public static func wrap(_ timestamp: Timestamp) throws -> Date { timestamp.dateValue() }
    public static func unwrap(_ value: Date) throws -> Timestamp { Timestamp(date: value) }
}

extension Timestamp: ServerTimestampWrappable {
    public static func wrap(_ timestamp: Timestamp) throws -> Timestamp { timestamp }
    public static func unwrap(_ value: Timestamp) throws -> Timestamp { value }
}

/// Firestore's `@ServerTimestamp`: a nil value is written as `FieldValue.serverTimestamp()` by
/// `Hearth.Encoder`, so the server fills in the commit time; a missing or null field decodes as nil.
@propertyWrapper
public struct ServerTimestamp<Value: ServerTimestampWrappable & Codable>: Codable, ServerTimestampEncoding, ReferenceDecodable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    init(hearthReference: DocumentReference?, decoder: ValueDecoder) throws {
        if decoder.value is NSNull {
            wrappedValue = nil
        } else if let t = decoder.value as? Timestamp {
            wrappedValue = try Value.wrap(t)
        } else {
            throw decoder.mismatch(Timestamp.self, decoder.value)
        }
    }

    var encodedForHearth: Any {
        guard let wrappedValue, let t = try? Value.unwrap(wrappedValue) else { return FieldValue.serverTimestamp() }
        return t
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

extension ServerTimestamp: Sendable where Value: Sendable {}
extension ServerTimestamp: Equatable where Value: Equatable {}
extension ServerTimestamp: Hashable where Value: Hashable {}
