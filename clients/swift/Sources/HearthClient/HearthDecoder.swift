import Foundation

extension Hearth {
    /// Decodes document data into `Decodable` values (Firestore's `Firestore.Decoder`). Timestamps decode as
    /// `Date` or `Timestamp`; integers decode into any integer type that holds them and into floating
    /// types; integral doubles into integers; `@DocumentID` properties get the document's ID or reference.
    /// Errors are `DecodingError`s whose coding path and description name the field.
    public struct Decoder: Sendable {
        public init() {}

        /// `data` is a value as `DocumentSnapshot.data()` returns it; `reference` feeds `@DocumentID`.
        public func decode<T: Decodable>(_ type: T.Type, from data: Any, in reference: DocumentReference? = nil) throws -> T {
            try ValueDecoder(value: data, codingPath: [], reference: reference).unbox(data, as: T.self)
        }
    }
}

/// The `Swift.Decoder` behind `Hearth.Decoder`, over one value of the decoded tree.
struct ValueDecoder: Swift.Decoder {
    let value: Any
    let codingPath: [CodingKey]
    let reference: DocumentReference?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let map = value as? [String: Any] else { throw mismatch([String: Any].self, value) }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, map: map))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard let array = value as? [Any] else { throw mismatch([Any].self, value) }
        return UnkeyedContainer(decoder: self, array: array)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleContainer(decoder: self) }

    func child(_ value: Any, _ key: CodingKey) -> ValueDecoder {
        ValueDecoder(value: value, codingPath: codingPath + [key], reference: reference)
    }

    func mismatch(_ expected: Any.Type, _ found: Any) -> DecodingError {
        let where_ = codingPath.isEmpty ? "the document" : "field \"\(codingPath.map(\.stringValue).joined(separator: "."))\""
        let what = found is NSNull ? "null" : "\(type(of: found))"
        return .typeMismatch(expected, .init(codingPath: codingPath, debugDescription: "expected \(expected) at \(where_), found \(what)"))
    }

    /// Decodes `value` (this decoder's own value) as `T`, handling Hearth's value types directly.
    func unbox<T: Decodable>(_ value: Any, as type: T.Type) throws -> T {
        if let t = value as? Timestamp {
            if T.self == Date.self { return t.dateValue() as! T }
            if T.self == Timestamp.self { return t as! T }
        }
        if T.self == Date.self || T.self == Timestamp.self || T.self == Data.self || T.self == GeoPoint.self
            || T.self == DocumentReference.self || T.self == String.self || T.self == Bool.self {
            guard let v = value as? T, !(value is NSNull) else { throw mismatch(T.self, value) }
            return v
        }
        if let numeric = T.self as? DecodableNumber.Type {
            guard let v = numeric.init(hearthValue: value) else { throw mismatch(T.self, value) }
            return v as! T
        }
        if let special = T.self as? ReferenceDecodable.Type { return try special.init(hearthReference: reference, decoder: self) as! T }
        return try T(from: self)
    }

    private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: ValueDecoder
        let map: [String: Any]
        var codingPath: [CodingKey] { decoder.codingPath }
        var allKeys: [Key] { map.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { map[key.stringValue] != nil }

        private func value(_ key: Key) throws -> Any {
            guard let v = map[key.stringValue] else {
                let at = codingPath.isEmpty ? "the document" : "field \"\(codingPath.map(\.stringValue).joined(separator: "."))\""
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                    debugDescription: "no field \"\(key.stringValue)\" in \(at) (fields present: \(map.keys.sorted().joined(separator: ", ")))"))
            }
            return v
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) is NSNull }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if let special = T.self as? ReferenceDecodable.Type {
                return try special.init(hearthReference: decoder.reference, decoder: decoder.child(map[key.stringValue] ?? NSNull(), key)) as! T
            }
            let v = try value(key)
            return try decoder.child(v, key).unbox(v, as: T.self)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder.child(try value(key), key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
            try decoder.child(try value(key), key).unkeyedContainer()
        }

        func superDecoder() throws -> Swift.Decoder { decoder.child(map["super"] ?? NSNull(), IndexKey(stringValue: "0")!) }
        func superDecoder(forKey key: Key) throws -> Swift.Decoder { decoder.child(map[key.stringValue] ?? NSNull(), key) }
    }

    private struct UnkeyedContainer: UnkeyedDecodingContainer {
        let decoder: ValueDecoder
        let array: [Any]
        var currentIndex = 0
        var codingPath: [CodingKey] { decoder.codingPath }
        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }

        init(decoder: ValueDecoder, array: [Any]) {
            self.decoder = decoder
            self.array = array
        }

        private mutating func next() throws -> (Any, CodingKey) {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "the array has only \(array.count) elements"))
            }
            defer { currentIndex += 1 }
            return (array[currentIndex], IndexKey(currentIndex))
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, array[currentIndex] is NSNull else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (v, key) = try next()
            return try decoder.child(v, key).unbox(v, as: T.self)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let (v, key) = try next()
            return try decoder.child(v, key).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
            let (v, key) = try next()
            return try decoder.child(v, key).unkeyedContainer()
        }

        mutating func superDecoder() throws -> Swift.Decoder {
            let (v, key) = try next()
            return decoder.child(v, key)
        }
    }

    private struct SingleContainer: SingleValueDecodingContainer {
        let decoder: ValueDecoder
        var codingPath: [CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { decoder.value is NSNull }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(decoder.value, as: T.self) }
    }
}

/// Numbers decoded from Hearth's `Int` and `Double` values, converting only when exact.
protocol DecodableNumber {
    init?(hearthValue: Any)
}

extension DecodableNumber where Self: BinaryInteger {
    init?(hearthValue: Any) {
        if let i = hearthValue as? Int, let v = Self(exactly: i) { self = v; return }
        if let d = hearthValue as? Double, let v = Self(exactly: d) { self = v; return }
        return nil
    }
}

extension Int: DecodableNumber {}
extension Int8: DecodableNumber {}
extension Int16: DecodableNumber {}
extension Int32: DecodableNumber {}
extension Int64: DecodableNumber {}
extension UInt: DecodableNumber {}
extension UInt8: DecodableNumber {}
extension UInt16: DecodableNumber {}
extension UInt32: DecodableNumber {}
extension UInt64: DecodableNumber {}

extension Double: DecodableNumber {
    init?(hearthValue: Any) {
        if let d = hearthValue as? Double { self = d; return }
        if let i = hearthValue as? Int { self = Double(i); return }
        return nil
    }
}

extension Float: DecodableNumber {
    init?(hearthValue: Any) {
        guard let d = Double(hearthValue: hearthValue) else { return nil }
        self = Float(d)
    }
}
