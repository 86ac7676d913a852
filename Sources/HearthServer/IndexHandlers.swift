import HearthEngine
import HearthModel
import HearthProtocol

/// `index`: create, list and drop declared composite indexes.
enum IndexHandlers {
    static func index(_ ctx: Context, _ req: Request) throws(HearthError) {
        let action = try req.string("action")
        switch action {
        case "create":
            let def = try definition(req.body, id: 0, state: .building)
            let created = try ctx.engine.createIndex(collectionID: def.collectionID, scope: def.scope, fields: def.fields)
            ctx.reply(req) { w in w.key("index"); write(created, into: &w) }
        case "list":
            let defs = ctx.engine.indexes
            ctx.reply(req) { w in
                w.key("indexes")
                w.beginArray()
                for d in defs { write(d, into: &w) }
                w.endArray()
            }
        case "drop":
            guard let id = try req.optionalInt("indexId", min: 1) else { throw .invalid("field \"indexId\" is required to drop an index") }
            try ctx.engine.dropIndex(id: id)
            ctx.reply(req) { _ in }
        default:
            throw .invalid("field \"action\" must be create, list or drop (got \"\(action)\")")
        }
    }

    /// `{"collection":"call_records","scope":"collection"|"collectionGroup","fields":[["f","asc"|"desc"|"array-contains"],...]}`
    static func definition(_ obj: JSONRef, id: Int64, state: IndexDefinition.State) throws(HearthError) -> IndexDefinition {
        guard let c = obj["collection"], c.kind == .string else { throw .invalid("field \"collection\" (a collection ID) is required") }
        var scope = IndexDefinition.Scope.collection
        if let s = obj["scope"], s.kind != .null {
            guard s.kind == .string, let v = IndexDefinition.Scope(rawValue: s.string!) else {
                throw .invalid("field \"scope\" must be \"collection\" or \"collectionGroup\"")
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
            do { fields.append(IndexDefinition.Field(try FieldPath.parse(items[0].string!), mode)) } catch {
                throw .invalid("fields[\(i)]: \(error.message)")
            }
        }
        let def = IndexDefinition(id: id, collectionID: c.string!, scope: scope, fields: fields, state: state)
        try def.validate()
        return def
    }

    static func write(_ d: IndexDefinition, into w: inout JSONWriter) {
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
}
