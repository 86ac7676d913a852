import Foundation

/// Builds the wire form of single writes: `{"op":"set"|"create"|"update"|"delete","path":..,...}`. The same
/// object is a request on its own or, without an `id`, an entry of a `commit`'s `writes`.
enum WriteEncoding {
    static func set(_ path: String, _ data: [String: Any], merge: Bool) throws -> [String: JSON] {
        var w: [String: JSON] = ["op": .string("set"), "path": .string(path), "data": .object(try WireCodec.encodeMap(data))]
        if merge { w["merge"] = .bool(true) }
        return w
    }

    static func set(_ path: String, _ data: [String: Any], mergeFields: [Any]) throws -> [String: JSON] {
        var w = try set(path, data, merge: false)
        w["mergeFields"] = .array(try mergeFields.map { .string(try FieldPath.wireForm(of: $0)) })
        return w
    }

    static func create(_ path: String, _ data: [String: Any]) throws -> [String: JSON] {
        ["op": .string("create"), "path": .string(path), "data": .object(try WireCodec.encodeMap(data))]
    }

    /// Keys are dotted field paths (`String`) or `FieldPath`s.
    static func update(_ path: String, _ fields: [AnyHashable: Any]) throws -> [String: JSON] {
        var data: [String: JSON] = [:]
        for (key, value) in fields {
            let field = try FieldPath.wireForm(of: key.base)
            guard data[field] == nil else { throw HearthError.invalid("updateData names field \(field) twice") }
            data[field] = try WireCodec.encode(value, at: field)
        }
        return ["op": .string("update"), "path": .string(path), "data": .object(data)]
    }

    static func delete(_ path: String) -> [String: JSON] {
        ["op": .string("delete"), "path": .string(path)]
    }

    /// `{"op":"verify","path":..,"precondition":..}`: checks without writing (transactions).
    static func verify(_ path: String, _ precondition: JSON) -> [String: JSON] {
        ["op": .string("verify"), "path": .string(path), "precondition": precondition]
    }

    /// The precondition that a document is as it was read: its update time, or absent.
    static func precondition(readAs document: WireDocument?) -> JSON {
        if let t = document?.updateTime { return .object(["updateTime": .string(t.rfc3339)]) }
        return .object(["exists": .bool(false)])
    }
}
