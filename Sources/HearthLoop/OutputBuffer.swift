#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A contiguous, growable byte queue: bytes are appended at the tail and consumed from the head.
///
/// Used for connection output. It allocates nothing until the first append, grows geometrically,
/// compacts instead of growing when consumed space at the head is enough, and can give back large
/// capacity once empty (``trim(retaining:)``). Not thread-safe; memory is owned manually, so the owner
/// must call ``deallocate()`` exactly once (TCPConnection does it in its close callback).
struct OutputBuffer {
    private(set) var storage: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private var head = 0
    private var tail = 0
    /// The capacity last given back (`deallocate`): a buffer that empties and refills every loop turn (a
    /// subscriber sent a batch of events each turn) grows from `minimumCapacity` straight to it, in one
    /// reallocation instead of doubling step by step and copying at each; a buffer that stays small stays at
    /// `minimumCapacity`.
    private var lastCapacity = 0
    /// The most `lastCapacity` remembers: a connection that once held a large response or backlog does not
    /// regrow to it every turn.
    static let maximumRememberedCapacity = 256 << 10
    #if DEBUG
    /// Set while `append(reserving:)`'s writer runs: the buffer must not be touched meanwhile (its owner
    /// skips the runtime's exclusivity checks, so this is the check).
    private var appending = false
    #endif

    /// Smallest allocation made on first use.
    static let minimumCapacity = 1024

    /// Bytes appended and not yet consumed.
    var count: Int { tail - head }
    var isEmpty: Bool { tail == head }

    /// The unconsumed bytes. Valid until the next mutating call.
    var readable: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.map { $0 + head }, count: tail - head)
    }

    /// Appends a copy of `bytes`.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        #if DEBUG
        precondition(!appending, "OutputBuffer: appended to from inside append(reserving:)'s writer")
        #endif
        guard bytes.count > 0 else { return }
        reserve(bytes.count)
        copyIn(bytes)
    }

    /// Appends `first`, then `second`, making room once.
    mutating func append(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        #if DEBUG
        precondition(!appending, "OutputBuffer: appended to from inside append(reserving:)'s writer")
        #endif
        let n = first.count + second.count
        guard n > 0 else { return }
        reserve(n)
        copyIn(first)
        copyIn(second)
    }

    /// Copies `bytes` to the tail, room having been made.
    @inline(__always)
    private mutating func copyIn(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        (storage! + tail).copyMemory(from: src, byteCount: bytes.count)
        tail += bytes.count
    }

    /// Lets `write` fill up to `maxBytes` directly at the tail; `write` returns how many it wrote.
    mutating func append(reserving maxBytes: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int) {
        guard maxBytes > 0 else { return }
        #if DEBUG
        precondition(!appending, "OutputBuffer: appended to from inside append(reserving:)'s writer")
        appending = true
        defer { appending = false }
        #endif
        reserve(maxBytes)
        let written = write(UnsafeMutableRawBufferPointer(start: storage! + tail, count: maxBytes))
        precondition(written >= 0 && written <= maxBytes, "OutputBuffer: writer reported \(written) of \(maxBytes) bytes")
        tail += written
    }

    /// Drops `n` bytes from the head.
    mutating func consume(_ n: Int) {
        head += n
        if head >= tail { head = 0; tail = 0 }
    }

    /// Empties the buffer, keeping capacity up to `limit` bytes and freeing it if it is larger.
    mutating func clear(retaining limit: Int) {
        head = 0
        tail = 0
        trim(retaining: limit)
    }

    /// When empty and holding more than `limit` bytes of capacity, frees the storage.
    mutating func trim(retaining limit: Int) {
        if head == tail, capacity > limit { deallocate() }
    }

    /// Frees the storage. The buffer is empty and usable again afterwards.
    mutating func deallocate() {
        if capacity > 0 { lastCapacity = min(capacity, Self.maximumRememberedCapacity) }
        free(storage)
        storage = nil
        capacity = 0
        head = 0
        tail = 0
    }

    /// Ensures at least `extra` writable bytes after the tail: the check inline (every append makes it), the
    /// room made out of line.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if capacity - tail < extra { makeRoom(extra) }
    }

    private mutating func makeRoom(_ extra: Int) {
        let live = tail - head
        if head > 0, capacity - live >= extra, live <= capacity / 2 {
            // Enough room once the consumed head is reclaimed: slide the live bytes down.
            if live > 0 { storage!.copyMemory(from: storage! + head, byteCount: live) }
            head = 0
            tail = live
            return
        }
        var newCapacity = max(capacity * 2, Self.minimumCapacity, capacity > 0 ? lastCapacity : 0)
        while newCapacity - live < extra { newCapacity *= 2 }
        if head > 0, live > 0 { storage!.copyMemory(from: storage! + head, byteCount: live) }
        head = 0
        tail = live
        guard let grown = realloc(storage, newCapacity) else {
            fatalError("HearthLoop: out of memory growing output buffer to \(newCapacity) bytes")
        }
        storage = grown
        capacity = newCapacity
    }
}
