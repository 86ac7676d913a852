import HearthModel

/// A document as a scan meets it, its bytes borrowed from the store: valid only during the visitor call that
/// receives it (`StoreReads.visitIndex`). Nothing is allocated for it, which is the point: a query whose
/// result is exactly its index scan streams each row into its response without materializing documents.
public struct BorrowedDocument {
    /// The index entry's key.
    public let key: UnsafeRawBufferPointer
    /// The parent collection's path, UTF-8 (`users/u1/feed`).
    public let collection: UnsafeRawBufferPointer
    /// The document ID, UTF-8.
    public let id: UnsafeRawBufferPointer
    /// The stored fields, as the engine's codec encoded them (not yet verified by the codec: see
    /// `DocumentCodec.verify(bytes:)`).
    public let data: UnsafeRawBufferPointer
    public let createTime: Timestamp
    public let updateTime: Timestamp
    public let seq: UInt64

    public init(key: UnsafeRawBufferPointer, collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
                data: UnsafeRawBufferPointer, createTime: Timestamp, updateTime: Timestamp, seq: UInt64) {
        self.key = key
        self.collection = collection
        self.id = id
        self.data = data
        self.createTime = createTime
        self.updateTime = updateTime
        self.seq = seq
    }

    /// Lends `doc` (and `key`) as a borrowed document for the duration of `body`.
    public static func lending<R>(_ doc: StoredDocument, key: [UInt8],
                                  _ body: (BorrowedDocument) throws(HearthError) -> R) throws(HearthError) -> R {
        let segments = doc.path.path.segments
        let collection = Array(segments.dropLast().joined(separator: "/").utf8)
        let id = Array(doc.path.id.utf8)
        let r: Result<R, HearthError> = key.withUnsafeBytes { k in collection.withUnsafeBytes { c in id.withUnsafeBytes { i in
            doc.data.withUnsafeBytes { d in
                do throws(HearthError) {
                    return .success(try body(BorrowedDocument(key: k, collection: c, id: i, data: d, createTime: doc.createTime,
                                                              updateTime: doc.updateTime, seq: doc.seq)))
                } catch { return .failure(error) }
            }
        } } }
        return try r.get()
    }
}

extension StoreReads {
    /// The default `visitIndex`: `scanIndex`, each hit lent in turn.
    public func visitIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (BorrowedDocument) throws(HearthError) -> Void) throws(HearthError) -> Int {
        let hits = try scanIndex(from: lower, to: upper, reverse: reverse, limit: limit)
        for hit in hits { try BorrowedDocument.lending(hit.document, key: hit.key, visit) }
        return hits.count
    }
}
