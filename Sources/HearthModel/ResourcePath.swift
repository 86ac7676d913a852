/// A slash-separated path of alternating collection and document IDs. `DocumentPath` (even segment count) and
/// `CollectionPath` (odd) wrap it with the invariant checked at construction.
public struct ResourcePath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let segments: [String]

    public init(segments: [String]) { self.segments = segments }

    /// The longest accepted ID, in UTF-8 bytes.
    public static let maxIDBytes = 1500
    /// The deepest accepted path, in segments (Firestore allows 100 levels of nesting).
    public static let maxSegments = 200

    /// Parses and validates `a/b/c`. Leading or trailing slashes and empty segments are rejected.
    public static func parse(_ text: String, what: String = "path") throws(HearthError) -> ResourcePath {
        // Every path a request names comes through here: split and check the bytes in place. A path that fails
        // a check is parsed again below, which says what is wrong.
        var bytes = text
        let fast: [String]? = bytes.withUTF8 { buf in
            var out: [String] = []
            out.reserveCapacity(4)
            var start = 0
            for i in 0...buf.count where i == buf.count || buf[i] == 47 {
                let part = UnsafeBufferPointer(rebasing: buf[start..<i])
                guard isValidID(part), out.count < maxSegments else { return nil }
                out.append(String(decoding: part, as: UTF8.self))
                start = i + 1
            }
            return out
        }
        if let fast { return ResourcePath(segments: fast) }
        return try parseReporting(text, what: what)
    }

    /// The reference parse: splits the text's bytes into Strings and checks each with `problem(withID:)`,
    /// saying what is wrong. `parse` answers the same for every text (ResourcePathTests).
    package static func parseReporting(_ text: String, what: String = "path") throws(HearthError) -> ResourcePath {
        guard !text.isEmpty else { throw .invalid("\(what) must not be empty") }
        var segments: [String] = []
        // Split on the byte, not on Characters: "/" followed by a combining mark is one Character.
        for part in text.utf8.split(separator: 47, omittingEmptySubsequences: false) {
            let id = String(decoding: part, as: UTF8.self)
            if let problem = ResourcePath.problem(withID: id) {
                throw .invalid("\(what) \"\(text)\" is invalid: \(problem)")
            }
            segments.append(id)
        }
        guard segments.count <= maxSegments else { throw .invalid("\(what) \"\(text)\" is too deep (at most \(maxSegments) segments)") }
        return ResourcePath(segments: segments)
    }

    /// True when `problem(withID:)` finds nothing wrong with the ID of these UTF-8 bytes (none of them "/").
    static func isValidID(_ id: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = id.count
        if n == 0 || n > maxIDBytes { return false }
        if id[0] == 46 && (n == 1 || (n == 2 && id[1] == 46)) { return false }             // "." and ".."
        if n >= 4 && id[0] == 95 && id[1] == 95 && id[n - 2] == 95 && id[n - 1] == 95 { return false }   // __…__
        return true
    }

    /// Why `id` cannot be a collection or document ID, or nil when it can.
    public static func problem(withID id: String) -> String? {
        let n = id.utf8.count
        if n == 0 { return "an ID must not be empty (no leading, trailing or double slashes)" }
        if n > maxIDBytes { return "an ID must be at most \(maxIDBytes) bytes" }
        if id == "." || id == ".." { return "an ID must not be \".\" or \"..\"" }
        if n >= 4 && id.utf8.starts(with: "__".utf8) && id.utf8.reversed().starts(with: "__".utf8) {
            return "IDs of the form __...__ are reserved (\"\(id)\")"
        }
        if id.utf8.contains(47) { return "an ID must not contain \"/\"" }
        return nil
    }

    public var description: String { Self.joined(segments[...]) }

    /// `segments` joined by "/", built in one allocation: paths are described on every store write and read, and
    /// the standard library's `joined(separator:)` costs several times more for a few short segments.
    static func joined(_ segments: ArraySlice<String>) -> String {
        if segments.count == 1 { return segments.first! }
        var bytes = max(0, segments.count - 1)
        for s in segments { bytes += s.utf8.count }
        return String(unsafeUninitializedCapacity: bytes) { out in
            var at = 0
            for (i, s) in segments.enumerated() {
                if i > 0 { out[at] = 47; at += 1 }
                let copied: Int? = s.utf8.withContiguousStorageIfAvailable { u in
                    guard let base = u.baseAddress, !u.isEmpty else { return 0 }
                    UnsafeMutableRawPointer(out.baseAddress! + at).copyMemory(from: base, byteCount: u.count)
                    return u.count
                }
                if let copied { at += copied } else { for b in s.utf8 { out[at] = b; at += 1 } }
            }
            return at
        }
    }
    public var last: String { segments.last ?? "" }
    public var count: Int { segments.count }

    /// Segment-wise UTF-8 order (how Firestore orders document keys and references).
    public static func < (a: ResourcePath, b: ResourcePath) -> Bool { compare(a, b) < 0 }

    public static func compare(_ a: ResourcePath, _ b: ResourcePath) -> Int {
        let n = min(a.segments.count, b.segments.count)
        for i in 0..<n {
            let c = UTF8Order.compare(a.segments[i], b.segments[i])
            if c != 0 { return c }
        }
        return a.segments.count == b.segments.count ? 0 : (a.segments.count < b.segments.count ? -1 : 1)
    }

    /// Byte equality of every segment, the last first: paths that differ mostly differ in their document ID, and
    /// a dictionary of paths compares each hit in full, so the loop stays free of closures and copies.
    public static func == (a: ResourcePath, b: ResourcePath) -> Bool {
        let n = a.segments.count
        guard n == b.segments.count else { return false }
        return a.segments.withUnsafeBufferPointer { x in
            b.segments.withUnsafeBufferPointer { y in
                if x.baseAddress == y.baseAddress { return true }   // copies of one path share their segments
                var i = n - 1
                while i >= 0 {
                    if !UTF8Order.equal(x[i], y[i]) { return false }
                    i -= 1
                }
                return true
            }
        }
    }

    /// Equality is by UTF-8 bytes, so the hash is too: every segment's bytes, each followed by 0xFF (a byte UTF-8
    /// never holds, so the segments' boundaries are part of what is hashed), given to the hasher in one call
    /// from a buffer on the stack (one call costs a fraction of one per segment).
    public func hash(into h: inout Hasher) {
        var total = segments.count
        for s in segments { total += s.utf8.count }
        guard total <= 512 else {
            for s in segments {
                let done: Void? = s.utf8.withContiguousStorageIfAvailable { h.combine(bytes: UnsafeRawBufferPointer($0)) }
                if done == nil { for b in s.utf8 { h.combine(b) } }
                h.combine(0xFF as UInt8)
            }
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { buffer in
            var at = 0
            for s in segments {
                let copied: Int? = s.utf8.withContiguousStorageIfAvailable { u in
                    guard let base = u.baseAddress, !u.isEmpty else { return 0 }
                    UnsafeMutableRawPointer(buffer.baseAddress! + at).copyMemory(from: base, byteCount: u.count)
                    return u.count
                }
                if let copied { at += copied } else { for b in s.utf8 { buffer[at] = b; at += 1 } }
                buffer[at] = 0xFF
                at += 1
            }
            h.combine(bytes: UnsafeRawBufferPointer(start: buffer.baseAddress, count: at))
        }
    }

    public func appending(_ id: String) -> ResourcePath { ResourcePath(segments: segments + [id]) }
    public var parent: ResourcePath { ResourcePath(segments: Array(segments.dropLast())) }

    /// True when `self` is a strict prefix of `other`.
    public func isPrefix(of other: ResourcePath) -> Bool {
        segments.count < other.segments.count && zip(segments, other.segments).allSatisfy { UTF8Order.equal($0, $1) }
    }
}

/// The path of a document: `collection/doc[/collection/doc...]`.
public struct DocumentPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let path: ResourcePath

    public init(_ path: ResourcePath) throws(HearthError) {
        guard path.count >= 2, path.count % 2 == 0 else {
            throw .invalid("\"\(path)\" is not a document path (it needs an even number of segments: collection/doc)")
        }
        self.path = path
    }

    init(unchecked path: ResourcePath) { self.path = path }

    public init(parsing text: String) throws(HearthError) {
        let p = try ResourcePath.parse(text, what: "document path")
        try self.init(p)
    }

    public var id: String { path.last }
    public var collection: CollectionPath { CollectionPath(unchecked: path.parent) }
    /// `collection.description`, without building the collection's path first.
    public var collectionDescription: String { ResourcePath.joined(path.segments.dropLast()) }
    public var collectionID: String { path.segments[path.count - 2] }
    public var description: String { path.description }
    public static func < (a: DocumentPath, b: DocumentPath) -> Bool { a.path < b.path }
}

/// The path of a collection: `coll` or `coll/doc/subcoll`.
public struct CollectionPath: Sendable, Hashable, CustomStringConvertible {
    public let path: ResourcePath

    public init(_ path: ResourcePath) throws(HearthError) {
        guard path.count % 2 == 1 else {
            throw .invalid("\"\(path)\" is not a collection path (it needs an odd number of segments: coll or coll/doc/coll)")
        }
        self.path = path
    }

    init(unchecked path: ResourcePath) { self.path = path }

    public init(parsing text: String) throws(HearthError) {
        let p = try ResourcePath.parse(text, what: "collection path")
        try self.init(p)
    }

    public var id: String { path.last }
    /// The document this collection lives under, nil for a root collection.
    public var parent: DocumentPath? { path.count > 1 ? DocumentPath(unchecked: path.parent) : nil }
    public func document(_ id: String) throws(HearthError) -> DocumentPath {
        if let problem = ResourcePath.problem(withID: id) { throw .invalid("document ID is invalid: \(problem)") }
        return DocumentPath(unchecked: path.appending(id))
    }
    public var description: String { path.description }
}
