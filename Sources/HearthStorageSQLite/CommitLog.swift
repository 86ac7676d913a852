#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// `<data dir>/commit.log`: where a group of commits becomes durable. `SQLiteStore.apply` appends the group
/// as one frame and fdatasyncs it (a few KiB, where SQLite's WAL would sync every page the group touched),
/// then commits the group to SQLite without syncing. At open, frames SQLite lacks (a power loss took its
/// unsynced tail) are applied again; once SQLite's files are synced (`SQLiteConnection.syncFiles`) the log is
/// emptied. docs/storage.md, "Commit log", has the long form.
///
/// A frame: a 40-byte header (magic `HCL1`, payload length u32, the store's history ID u64, first and last seq
/// u64, checksum u64), then the payload (`CommitRecordCodec`, without before images: recovery reads each
/// from SQLite as it applies the commits in order). The checksum is XXH3-64 (`RowChecksum`) over the
/// header's other fields and the payload, so a frame torn by a crash in the middle of its write, or the zeros a
/// file system leaves in an extended but unwritten tail, never reads as a group.
///
/// The file is preallocated in `chunkBytes` steps and zero beyond its last frame (as etcd preallocates its WAL
/// segments): an append overwrites zeros in allocated blocks, so its `fdatasync` need not update the file's
/// size, and a small frame (a delete) still fits while the disk is full. Zeros after the last frame are the
/// clean end of the log; anything else there is a torn frame.
///
/// Used only by the writer (under the store's writer lock). Once a sync or a rollback of the file fails, its
/// state on disk is unknown: `failure` is set and every later append throws it, until a restart recovers.
package final class CommitLog {
    package static let fileName = "commit.log"
    package static let headerSize = 40
    /// "HCL1" as it reads in the file.
    static let magic: UInt32 = 0x314C_4348

    let path: String
    private var fd: Int32
    /// Bytes of whole frames; the next frame is written here.
    private(set) var size: Int = 0
    /// Why the log cannot take more frames (nil while it can).
    private(set) var failure: HearthError?
    /// The file's size: allocated, zero past `size`.
    private var allocated = 0
    /// The file grows by this much at a time, and is grown again once less than a quarter of it is left.
    static let chunkBytes = 256 << 10

    /// A frame read back.
    package struct Frame: Equatable {
        package var offset: Int
        package var history: UInt64
        package var firstSeq: UInt64
        package var lastSeq: UInt64
        package var payload: ArraySlice<UInt8>
        package var end: Int { offset + CommitLog.headerSize + payload.count }
    }

    /// The end of the file that is not a whole frame: what a crash during an append leaves.
    package struct Tear: Error, Equatable, CustomStringConvertible {
        package var offset: Int
        package var length: Int
        package var reason: String
        package var description: String { "\(length) bytes at offset \(offset) (\(reason))" }
    }

    /// Opens or creates the log in `directory` (a new file's directory entry is synced before any frame
    /// relies on it).
    init(directory: String) throws(HearthError) {
        path = DataDirectory.file(Self.fileName, in: directory)
        var st = stat()
        let existed = stat(path, &st) == 0
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("opening", path, errno) }
        var opened = stat()
        if fstat(fd, &opened) == 0 { allocated = Int(opened.st_size) }
        if !existed {
            let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dir >= 0 {
                defer { _ = Glibc.close(dir) }
                guard fsync(dir) == 0 else { let e = errno; _ = Glibc.close(fd); throw Self.failure("syncing the directory of", path, e) }
            }
        }
    }

    deinit { close() }

    /// Writes zeros (and syncs them) to make room for `needed` more bytes after the last frame, and a chunk
    /// more when less than a quarter chunk would be left. Zeros written, not `posix_fallocate`d: overwriting
    /// written blocks, an append's `fdatasync` flushes its data alone (measured 0.17-0.21 ms for 20 KB here,
    /// against 0.30-0.32 ms appending or writing into allocated-but-unwritten blocks). Throws only when even
    /// `needed` does not fit (disk full).
    private func makeRoom(_ needed: Int) throws(HearthError) {
        let want = size + needed
        guard allocated - want < Self.chunkBytes / 4 else { return }
        let target = (want + Self.chunkBytes) / Self.chunkBytes * Self.chunkBytes
        let zeros = [UInt8](repeating: 0, count: 64 << 10)
        var code: Int32 = 0
        while allocated < target {
            let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, min($0.count, target - allocated), off_t(allocated)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { code = n < 0 ? errno : ENOSPC; break }
            allocated += n
        }
        if code == 0 && fdatasync(fd) != 0 { code = errno }
        guard want <= allocated else { throw Self.failure("growing", path, code) }
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    // MARK: Frames

    /// The frame holding `commits` (ascending, non-empty) of the store with history `history`.
    package static func frame(_ commits: [CommitRecord], history: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: headerSize)
        out.reserveCapacity(headerSize + commits.reduce(64) { $0 + 64 + $1.estimatedLogBytes })
        CommitRecordCodec.encode(commits, includingBefore: false, into: &out)
        let payloadCount = out.count - headerSize
        let first = commits.first?.seq ?? 0, last = commits.last?.seq ?? 0
        let sum = out[headerSize...].withUnsafeBytes { checksum(history: history, first: first, last: last, payload: $0) }
        out.withUnsafeMutableBytes { h in
            h.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
            h.storeBytes(of: UInt32(truncatingIfNeeded: payloadCount).littleEndian, toByteOffset: 4, as: UInt32.self)
            h.storeBytes(of: history.littleEndian, toByteOffset: 8, as: UInt64.self)
            h.storeBytes(of: first.littleEndian, toByteOffset: 16, as: UInt64.self)
            h.storeBytes(of: last.littleEndian, toByteOffset: 24, as: UInt64.self)
            h.storeBytes(of: sum.littleEndian, toByteOffset: 32, as: UInt64.self)
        }
        return out
    }

    private static func checksum(history: UInt64, first: UInt64, last: UInt64, payload: UnsafeRawBufferPointer) -> UInt64 {
        var c = RowChecksum()
        c.int(history)
        c.int(first)
        c.int(last)
        c.bytes(payload)
        return UInt64(bitPattern: c.value)
    }

    /// The whole frame at `offset` of `bytes`, or why there is none.
    static func frame(at offset: Int, in bytes: [UInt8]) -> Result<Frame, Tear> {
        let left = bytes.count - offset
        func tear(_ reason: String) -> Result<Frame, Tear> { .failure(Tear(offset: offset, length: left, reason: reason)) }
        guard left >= headerSize else { return tear("a frame header needs \(headerSize) bytes") }
        let (magicFound, length, history, first, last, sum) = bytes.withUnsafeBytes { b in
            (b.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian,
             Int(b.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian),
             b.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self).littleEndian,
             b.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self).littleEndian,
             b.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self).littleEndian,
             b.loadUnaligned(fromByteOffset: offset + 32, as: UInt64.self).littleEndian)
        }
        guard magicFound == magic else { return tear("no frame header") }
        guard length <= left - headerSize else { return tear("the frame needs \(headerSize + length) bytes") }
        let payload = bytes[(offset + headerSize)..<(offset + headerSize + length)]
        let computed = payload.withUnsafeBytes { checksum(history: history, first: first, last: last, payload: $0) }
        guard computed == sum, first <= last else { return tear("checksum mismatch") }
        return .success(Frame(offset: offset, history: history, firstSeq: first, lastSeq: last, payload: payload))
    }

    /// Splits `bytes` into whole frames and the torn end, if any. DATA_LOSS when a whole frame follows bytes
    /// that are not one: that is damage inside the log (the groups in between are lost), not a crash during
    /// the last append, and recovery must not silently skip it.
    package static func parse(_ bytes: [UInt8], path: String) throws(HearthError) -> (frames: [Frame], tear: Tear?) {
        var frames: [Frame] = []
        var offset = 0
        while offset < bytes.count {
            switch frame(at: offset, in: bytes) {
            case .success(let f):
                frames.append(f)
                offset = f.end
            case .failure(var tear):
                // Zeros to the end: the preallocated rest of the file.
                guard let lastByte = bytes[offset...].lastIndex(where: { $0 != 0 }) else { return (frames, nil) }
                tear.length = lastByte + 1 - offset
                var later = offset + 1
                while later + headerSize <= lastByte + 1 {
                    if case .success(let f) = frame(at: later, in: bytes) {
                        throw HearthError(.dataLoss, "storage: \(path) is damaged at offset \(offset) (\(tear.reason)): the commits before seq \(f.firstSeq) cannot be recovered, while a whole group of seq \(f.firstSeq)...\(f.lastSeq) follows at offset \(later); move the file away to start without them")
                    }
                    later += 1
                }
                return (frames, tear)
            }
        }
        return (frames, nil)
    }

    // MARK: The file

    /// Every byte of the file.
    func readAll() throws(HearthError) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var at: off_t = 0
        while true {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, at) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.failure("reading", path, errno)
            }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            at += off_t(n)
        }
    }

    /// Writes `frame` after the last whole frame and fdatasyncs it: the frame is durable when this returns.
    /// On failure the file is cut back to its whole frames (or, when that fails too, the log is `failure`).
    func append(_ frame: [UInt8]) throws(HearthError) {
        if let failure { throw failure }
        try makeRoom(frame.count)
        var written = 0
        while written < frame.count {
            let n = frame.withUnsafeBytes { b in pwrite(fd, b.baseAddress! + written, b.count - written, off_t(size + written)) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = Self.failure("writing", path, errno)
                rollBack(to: size, length: written)
                throw e
            }
            written += n
        }
        guard fdatasync(fd) == 0 else {
            // After a failed fsync the kernel may have dropped the dirty pages: what the file holds is unknown.
            let e = Self.failure("syncing", path, errno)
            failure = HearthError(.unavailable, "\(e.message); commits are refused until hearthd restarts and recovers")
            throw e
        }
        size += frame.count
    }

    /// Zeroes the `length` bytes at `offset` (the last frame's place: `offset` is at or below `size`) and syncs
    /// that, so the bytes read as the log's end: a frame whose group SQLite refused must not be applied at the
    /// next start. The blocks stay allocated.
    func rollBack(to offset: Int, length: Int) {
        let zeros = [UInt8](repeating: 0, count: min(length, 1 << 16))
        var done = 0
        var ok = true
        while ok && done < length {
            let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, min($0.count, length - done), off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { ok = false } else { done += n }
        }
        guard ok, fdatasync(fd) == 0 else {
            let e = Self.failure("zeroing a refused group in", path, errno)
            failure = HearthError(.unavailable, "\(e.message); commits are refused until hearthd restarts (the next start may apply the refused group)")
            return
        }
        size = offset
    }

    /// Empties the log once SQLite's own files hold every frame durably, keeping one chunk allocated.
    func reset() throws(HearthError) {
        guard ftruncate(fd, 0) == 0 else { throw Self.failure("emptying", path, errno) }
        size = 0
        allocated = 0
        try? makeRoom(0)
        guard fdatasync(fd) == 0 else { throw Self.failure("emptying", path, errno) }
    }

    private static func failure(_ what: String, _ path: String, _ code: Int32) -> HearthError {
        if code == ENOSPC || code == EDQUOT { return .diskFull("\(what) \(path)") }
        return HearthError(.unavailable, "storage: \(what) \(path) failed: \(DataDirectory.describe(code))")
    }
}

extension CommitRecord {
    /// About how many bytes `CommitRecordCodec` takes for this commit (to size a buffer once).
    var estimatedLogBytes: Int {
        var n = 32
        for m in mutations { n += 64 + (m.after?.data.count ?? 0) }
        for e in indexChanges.removed { n += 48 + e.key.count }
        for e in indexChanges.added { n += 48 + e.key.count }
        return n + (indexCatalog?.count ?? 0)
    }
}
