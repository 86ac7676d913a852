/// The encoded part of a pushed line that every listener of one shared change set gets (`Dispatcher`'s event
/// cache): memory of its own, reused from one change set to the next, so that each delivery reads it without
/// reference counting. Loop thread only.
struct SharedLineBody: ~Copyable {
    private var start: UnsafeMutableRawPointer?
    private var count = 0
    private var capacity = 0

    init() {}

    deinit { start?.deallocate() }

    /// Valid until the next `set`.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: start, count: count) }

    mutating func set(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > capacity {
            start?.deallocate()
            capacity = max(bytes.count, 2 * capacity)
            start = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
        }
        if let src = bytes.baseAddress, let start { start.copyMemory(from: src, byteCount: bytes.count) }
        count = bytes.count
    }
}
