import Testing
@testable import HearthLoop

@Suite("OutputBuffer")
struct OutputBufferTests {
    @Test("starts without storage and grows on demand")
    func lazyGrowth() {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        #expect(buffer.capacity == 0)
        #expect(buffer.isEmpty)
        [UInt8](repeating: 7, count: 10).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.capacity == OutputBuffer.minimumCapacity)
        let big = pattern(5000)
        big.withUnsafeBytes { buffer.append($0) }
        #expect(buffer.count == 5010)
        #expect(Array(buffer.readable.dropFirst(10)) == big)
    }

    @Test("two parts appended at once: in order, with room made once, compacting or growing", arguments: [0, 1, 700, 5000])
    func twoParts(secondCount: Int) {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        let first = pattern(900), second = Array(pattern(secondCount).reversed())
        first.withUnsafeBytes { a in second.withUnsafeBytes { buffer.append(a, $0) } }
        buffer.consume(850)
        first.withUnsafeBytes { a in second.withUnsafeBytes { buffer.append(a, $0) } }
        #expect(Array(buffer.readable) == Array((first + second)[850...]) + first + second)
        [UInt8]().withUnsafeBytes { buffer.append($0, $0) }   // nothing: no change
        #expect(buffer.count == 2 * (900 + secondCount) - 850)
    }

    @Test("consume and compaction keep order")
    func consumeAndCompact() {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        let data = pattern(1000)
        data.withUnsafeBytes { buffer.append($0) }
        buffer.consume(900)
        let capacity = buffer.capacity
        data.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<500])) }
        #expect(buffer.capacity == capacity, "compacted instead of growing")
        #expect(Array(buffer.readable) == Array(data[900...]) + Array(data[0..<500]))
        buffer.consume(buffer.count)
        #expect(buffer.isEmpty)
    }

    @Test("trim frees capacity above the limit only when empty")
    func trim() {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        pattern(100_000).withUnsafeBytes { buffer.append($0) }
        buffer.trim(retaining: 16 * 1024)
        #expect(buffer.count == 100_000, "not empty: kept")
        buffer.clear(retaining: 16 * 1024)
        #expect(buffer.capacity == 0)
        pattern(100).withUnsafeBytes { buffer.append($0) }
        buffer.clear(retaining: 16 * 1024)
        #expect(buffer.capacity == OutputBuffer.minimumCapacity, "small capacity is reused")
    }

    @Test("a buffer that refills after being freed grows straight back to its last capacity")
    func regrowsToItsLastCapacity() {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        pattern(20_000).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.capacity == 32 * 1024)
        buffer.clear(retaining: 16 * 1024)
        #expect(buffer.capacity == 0)
        // Small again: the minimum, as for a new buffer.
        pattern(300).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.capacity == OutputBuffer.minimumCapacity)
        // Growing: one step to the capacity it had, not 2, 4, 8, 16 and 32 KiB.
        pattern(800).withUnsafeBytes { buffer.append($0) }
        #expect(buffer.capacity == 32 * 1024)
        #expect(Array(buffer.readable) == Array(pattern(300)) + Array(pattern(800)))
    }

    @Test("append(reserving:) commits only what the writer reports")
    func reserving() {
        var buffer = OutputBuffer()
        defer { buffer.deallocate() }
        buffer.append(reserving: 64) { raw in
            raw.storeBytes(of: 0x41, toByteOffset: 0, as: UInt8.self)
            raw.storeBytes(of: 0x42, toByteOffset: 1, as: UInt8.self)
            return 2
        }
        #expect(Array(buffer.readable) == [0x41, 0x42])
    }
}
