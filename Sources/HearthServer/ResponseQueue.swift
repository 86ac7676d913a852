import HearthProtocol

/// Keeps a connection's responses in request order while some of them (durable writes) complete later.
///
/// While nothing is outstanding, responses go straight out. Once a write is outstanding, every later response
/// takes a slot behind it and leaves only when every slot before it has been filled.
final class ResponseQueue {
    /// A response's place: its line, or the writer a reader thread built it in, sent from the writer's own
    /// buffer and then handed back for the next read (no copy into a line of its own: `Context.readOnReader`).
    final class Slot {
        var line: [UInt8]?
        var written: JSONWriter?
        var isFilled: Bool { line != nil || written != nil }
    }

    private var slots: [Slot] = []
    private var head = 0

    /// Where a sent response's writer goes (`ReaderWriters.give` in the daemon).
    private let recycle: (consuming JSONWriter) -> Void

    init(recycle: @escaping (consuming JSONWriter) -> Void = { ReaderWriters.give($0) }) {
        self.recycle = recycle
    }

    /// True when a response is still awaited.
    var hasOutstanding: Bool { head < slots.count }

    /// Reserves the next position for a response that comes later.
    func reserve() -> Slot {
        let s = Slot()
        slots.append(s)
        return s
    }

    /// Queues an already-made response behind the outstanding ones.
    func enqueue(_ bytes: [UInt8]) {
        let s = Slot()
        s.line = bytes
        slots.append(s)
    }

    /// Fills `slot` and sends, in order, every response now ready to go out (`emit` copies the bytes).
    func fill(_ slot: Slot, with bytes: [UInt8], emit: (UnsafeRawBufferPointer) -> Void) {
        slot.line = bytes
        emitReady(emit)
    }

    /// Fills `slot` with the writer a response was built in, and sends every response now ready to go out; a
    /// sent writer is recycled once `emit` has returned.
    func fill(_ slot: Slot, written: consuming JSONWriter, emit: (UnsafeRawBufferPointer) -> Void) {
        slot.written = written
        emitReady(emit)
    }

    private func emitReady(_ emit: (UnsafeRawBufferPointer) -> Void) {
        while head < slots.count, slots[head].isFilled {
            let s = slots[head]
            head += 1
            if let line = s.line.take() {
                line.withUnsafeBytes(emit)
            } else if let w = s.written.take() {     // moved out of the slot: the only reference to its buffer
                w.withBytes(emit)
                recycle(consume w)
            }
        }
        if head == slots.count {
            slots.removeAll(keepingCapacity: slots.count <= 64)
            head = 0
        } else if head > 1024 {
            slots.removeFirst(head)
            head = 0
        }
    }
}
