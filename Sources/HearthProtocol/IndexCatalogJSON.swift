#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// The JSON forms of declared composite indexes: one definition as the `index` op takes and lists it
/// (`{"id":1,"collection":"call_records","scope":"collection","fields":[["customerId","asc"],["callDate","desc"]],
/// "state":"ready"}`), and the whole catalog as the store keeps it (and as `indexes.json` held it before the
/// catalog moved into the store): `{"nextId":3,"indexes":[<definition>...],"dropping":[2]}`.
public enum IndexCatalogJSON {
    /// Parses a definition's shape from a request or a stored catalog (`collection`, optional `scope`,
    /// `fields`); `id` and `state` are given by the caller. Validates it.
    /// `maxPathBytes`: the longest field path (a request's; the stored catalog, which may predate the limit,
    /// is read without one).
    public static func definition(_ obj: JSONRef, id: Int64, state: IndexDefinition.State,
                                  maxPathBytes: Int = Limits.maxFieldNameBytes) throws(HearthError) -> IndexDefinition {
        guard let c = obj["collection"], c.kind != .null else { throw .invalid("field \"collection\" (a collection ID) is required") }
        guard c.kind == .string else { throw .invalid("field \"collection\" must be a string (a collection ID), not \(c.kind.article)") }
        var scope = IndexDefinition.Scope.collection
        if let s = obj["scope"], s.kind != .null {
            guard s.kind == .string, let v = IndexDefinition.Scope(rawValue: s.string!) else {
                throw .invalid("scope must be \"collection\" or \"collectionGroup\"")
            }
            scope = v
        }
        guard let list = obj["fields"], list.kind == .array else {
            throw .invalid("field \"fields\" must be an array of [\"field\",\"asc\"|\"desc\"|\"array-contains\"]")
        }
        var fields: [IndexDefinition.Field] = []
        for (i, el) in list.elements.enumerated() {
            let items = Array(el.elements)
            guard el.kind == .array, items.count == 2, items[0].kind == .string, items[1].kind == .string,
                  let mode = IndexDefinition.Mode(rawValue: items[1].string!) else {
                throw .invalid("fields[\(i)] must be [\"field\",\"asc\"|\"desc\"|\"array-contains\"]")
            }
            do { fields.append(IndexDefinition.Field(try FieldPath.parse(items[0].string!, maxBytes: maxPathBytes), mode)) } catch {
                throw .invalid("fields[\(i)]: \(error.message)")
            }
        }
        let def = IndexDefinition(id: id, collectionID: c.string!, scope: scope, fields: fields, state: state)
        try def.validate()
        return def
    }

    /// Writes one definition (with its id and state).
    public static func write(_ d: IndexDefinition, into w: inout JSONWriter) {
        w.beginObject()
        w.key("id"); w.int(d.id)
        w.key("collection"); w.string(d.collectionID)
        w.key("scope"); w.string(d.scope.rawValue)
        w.key("fields")
        w.beginArray()
        for f in d.fields {
            w.beginArray(); w.string(f.path.description); w.string(f.mode.rawValue); w.endArray()
        }
        w.endArray()
        w.key("state"); w.string(d.state.rawValue)
        w.endObject()
    }

    /// The catalog as one JSON object (no newline).
    public static func encode(_ catalog: IndexCatalog) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("nextId"); w.int(catalog.nextID)
        w.key("indexes")
        w.beginArray()
        for d in catalog.indexes { write(d, into: &w) }
        w.endArray()
        w.key("dropping")
        w.beginArray()
        for id in catalog.dropping { w.int(id) }
        w.endArray()
        if !catalog.ttl.isEmpty {
            w.key("ttl")
            w.beginArray()
            for p in catalog.ttl {
                w.beginObject()
                w.key("collectionGroup"); w.string(p.collectionGroup)
                w.key("field"); w.string(p.field.description)
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
        return w.bytes
    }

    /// Reads a catalog written by `encode` (or an `indexes.json`, which has no `dropping`). Throws
    /// INVALID_ARGUMENT naming what is wrong.
    public static func decode(_ bytes: [UInt8]) throws(HearthError) -> IndexCatalog {
        let parser = JSONParser()
        let root = try parser.parse(bytes)
        guard root.kind == .object else { throw .invalid("index catalog: not a JSON object") }
        var catalog = IndexCatalog()
        if let n = root["nextId"] {
            guard let v = n.int64, v >= 1 else { throw .invalid("index catalog: nextId must be a positive integer") }
            catalog.nextID = v
        }
        if let list = root["indexes"] {
            guard list.kind == .array else { throw .invalid("index catalog: indexes must be an array") }
            for (i, el) in list.elements.enumerated() {
                guard el.kind == .object, let id = el["id"]?.int64, id >= 1 else {
                    throw .invalid("index catalog: indexes[\(i)] needs a positive integer id")
                }
                let state = IndexDefinition.State(rawValue: el["state"]?.string ?? "") ?? .building
                do { catalog.indexes.append(try definition(el, id: id, state: state, maxPathBytes: .max)) } catch {
                    throw error.prefixed("index catalog: indexes[\(i)]")
                }
            }
        }
        if let list = root["dropping"] {
            guard list.kind == .array else { throw .invalid("index catalog: dropping must be an array") }
            for el in list.elements {
                guard let id = el.int64, id >= 1 else { throw .invalid("index catalog: dropping holds positive integer ids") }
                catalog.dropping.append(id)
            }
        }
        if let list = root["ttl"] {
            guard list.kind == .array else { throw .invalid("index catalog: ttl must be an array") }
            for (i, el) in list.elements.enumerated() {
                guard el.kind == .object, let group = el["collectionGroup"]?.string, !group.isEmpty,
                      let fieldText = el["field"]?.string else {
                    throw .invalid("index catalog: ttl[\(i)] needs a collectionGroup and a field")
                }
                do {
                    catalog.ttl.append(TTLPolicy(collectionGroup: group, field: try FieldPath.parse(fieldText, maxBytes: .max)))
                } catch {
                    throw error.prefixed("index catalog: ttl[\(i)]")
                }
            }
        }
        let highest = (catalog.indexes.map(\.id) + catalog.dropping).max() ?? 0
        catalog.nextID = max(catalog.nextID, highest + 1)
        return catalog
    }

    /// The catalog an `indexes.json` file holds (the form older versions kept beside the store); nil when
    /// there is no such file. Errors name the file.
    public static func load(file path: String) throws(HearthError) -> IndexCatalog? {
        guard let f = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw HearthError(.unavailable, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        if ferror(f) != 0 { throw HearthError(.unavailable, "cannot read \(path): \(String(cString: strerror(errno)))") }
        do { return try decode(bytes) } catch {
            throw HearthError(.internal, "\(path): \(error.message)")
        }
    }
}
