import HearthModel

/// A compact binary form of a group of `CommitRecord`s, exactly as given (both images, index changes, the
/// catalog), for a commit log that must give back what `apply` was handed. Pure; every integer is
/// little-endian (docs/storage.md, "Durability", has the frame around it):
///
///     group     := flags:u8 count:u32 record*    (flags: 0x01 before images included, 0x02 records carry a request)
///     record    := seq:u64 commitMicros:i64 mutationCount:u32 mutation* removed:entries added:entries catalog
///                  [request, when flag 0x02]
///     mutation  := path [image(before), when included] image(after)
///     image     := 0x00 | 0x01 data:bytes createMicros:i64 updateMicros:i64 seq:u64
///     entries   := count:u32 (key:bytes path)*
///     catalog   := 0x00 | 0x01 bytes
///     request   := 0x00 | 0x01 id:bytes answer:bytes
///     path      := segmentCount:u16 (segment:bytes)*          (segments as UTF-8)
///     bytes     := length:u32 byte*
///
/// Without before images (`includingBefore: false`), each mutation's `before` decodes as nil: a commit log
/// leaves them out because the version a commit replaced is the one the store holds when the commit is applied
/// again in order (`SQLiteWriter` reads it there), and that keeps a delete's frame a few bytes.
///
/// `decode` checks every length against what is left, so bytes that are not an encoding throw instead of
/// reading out of bounds (a log frame's checksum is checked first; this is the second line).
public enum CommitRecordCodec {
    public static func encode(_ commits: [CommitRecord], includingBefore: Bool = true, into out: inout [UInt8]) {
        out.append((includingBefore ? 1 : 0) | 2)
        u32(UInt32(commits.count), &out)
        for c in commits {
            u64(c.seq, &out)
            u64(UInt64(bitPattern: c.commitTime.micros), &out)
            u32(UInt32(c.mutations.count), &out)
            for m in c.mutations {
                path(m.path, &out)
                if includingBefore { image(m.before, &out) }
                image(m.after, &out)
            }
            entries(c.indexChanges.removed, &out)
            entries(c.indexChanges.added, &out)
            if let catalog = c.indexCatalog {
                out.append(1)
                bytes(catalog, &out)
            } else {
                out.append(0)
            }
            if let request = c.request {
                out.append(1)
                bytes(Array(request.id.utf8), &out)
                bytes(request.answer, &out)
            } else {
                out.append(0)
            }
        }
    }

    /// `decode` of bytes in a slice of an array.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(HearthError) -> (commits: [CommitRecord], includingBefore: Bool) {
        try bytes.withUnsafeBytes { b in Result { () throws(HearthError) in try decode(b) } }.get()
    }

    public static func decode(_ bytes: [UInt8]) throws(HearthError) -> (commits: [CommitRecord], includingBefore: Bool) {
        try decode(bytes[...])
    }

    public static func decode(_ data: UnsafeRawBufferPointer) throws(HearthError) -> (commits: [CommitRecord], includingBefore: Bool) {
        var r = Reader(data: data)
        let flags = try r.u8()
        guard flags & ~3 == 0 else { throw invalid("unknown group flags \(flags)") }
        let includingBefore = flags & 1 != 0, withRequests = flags & 2 != 0
        let count = try r.u32()
        var commits: [CommitRecord] = []
        commits.reserveCapacity(min(Int(count), data.count / 29))
        for _ in 0..<count {
            let seq = try r.u64()
            let micros = Int64(bitPattern: try r.u64())
            let n = try r.u32()
            var mutations: [Mutation] = []
            mutations.reserveCapacity(min(Int(n), r.remaining / 4))
            for _ in 0..<n {
                let p = try r.path()
                let before = includingBefore ? try r.image(p) : nil
                let after = try r.image(p)
                mutations.append(Mutation(path: p, before: before, after: after))
            }
            let removed = try r.entries()
            let added = try r.entries()
            let catalog: [UInt8]? = try r.flag() ? try r.bytes() : nil
            var request: CommitRequest?
            if withRequests, try r.flag() {
                let id = try r.bytes()
                guard let text = String(validating: id, as: UTF8.self) else { throw invalid("a request ID is not UTF-8") }
                request = CommitRequest(id: text, answer: try r.bytes())
            }
            commits.append(CommitRecord(seq: seq, commitTime: Timestamp(micros: micros), mutations: mutations,
                                        indexChanges: IndexChanges(removed: removed, added: added), indexCatalog: catalog,
                                        request: request))
        }
        guard r.remaining == 0 else { throw invalid("\(r.remaining) bytes follow the last commit") }
        return (commits, includingBefore)
    }

    // MARK: Encoding

    private static func u32(_ v: UInt32, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func u64(_ v: UInt64, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func bytes(_ b: [UInt8], _ out: inout [UInt8]) {
        u32(UInt32(b.count), &out)
        out.append(contentsOf: b)
    }

    private static func path(_ p: DocumentPath, _ out: inout [UInt8]) {
        let segments = p.path.segments
        withUnsafeBytes(of: UInt16(segments.count).littleEndian) { out.append(contentsOf: $0) }
        for s in segments {
            var s = s
            s.withUTF8 { u in
                u32(UInt32(u.count), &out)
                out.append(contentsOf: u)
            }
        }
    }

    private static func image(_ doc: StoredDocument?, _ out: inout [UInt8]) {
        guard let doc else { out.append(0); return }
        out.append(1)
        bytes(doc.data, &out)
        u64(UInt64(bitPattern: doc.createTime.micros), &out)
        u64(UInt64(bitPattern: doc.updateTime.micros), &out)
        u64(doc.seq, &out)
    }

    private static func entries(_ list: [IndexEntry], _ out: inout [UInt8]) {
        u32(UInt32(list.count), &out)
        // A document's entries are listed together: its path is encoded once and copied for the rest.
        var encoded: [UInt8] = []
        var last: DocumentPath?
        for e in list {
            bytes(e.key, &out)
            if e.path != last {
                encoded.removeAll(keepingCapacity: true)
                path(e.path, &encoded)
                last = e.path
            }
            out.append(contentsOf: encoded)
        }
    }

    // MARK: Decoding

    private static func invalid(_ detail: String) -> HearthError {
        HearthError(.dataLoss, "a commit log group does not decode: \(detail)")
    }

    private struct Reader {
        let data: UnsafeRawBufferPointer
        var at = 0

        var remaining: Int { data.count - at }

        mutating func take(_ n: Int, _ what: @autoclosure () -> String) throws(HearthError) -> UnsafeRawBufferPointer {
            guard n >= 0, n <= remaining else { throw invalid("\(what()) needs \(n) bytes, \(remaining) are left at offset \(at)") }
            defer { at += n }
            return UnsafeRawBufferPointer(rebasing: data[at..<(at + n)])
        }

        mutating func u64() throws(HearthError) -> UInt64 {
            let b = try take(8, "an integer")
            return UInt64(littleEndian: b.loadUnaligned(as: UInt64.self))
        }

        mutating func u32() throws(HearthError) -> UInt32 {
            let b = try take(4, "a length")
            return UInt32(littleEndian: b.loadUnaligned(as: UInt32.self))
        }

        mutating func u8() throws(HearthError) -> UInt8 { try take(1, "a byte")[0] }

        mutating func flag() throws(HearthError) -> Bool {
            let b = try take(1, "a flag")[0]
            guard b <= 1 else { throw invalid("flag byte \(b) at offset \(at - 1)") }
            return b == 1
        }

        mutating func bytes() throws(HearthError) -> [UInt8] {
            let n = try u32()
            return Array(try take(Int(n), "a byte string"))
        }

        mutating func path() throws(HearthError) -> DocumentPath {
            let b = try take(2, "a path")
            let n = Int(UInt16(littleEndian: b.loadUnaligned(as: UInt16.self)))
            var segments: [String] = []
            segments.reserveCapacity(n)
            for _ in 0..<n {
                let len = try u32()
                segments.append(String(decoding: try take(Int(len), "a path segment"), as: UTF8.self))
            }
            do { return try DocumentPath(ResourcePath(segments: segments)) } catch {
                throw invalid("path \(segments.joined(separator: "/")) is not a document path: \(error.message)")
            }
        }

        mutating func image(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
            guard try flag() else { return nil }
            let data = try bytes()
            let create = Int64(bitPattern: try u64())
            let update = Int64(bitPattern: try u64())
            let seq = try u64()
            return StoredDocument(path: path, data: data, createTime: Timestamp(micros: create),
                                  updateTime: Timestamp(micros: update), seq: seq)
        }

        mutating func entries() throws(HearthError) -> [IndexEntry] {
            let n = try u32()
            var out: [IndexEntry] = []
            out.reserveCapacity(min(Int(n), remaining / 6))
            for _ in 0..<n {
                let key = try bytes()
                out.append(IndexEntry(key: key, path: try path()))
            }
            return out
        }
    }
}
