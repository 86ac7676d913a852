import HearthEngine
import HearthModel
import HearthProtocol
@testable import HearthServer
import HearthStorage
import Testing

/// The document cache keeps a document's wire form around its data (`DocumentJSON.rendering`): written from
/// the rendering, a document is byte for byte what `DocumentJSON.write` writes, whatever its path needs
/// escaped, alone or among other values.
@Suite struct DocumentRenderingTests {
    static let paths = ["c/a", "rooms/r 1/messages/m\"q\\b", "c/é😀", "c/\u{1}\t", "a/b/c/d/e/\(String(repeating: "x", count: 300))"]

    @Test(arguments: paths)
    func aRenderedDocumentIsItsWireForm(_ p: String) throws {
        let doc = StoredDocument(path: try DocumentPath(parsing: p), data: Array(#"{"n":{"$int":"1"},"s":"a\"b"}"#.utf8),
                                 createTime: Timestamp(micros: 1_700_000_000_123_456), updateTime: Timestamp(micros: -5), seq: 7)
        for count in 1...3 {
            var direct = JSONWriter()
            var rendered = JSONWriter()
            let rendering = DocumentJSON.rendering(doc)
            for w in [0, 1] {
                var writer = w == 0 ? direct : rendered
                writer.beginArray()
                for _ in 0..<count {
                    if w == 0 { DocumentJSON.write(doc, into: &writer) } else { DocumentJSON.write(doc, rendering, into: &writer) }
                }
                writer.endArray()
                if w == 0 { direct = writer } else { rendered = writer }
            }
            #expect(String(decoding: rendered.bytes, as: UTF8.self) == String(decoding: direct.bytes, as: UTF8.self))
        }
        // The rendering holds no copy of the data: with it, it is exactly the wire form.
        var one = JSONWriter()
        DocumentJSON.write(doc, into: &one)
        #expect(DocumentJSON.rendering(doc).count + doc.data.count == one.count)
    }
}
