/// Growable bytes in manually managed memory, for `JSONWriter`: an append is a capacity check and a
/// store, with no uniqueness check per byte (the writer checks once per call for copy-on-write). The state
/// lives behind a pointer so that accesses skip the dynamic exclusivity checks of class stored properties.
final class ByteStorage {
    struct State {
        var base: UnsafeMutablePointer<UInt8>
        var count: Int
        var capacity: Int
    }

    private let state: UnsafeMutablePointer<State>

    var base: UnsafeMutablePointer<UInt8> {
        @inline(__always) get { state.pointee.base }
    }

    var count: Int {
        @inline(__always) get { state.pointee.count }
        @inline(__always) set { state.pointee.count = newValue }
    }

    var capacity: Int {
        @inline(__always) get { state.pointee.capacity }
    }

    init(capacity: Int) {
        let c = Swift.max(capacity, 16)
        state = .allocate(capacity: 1)
        state.initialize(to: State(base: .allocate(capacity: c), count: 0, capacity: c))
    }

    deinit {
        state.pointee.base.deallocate()
        state.deallocate()
    }

    func copy() -> ByteStorage {
        let c = ByteStorage(capacity: capacity)
        c.base.update(from: base, count: count)
        c.count = count
        return c
    }

    /// Makes room for `n` more bytes.
    @inline(__always)
    func reserve(_ n: Int) {
        if capacity &- count < n { grow(n) }
    }

    @inline(never)
    private func grow(_ n: Int) {
        let newCapacity = Swift.max(capacity * 2, count + n)
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        fresh.update(from: base, count: count)
        base.deallocate()
        state.pointee.base = fresh
        state.pointee.capacity = newCapacity
    }

    /// Drops the contents; memory above `keep` bytes is released.
    func removeAll(keep: Int) {
        count = 0
        if capacity > keep {
            base.deallocate()
            let c = Swift.max(keep, 16)
            state.pointee.base = .allocate(capacity: c)
            state.pointee.capacity = c
        }
    }

    @inline(__always)
    func append(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count &+= 1
    }

    /// Appends without a capacity check: the caller reserved room.
    @inline(__always)
    func appendReserved(_ b: UInt8) {
        base[count] = b
        count &+= 1
    }

    @inline(__always)
    func append(_ p: UnsafeRawPointer, count n: Int) {
        guard n > 0 else { return }
        reserve(n)
        (base + count).update(from: p.assumingMemoryBound(to: UInt8.self), count: n)
        count &+= n
    }

    @inline(__always)
    func append(_ s: StaticString) {
        append(s.utf8Start, count: s.utf8CodeUnitCount)
    }
}
