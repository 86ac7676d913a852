import Foundation

/// Values the decoder builds itself, from the document reference or without a field present.
protocol ReferenceDecodable {
    init(hearthReference: DocumentReference?, decoder: ValueDecoder) throws
}

/// Marks `@DocumentID` for the encoder, which leaves it out of the document.
protocol DocumentIDMarker {}

/// Lets the encoder write a nil `@ServerTimestamp` as the server-timestamp transform.
protocol ServerTimestampEncoding {
    var encodedForHearth: Any { get }
}

extension DocumentReference: Codable {
    /// Only `Hearth.Encoder` can encode a reference (it passes it through); other encoders fail.
    public func encode(to encoder: Swift.Encoder) throws {
        throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription: "a DocumentReference can only be encoded by Hearth.Encoder"))
    }

    /// Only `Hearth.Decoder` can decode a reference; other decoders fail.
    public convenience init(from decoder: Swift.Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a DocumentReference can only be decoded by Hearth.Decoder"))
    }
}
