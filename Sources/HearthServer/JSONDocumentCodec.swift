import HearthModel
import HearthProtocol
import HearthStorage

/// Stores a document's fields as their canonical wire JSON, so reads splice the stored bytes into responses
/// without decoding or re-encoding them.
struct JSONDocumentCodec: DocumentCodec {
    func encode(_ fields: MapValue) -> [UInt8] { FieldsJSON.encode(fields) }
    func decode(_ data: [UInt8]) throws(HearthError) -> MapValue { try FieldsJSON.decode(data) }
}
