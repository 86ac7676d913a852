import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// Stores a document's fields as their canonical wire JSON, so reads splice the stored bytes into responses
/// without decoding or re-encoding them. `verify` (and `decode`, which fails for everything `verify` rejects)
/// guarantees that bytes read from the store are one JSON object in valid UTF-8 without a raw line break
/// before the engine lets them be spliced (docs/storage.md, "Checksums").
package struct JSONDocumentCodec: DocumentCodec {
    package init() {}
    let json = FieldsJSON()
    package func encode(_ fields: MapValue) -> [UInt8] { json.encodeFields(fields) }
    package func decode(_ data: [UInt8]) throws(HearthError) -> MapValue {
        try json.checkNoLineBreak(data)
        return try json.decodeFields(data)
    }
    package func verify(_ data: [UInt8]) throws(HearthError) { try json.verifyStored(data) }
}

/// Stores the index catalog as JSON (`IndexCatalogJSON`), readable with `sqlite3` in the store's
/// `index_catalog` table.
struct JSONIndexCatalogCodec: IndexCatalogCodec {
    func encode(_ catalog: IndexCatalog) -> [UInt8] { IndexCatalogJSON.encode(catalog) }
    func decode(_ data: [UInt8]) throws(HearthError) -> IndexCatalog { try IndexCatalogJSON.decode(data) }
}
