import HearthEngine
import HearthModel
import HearthProtocol

/// `index`: create, list and drop declared composite indexes. A create or a drop that changes the catalog is
/// answered once the catalog change is durable (it is stored with a commit, docs/storage.md "Index catalog"),
/// like a write; a following read on the connection waits for it. So is an answer read from the catalog (a
/// listing, a create of an existing shape, a drop of an unknown id): the catalog in memory can hold changes
/// not yet durable (`Context.replyFromCatalog`).
enum IndexHandlers {
    static func index(_ ctx: Context, _ req: Request) throws(HearthError) {
        let action = try req.string("action")
        let used: [String: Set<String>] = ["create": ["collection", "scope", "fields"], "list": [], "drop": ["indexId"]]
        if let fields = used[action] { try req.refuseFields(notIn: fields, for: action) }
        switch action {
        case "create":
            let def = try IndexCatalogJSON.definition(req.body, id: 0, state: .building)
            var slot: ResponseQueue.Slot?
            var declared: IndexDefinition?
            let session = ctx.session, dispatcher = ctx.dispatcher, id = req.id
            let (created, isNew) = try ctx.engine.createIndex(collectionID: def.collectionID, scope: def.scope, fields: def.fields) { result in
                guard let slot, let declared else { return }
                let line: [UInt8]
                switch result {
                case .success: line = dispatcher.okLine(id) { w in w.key("index"); IndexCatalogJSON.write(declared, into: &w) }
                case .failure(let error): line = dispatcher.errorLine(error.prefixed("index"), id: id)
                }
                session.endWrite(slot, response: line)
            }
            if isNew {
                declared = created
                slot = session.beginWrite()
            } else {
                ctx.replyFromCatalog(req) { w in w.key("index"); IndexCatalogJSON.write(created, into: &w) }
            }
        case "list":
            let defs = ctx.engine.indexes
            ctx.replyFromCatalog(req) { w in
                w.key("indexes")
                w.beginArray()
                for d in defs { IndexCatalogJSON.write(d, into: &w) }
                w.endArray()
            }
        case "drop":
            guard let indexID = try req.optionalInt("indexId", min: 1) else { throw .invalid("field \"indexId\" is required to drop an index") }
            var slot: ResponseQueue.Slot?
            let session = ctx.session, dispatcher = ctx.dispatcher, id = req.id
            do {
                try ctx.engine.dropIndex(id: indexID) { result in
                    guard let slot else { return }
                    let line: [UInt8]
                    switch result {
                    case .success: line = dispatcher.okLine(id) { _ in }
                    case .failure(let error): line = dispatcher.errorLine(error.prefixed("index"), id: id)
                    }
                    session.endWrite(slot, response: line)
                }
            } catch {
                guard error.code == .notFound else { throw error }
                return ctx.refuseFromCatalog(req, error)   // dropped by a commit perhaps not yet durable
            }
            slot = session.beginWrite()
        default:
            throw .invalid("field \"action\" must be create, list or drop (got \"\(action)\")")
        }
    }
}
