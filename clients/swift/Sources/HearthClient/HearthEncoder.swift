import Foundation

extension Hearth {
    /// Encodes `Encodable` values into document data (Firestore's `Firestore.Encoder`). `Date`, `Timestamp`,
    /// `Data`, `GeoPoint`, `DocumentReference` and `FieldValue` are kept as they are (so they reach the wire
    /// as typed values), `@DocumentID` properties are left out, a nil `@ServerTimestamp` becomes
    /// `FieldValue.serverTimestamp()`, and nil optionals are omitted. The top-level value must encode as a
    /// keyed container (a struct or class), since a document is a map.
    public struct Encoder: Sendable {
        public init() {}

        public func encode<T: Encodable>(_ value: T) throws -> [String: Any] {
            let encoded = try ValueEncoder.box(value, codingPath: [])
            guard let map = encoded as? [String: Any] else {
                throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "a document must encode as a map, not \(type(of: encoded))"))
            }
            return map
        }
    }
}

/// Marks values the encoder passes through untouched.
protocol PassthroughEncodable {}
extension Date: PassthroughEncodable {}
extension Timestamp: PassthroughEncodable {}
extension Data: PassthroughEncodable {}
extension GeoPoint: PassthroughEncodable {}
extension DocumentReference: PassthroughEncodable {}
extension FieldValue: PassthroughEncodable {}
extension NSNull: PassthroughEncodable {}

/// Reference nodes the containers fill in; `finish` turns them into plain `[String: Any]` / `[Any]`.
private final class MapNode { var items: [String: Any] = [:] }
private final class ArrayNode { var items: [Any] = [] }

private func finish(_ v: Any) -> Any {
    if let m = v as? MapNode { return m.items.mapValues(finish) }
    if let a = v as? ArrayNode { return a.items.map(finish) }
    return v
}

/// The `Swift.Encoder` behind `Hearth.Encoder`.
final class ValueEncoder: Swift.Encoder {
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    fileprivate var root: Any?

    init(codingPath: [CodingKey]) { self.codingPath = codingPath }

    /// The value's encoded form: a passthrough value, a primitive, or a finished map/array.
    static func box<T: Encodable>(_ value: T, codingPath: [CodingKey]) throws -> Any {
        if let v = value as? PassthroughEncodable { return v }
        if let st = value as? ServerTimestampEncoding { return st.encodedForHearth }
        let e = ValueEncoder(codingPath: codingPath)
        try value.encode(to: e)
        return finish(e.root ?? MapNode())
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let node = (root as? MapNode) ?? MapNode()
        root = node
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        let node = (root as? ArrayNode) ?? ArrayNode()
        root = node
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleContainer(encoder: self) }

    private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: MapNode
        let codingPath: [CodingKey]

        mutating func encodeNil(forKey key: Key) throws { node.items[key.stringValue] = NSNull() }
        mutating func encode(_ value: Bool, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: String, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Double, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Float, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Int, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Int8, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Int16, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Int32, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: Int64, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: UInt, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { node.items[key.stringValue] = value }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { node.items[key.stringValue] = value }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if value is DocumentIDMarker { return }
            node.items[key.stringValue] = try ValueEncoder.box(value, codingPath: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let child = MapNode()
            node.items[key.stringValue] = child
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
            let child = ArrayNode()
            node.items[key.stringValue] = child
            return UnkeyedContainer(node: child, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> Swift.Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

        mutating func superEncoder(forKey key: Key) -> Swift.Encoder {
            let child = MapNode()
            node.items[key.stringValue] = child
            let e = ValueEncoder(codingPath: codingPath + [key])
            e.root = child
            return e
        }
    }

    private struct UnkeyedContainer: UnkeyedEncodingContainer {
        let node: ArrayNode
        let codingPath: [CodingKey]
        var count: Int { node.items.count }

        private var indexKey: CodingKey { IndexKey(node.items.count) }

        mutating func encodeNil() throws { node.items.append(NSNull()) }
        mutating func encode(_ value: Bool) throws { node.items.append(value) }
        mutating func encode(_ value: String) throws { node.items.append(value) }
        mutating func encode(_ value: Double) throws { node.items.append(value) }
        mutating func encode(_ value: Float) throws { node.items.append(value) }
        mutating func encode(_ value: Int) throws { node.items.append(value) }
        mutating func encode(_ value: Int64) throws { node.items.append(value) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            node.items.append(try ValueEncoder.box(value, codingPath: codingPath + [indexKey]))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let child = MapNode()
            let path = codingPath + [indexKey]
            node.items.append(child)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(node: child, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
            let child = ArrayNode()
            let path = codingPath + [indexKey]
            node.items.append(child)
            return UnkeyedContainer(node: child, codingPath: path)
        }

        mutating func superEncoder() -> Swift.Encoder {
            let child = MapNode()
            let e = ValueEncoder(codingPath: codingPath + [indexKey])
            node.items.append(child)
            e.root = child
            return e
        }
    }

    private struct SingleContainer: SingleValueEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [CodingKey] { encoder.codingPath }

        mutating func encodeNil() throws { encoder.root = NSNull() }
        mutating func encode(_ value: Bool) throws { encoder.root = value }
        mutating func encode(_ value: String) throws { encoder.root = value }
        mutating func encode(_ value: Double) throws { encoder.root = value }
        mutating func encode(_ value: Float) throws { encoder.root = value }
        mutating func encode(_ value: Int) throws { encoder.root = value }
        mutating func encode(_ value: Int64) throws { encoder.root = value }
        mutating func encode<T: Encodable>(_ value: T) throws {
            encoder.root = try ValueEncoder.box(value, codingPath: codingPath)
        }
    }
}

/// An array index as a coding key (for coding paths in errors).
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { guard let i = Int(stringValue) else { return nil }; intValue = i }
    init?(intValue: Int) { self.intValue = intValue }
}
