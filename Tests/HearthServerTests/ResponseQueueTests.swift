@testable import HearthProtocol
@testable import HearthServer
import Testing

/// Responses leave in request order whatever order they are filled in; one built in a reader's writer is sent
/// from that writer's buffer, which then comes back alone (no other reference: reusing it copies nothing).
@Suite struct ResponseQueueTests {
    final class Recycled {
        var writers: [JSONWriter] = []
        var bases: [UnsafeMutablePointer<UInt8>] { writers.map(\.storage.base) }
        /// Whether each recycled writer's buffer has no other reference, once the queue has let go of it.
        var alone: [Bool] {
            (0..<writers.count).map { isKnownUniquelyReferenced(&writers[$0].storage) }
        }
    }

    private static func writer(_ text: String) -> JSONWriter {
        var w = JSONWriter(capacity: 64)
        w.string(text)
        return w
    }

    @Test func writtenResponsesKeepTheirPlaceAndTheirWritersComeBackAlone() {
        let recycled = Recycled()
        let q = ResponseQueue(recycle: { recycled.writers.append($0) })
        var sent: [String] = []
        let emit: (UnsafeRawBufferPointer) -> Void = { sent.append(String(decoding: $0, as: UTF8.self)) }
        let first = q.reserve(), second = q.reserve(), third = q.reserve(), fourth = q.reserve()

        let two = Self.writer("two"), four = Self.writer("four")
        let twoBase = two.storage.base, fourBase = four.storage.base
        q.fill(fourth, written: consume four, emit: emit)   // the queue's reference is the only one
        q.fill(second, written: consume two, emit: emit)
        q.fill(third, with: Array("three".utf8), emit: emit)
        #expect(sent.isEmpty)                        // all behind the first
        #expect(recycled.bases.isEmpty)              // none sent: none recycled
        #expect(q.hasOutstanding)
        q.fill(first, with: Array("one".utf8), emit: emit)
        #expect(sent == ["one", #""two""#, "three", #""four""#])
        #expect(recycled.bases == [twoBase, fourBase])
        #expect(recycled.alone == [true, true])
        #expect(!q.hasOutstanding)

        // Nothing outstanding: a written response goes straight out.
        let five = q.reserve()
        q.fill(five, written: Self.writer("five"), emit: emit)
        #expect(sent.last == #""five""#)
        #expect(recycled.alone == [true, true, true])
    }

    /// A writer reset while another shares its buffer leaves the bytes to the other, copying nothing.
    @Test func aSharedWriterResetLeavesTheBytesToTheOther() {
        var w = Self.writer("kept")
        let other = w
        w.reset()
        #expect(w.count == 0)
        #expect(w.storage !== other.storage)
        #expect(String(decoding: other.bytes, as: UTF8.self) == #""kept""#)
        w.string("new")
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""new""#)
    }
}
