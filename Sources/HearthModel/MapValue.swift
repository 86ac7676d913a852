/// A map value: fields kept sorted by the UTF-8 bytes of their keys, keys unique by bytes. Sorted storage gives
/// Firestore's map order for free, deterministic output, and no canonical-equivalence surprises of
/// `Dictionary<String, _>`.
public struct MapValue: Sendable, Hashable, Sequence {
    public struct Field: Sendable, Hashable {
        public var key: String
        public var value: Value
        public init(key: String, value: Value) { self.key = key; self.value = value }
        public static func == (a: Field, b: Field) -> Bool { UTF8Order.equal(a.key, b.key) && a.value == b.value }
        public func hash(into h: inout Hasher) { for b in key.utf8 { h.combine(b) }; h.combine(value) }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }

    /// Builds from fields in any order; a later duplicate key replaces an earlier one.
    public init(_ unsorted: [Field]) {
        fields = []
        fields.reserveCapacity(unsorted.count)
        for f in unsorted { self[f.key] = f.value }
    }

    /// Builds from fields already sorted by key with no duplicates (checked in debug builds).
    public init(sorted: [Field]) {
        fields = sorted
        assert(zip(sorted, sorted.dropFirst()).allSatisfy { UTF8Order.less($0.key, $1.key) })
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Index of `key`, or the insertion point as a negative number `-(i+1)`.
    @inlinable
    func search(_ key: String) -> Int {
        var lo = 0, hi = fields.count - 1
        while lo <= hi {
            let mid = (lo + hi) >> 1
            let c = UTF8Order.compare(fields[mid].key, key)
            if c == 0 { return mid }
            if c < 0 { lo = mid + 1 } else { hi = mid - 1 }
        }
        return -(lo + 1)
    }

    public subscript(key: String) -> Value? {
        get {
            let i = search(key)
            if i >= 0 { return fields[i].value } else { return nil }
        }
        set {
            let i = search(key)
            if i >= 0 {
                if let v = newValue { fields[i].value = v } else { fields.remove(at: i) }
            } else if let v = newValue {
                fields.insert(Field(key: key, value: v), at: -(i + 1))
            }
        }
    }

    /// Sets (a value) or removes (nil) many top-level fields at once: `changes` in any order, one per key.
    /// Many are merged into the sorted fields in one pass; one by one, each insertion or removal shifts the
    /// fields after it (an update deleting 150,000 fields took 10 s).
    public mutating func apply(topLevel changes: [(key: String, value: Value?)]) {
        guard changes.count > 16 else {
            for c in changes { self[c.key] = c.value }
            return
        }
        let sorted = changes.sorted { UTF8Order.less($0.key, $1.key) }
        var out: [Field] = []
        out.reserveCapacity(fields.count + sorted.count)
        var i = 0
        var previous: String?
        for c in sorted {
            // Masks name each field once; a repeated key would break the order, so only its first is taken.
            if let previous, UTF8Order.equal(previous, c.key) { assertionFailure("key \(c.key) changed twice"); continue }
            previous = c.key
            while i < fields.count && UTF8Order.less(fields[i].key, c.key) {
                out.append(fields[i])
                i += 1
            }
            if i < fields.count && UTF8Order.equal(fields[i].key, c.key) { i += 1 }   // replaced or removed
            if let v = c.value { out.append(Field(key: c.key, value: v)) }
        }
        out.append(contentsOf: fields[i...])
        fields = out
    }

    /// The value at a nested field path, or nil if any segment is missing or crosses a non-map.
    public func value(at path: FieldPath) -> Value? {
        let segs = path.segments
        if segs.count == 1 { return self[segs[0]] }   // a top-level field: no copy of the map
        var current = self
        for (i, s) in segs.enumerated() {
            guard let v = current[s] else { return nil }
            if i == segs.count - 1 { return v }
            guard case .map(let m) = v else { return nil }
            current = m
        }
        return nil
    }

    /// Sets the value at a nested path, creating (or replacing non-map values with) intermediate maps.
    public mutating func set(_ value: Value, at path: FieldPath) {
        set(value, segments: path.segments[...])
    }

    private mutating func set(_ value: Value, segments: ArraySlice<String>) {
        let head = segments.first!
        if segments.count == 1 { self[head] = value; return }
        var child = self[head]?.mapValue ?? MapValue()
        self[head] = nil  // avoid a copy-on-write of the nested map while we mutate it
        child.set(value, segments: segments.dropFirst())
        self[head] = .map(child)
    }

    /// Removes the value at a nested path; a missing path is not an error.
    public mutating func remove(at path: FieldPath) {
        remove(segments: path.segments[...])
    }

    private mutating func remove(segments: ArraySlice<String>) {
        let head = segments.first!
        if segments.count == 1 { self[head] = nil; return }
        guard case .map(var child)? = self[head] else { return }
        self[head] = nil
        child.remove(segments: segments.dropFirst())
        self[head] = .map(child)
    }
}
