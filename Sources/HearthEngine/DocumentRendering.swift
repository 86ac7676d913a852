import HearthModel

/// A document version's rendering as the document cache keeps it: around the document's stored data rather
/// than with a copy of it, `head` then the data then `tail` (the server's wire form of a document is
/// `{"path":…,"id":…,"data":` + data + `,"createTime":…,"updateTime":…}`). Opaque bytes to the engine, made
/// by the server from the document alone.
public struct DocumentRendering: Sendable, Equatable {
    /// `head` then `tail`.
    let bytes: [UInt8]
    let headCount: Int

    public init(bytes: [UInt8], headCount: Int) {
        precondition(headCount >= 0 && headCount <= bytes.count, "a rendering's head is part of its bytes")
        self.bytes = bytes
        self.headCount = headCount
    }

    /// Bytes it holds (the document's data aside).
    public var count: Int { bytes.count }

    /// Bytes of the whole rendered document whose stored data is `data`.
    public func renderedCount(around data: [UInt8]) -> Int { bytes.count + data.count }

    /// Calls `body` with the rendering of a document whose stored data is `data`, in its three parts.
    @inline(__always)
    public func withParts<E: Error>(around data: [UInt8], _ body: (RenderedParts) throws(E) -> Void) throws(E) {
        let r: Result<Void, E> = bytes.withUnsafeBytes { b in
            data.withUnsafeBytes { d in
                let parts = RenderedParts(head: UnsafeRawBufferPointer(rebasing: b[..<headCount]), data: d,
                                          tail: UnsafeRawBufferPointer(rebasing: b[headCount...]))
                do throws(E) { try body(parts); return .success(()) } catch { return .failure(error) }
            }
        }
        try r.get()
    }
}

/// A rendered document in its three parts, valid only during the call that hands them out: write `head`,
/// then `data`, then `tail`.
public struct RenderedParts {
    public let head: UnsafeRawBufferPointer
    public let data: UnsafeRawBufferPointer
    public let tail: UnsafeRawBufferPointer
}

/// Where `PreparedQuery.stream` writes result documents, rendered (the server: its response writer).
public protocol RenderedSink {
    /// Bytes it can take without growing.
    var room: Int { get }
    /// Makes room for `n` more bytes.
    mutating func reserve(_ n: Int)
    /// Writes one rendered document. Called inside a cache shard's lock: it must only copy the parts, into
    /// room already made (one byte more than the parts, for a separator).
    mutating func write(_ parts: RenderedParts) throws(HearthError)
}
