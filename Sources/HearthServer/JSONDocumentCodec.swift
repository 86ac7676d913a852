import HearthModel
import HearthProtocol
import HearthStorage

/// Stores a document's fields as their canonical wire JSON, so reads splice the stored bytes into responses
/// without decoding or re-encoding them.
package struct JSONDocumentCodec: DocumentCodec {
    package init() {}
    let json = FieldsJSON()
    package func encode(_ fields: MapValue) -> [UInt8] { json.encodeFields(fields) }
    package func decode(_ data: [UInt8]) throws(HearthError) -> MapValue { try json.decodeFields(data) }
}
