/// Keeps a connection's responses in request order while some of them (durable writes) complete later.
///
/// While nothing is outstanding, responses go straight out. Once a write is outstanding, every later response
/// takes a slot behind it and leaves only when every slot before it has been filled.
final class ResponseQueue {
    final class Slot {
        var bytes: [UInt8]?
    }

    private var slots: [Slot] = []
    private var head = 0

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
        s.bytes = bytes
        slots.append(s)
    }

    /// Fills `slot` and returns, in order, every response now ready to go out.
    func fill(_ slot: Slot, with bytes: [UInt8], emit: ([UInt8]) -> Void) {
        slot.bytes = bytes
        while head < slots.count, let b = slots[head].bytes {
            emit(b)
            head += 1
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
