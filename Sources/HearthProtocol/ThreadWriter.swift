/// A writer per thread for encodings that end as arrays of their own (a document's stored bytes on every
/// write): its buffer is kept from one encoding to the next, so an encoding costs one allocation, its result.
/// `withWriter` moves the writer out of its slot while it runs (a writer must be uniquely referenced, or every
/// append copies it); a nested use gets a new writer. A buffer grown past `keptCapacity` is let go once the
/// encoding is done, so a thread keeps at most that much between encodings.
enum ThreadWriter {
    final class Slot { var writer: JSONWriter? }

    /// The largest buffer a thread keeps between encodings.
    static let keptCapacity = 64 * 1024

    private static let slots = PerThread { Slot() }
    private static var slot: Slot { slots.current }

    /// Runs `body` with this thread's writer, empty.
    static func withWriter<R>(_ body: (inout JSONWriter) -> R) -> R {
        let s = slot
        var w = s.writer.take() ?? JSONWriter(capacity: 1024)
        let r = body(&w)
        if w.capacity <= keptCapacity {
            w.reset()
            s.writer = consume w
        }
        return r
    }

    /// The capacity of the writer this thread keeps, if it keeps one (tests).
    static var keptWriterCapacity: Int? { slot.writer?.capacity }
}
