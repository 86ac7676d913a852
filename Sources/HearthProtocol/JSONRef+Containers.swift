extension JSONRef {
    /// The number of elements of an array or members of an object; 0 for other kinds.
    @inlinable
    public var count: Int {
        guard isObject || isArray else { return 0 }
        let n = Int(truncatingIfNeeded: (word >> 32) & 0xFF_FFFF)
        if n < 0xFF_FFFF { return n }
        var c = 0
        if isObject {
            for _ in members { c += 1 }
        } else {
            for _ in elements { c += 1 }
        }
        return c
    }

    /// The value of the first member named `key` (compared by UTF-8 bytes), or nil (also for non-objects).
    @inlinable
    public subscript(key: String) -> JSONRef? {
        guard isObject else { return nil }
        var key = key
        return key.withUTF8 { k in
            for m in members where m.keyBytes.count == k.count {
                var same = true
                var i = 0
                while i < k.count {
                    if m.keyBytes[i] != k[i] { same = false; break }
                    i += 1
                }
                if same { return m.value }
            }
            return nil
        }
    }

    /// The members of an object in document order (empty for other kinds).
    @inlinable public var members: Members { Members(object: self) }

    /// The elements of an array in order (empty for other kinds).
    @inlinable public var elements: Elements { Elements(array: self) }

    /// One member of an object: its key (bytes borrowed from the parser) and its value.
    public struct Member {
        public let keyBytes: UnsafeRawBufferPointer
        public let value: JSONRef

        @inlinable init(keyBytes: UnsafeRawBufferPointer, value: JSONRef) {
            self.keyBytes = keyBytes
            self.value = value
        }

        /// The key as a new `String`.
        @inlinable public var key: String { String(decoding: keyBytes, as: UTF8.self) }
    }

    public struct Members: Sequence, IteratorProtocol {
        @usableFromInline var position: Int
        @usableFromInline let stop: Int
        @usableFromInline let tape: UnsafePointer<UInt64>
        @usableFromInline let strings: UnsafePointer<UInt8>

        @inlinable
        init(object: JSONRef) {
            tape = object.tape
            strings = object.strings
            position = object.index + 1
            stop = object.isObject ? object.end - 1 : position
        }

        @inlinable
        public mutating func next() -> Member? {
            guard position < stop else { return nil }
            let key = JSONRef(tape: tape, strings: strings, index: position)
            let value = JSONRef(tape: tape, strings: strings, index: position + 1)
            position = value.end
            return Member(keyBytes: key.stringBytes!, value: value)
        }
    }

    public struct Elements: Sequence, IteratorProtocol {
        @usableFromInline var position: Int
        @usableFromInline let stop: Int
        @usableFromInline let tape: UnsafePointer<UInt64>
        @usableFromInline let strings: UnsafePointer<UInt8>

        @inlinable
        init(array: JSONRef) {
            tape = array.tape
            strings = array.strings
            position = array.index + 1
            stop = array.isArray ? array.end - 1 : position
        }

        @inlinable
        public mutating func next() -> JSONRef? {
            guard position < stop else { return nil }
            let value = JSONRef(tape: tape, strings: strings, index: position)
            position = value.end
            return value
        }
    }
}
