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
/// as one frame and fdatasyncs it (a few KiB, where SQLite's WAL would sync every page the group touched);
/// SQLite gets the group later, without syncing (`CommitPipeline`). At open, frames SQLite lacks (a power loss
/// took its unsynced tail, or the applier had not reached them) are applied again; a segment is removed or
/// emptied only once SQLite's files are synced (`SQLiteConnection.syncFiles`). docs/storage.md, "Durability",
/// has the long form and the layout.
///
/// A frame: a 56-byte header (magic `HCL1`, payload length u32, the store's history ID u64, the store's last
/// seq when it was appended u64, first and last seq u64, the payload's checksum u64, the header's own checksum
/// u64), then the payload (`CommitRecordCodec`, without before images: recovery takes each from the frame's
/// earlier commits when one wrote the document, else from SQLite, as it applies the commits in order). Both
/// checksums are XXH3-64 (`RowChecksum`), so a frame torn by a crash in the middle of its write, or zeros
/// where it should be, never reads as a group, and a header that holds gives the length to skip when its
/// payload does not.
///
/// The file is preallocated in `chunkBytes` steps and zero beyond its last frame (as etcd preallocates its WAL
/// segments): an append overwrites zeros in allocated blocks, so its `fdatasync` need not update the file's
/// size, and a small frame (a delete) still fits while the disk is full. Zeros after the last frame are the
/// clean end of the log; anything else there is a torn frame.
///
/// When the log outgrows its limit, `CommitPipeline` renames it to `retiredName` and starts a new one, and
/// removes the retired segment once SQLite's synced files hold all of it; recovery reads both, in order.
///
/// Used only by the writer thread. Once a sync or a rollback of the file fails, its state on disk is unknown:
/// `failure` is set and every later append throws it, until a restart recovers.
package final class CommitLog {
    package static let fileName = "commit.log"
    /// The segment the log was rotated out of, kept until SQLite's synced files hold every frame it has
    /// (`CommitPipeline`); recovery reads it before `fileName`.
    package static let retiredName = "commit.log.1"
    package static let headerSize = 56
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
        /// The store's last seq when the frame was appended.
        package var prevSeq: UInt64
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

    /// Opens or creates the log `name` in `directory` (a new file's directory entry is synced before any frame
    /// relies on it).
    init(directory: String, name: String = CommitLog.fileName) throws(HearthError) {
        path = DataDirectory.file(name, in: directory)
        var st = stat()
        let existed = stat(path, &st) == 0
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("opening", path, errno) }
        var opened = stat()
        if fstat(fd, &opened) == 0 { allocated = Int(opened.st_size) }
        if !existed {
            do { try DataDirectory.sync(directory) } catch {
                _ = Glibc.close(fd)
                throw error
            }
        }
    }

    deinit { close() }

    /// Writes zeros (and syncs them) to make room for `needed` more bytes after the last frame, and a chunk
    /// (or four such frames) more when less than a quarter chunk (or one such frame) would be left. Zeros written, not `posix_fallocate`d: overwriting
    /// written blocks, an append's `fdatasync` flushes its data alone (measured 0.17-0.21 ms for 20 KB here,
    /// against 0.30-0.32 ms appending or writing into allocated-but-unwritten blocks). Throws only when even
    /// `needed` does not fit (disk full).
    private func makeRoom(_ needed: Int) throws(HearthError) {
        let want = size + needed
        guard allocated - want < max(Self.chunkBytes / 4, needed) else { return }
        // Large frames (a fan-out group) grow the file for the next few of their size at once, so their
        // appends overwrite written zeros as small ones do.
        let step = max(Self.chunkBytes, needed * 4)
        let target = (want + step) / Self.chunkBytes * Self.chunkBytes
        let zeros = [UInt8](repeating: 0, count: 64 << 10)
        let before = allocated
        var code: Int32 = 0
        while allocated < target {
            let n = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, min($0.count, target - allocated), off_t(allocated)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { code = n < 0 ? errno : ENOSPC; break }
            allocated += n
        }
        // The zeros are past every frame: losing them loses nothing (the file reads as zeros or ends there),
        // so a failed sync of them only means the log did not grow.
        if code == 0 && fdatasync(fd) != 0 {
            code = errno
            allocated = before
        }
        guard want <= allocated else { throw Self.failure("growing", path, code) }
    }

    /// Refuses every later append with `error`'s reason: what the file holds on disk is no longer known.
    func poison(_ error: HearthError) {
        guard failure == nil else { return }
        failure = HearthError(.unavailable, "\(error.message); commits are refused until hearthd restarts and recovers")
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    // MARK: Frames

    /// The frame holding `commits` (ascending, non-empty) of the store with history `history`, appended when
    /// the store's last seq was `prevSeq` (seqs of failed groups are not reused, so a frame's first seq may be
    /// above `prevSeq + 1`; recovery checks continuity with `prevSeq`).
    package static func frame(_ commits: [CommitRecord], history: UInt64, prevSeq: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: headerSize)
        out.reserveCapacity(headerSize + commits.reduce(64) { $0 + 64 + $1.estimatedLogBytes })
        CommitRecordCodec.encode(commits, includingBefore: false, into: &out)
        let payloadCount = out.count - headerSize
        let first = commits.first?.seq ?? 0, last = commits.last?.seq ?? 0
        let payloadSum = out[headerSize...].withUnsafeBytes { b in
            var c = RowChecksum()
            c.bytes(b)
            return UInt64(bitPattern: c.value)
        }
        out.withUnsafeMutableBytes { h in
            h.storeBytes(of: magic.littleEndian, toByteOffset: 0, as: UInt32.self)
            h.storeBytes(of: UInt32(truncatingIfNeeded: payloadCount).littleEndian, toByteOffset: 4, as: UInt32.self)
            h.storeBytes(of: history.littleEndian, toByteOffset: 8, as: UInt64.self)
            h.storeBytes(of: prevSeq.littleEndian, toByteOffset: 16, as: UInt64.self)
            h.storeBytes(of: first.littleEndian, toByteOffset: 24, as: UInt64.self)
            h.storeBytes(of: last.littleEndian, toByteOffset: 32, as: UInt64.self)
            h.storeBytes(of: payloadSum.littleEndian, toByteOffset: 40, as: UInt64.self)
            h.storeBytes(of: headerChecksum(UnsafeRawBufferPointer(rebasing: h[0..<48])).littleEndian, toByteOffset: 48, as: UInt64.self)
        }
        return out
    }

    /// The largest payload a frame's length field holds.
    static let maxPayload = Int(UInt32.max)

    private static func headerChecksum(_ header: UnsafeRawBufferPointer) -> UInt64 {
        var c = RowChecksum()
        c.bytes(header)
        return UInt64(bitPattern: c.value)
    }

    /// A frame's header, when its own checksum holds (its length can then be trusted).
    private struct Header {
        var length: Int
        var history: UInt64
        var prevSeq: UInt64
        var firstSeq: UInt64
        var lastSeq: UInt64
        var payloadSum: UInt64
    }

    private static func header(at offset: Int, in bytes: [UInt8]) -> Header? {
        guard bytes.count - offset >= headerSize else { return nil }
        return bytes.withUnsafeBytes { b -> Header? in
            func u64(_ at: Int) -> UInt64 { b.loadUnaligned(fromByteOffset: offset + at, as: UInt64.self).littleEndian }
            guard b.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian == magic,
                  headerChecksum(UnsafeRawBufferPointer(rebasing: b[offset..<(offset + 48)])) == u64(48) else { return nil }
            let h = Header(length: Int(b.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian),
                           history: u64(8), prevSeq: u64(16), firstSeq: u64(24), lastSeq: u64(32), payloadSum: u64(40))
            return h.firstSeq <= h.lastSeq && h.prevSeq < h.firstSeq ? h : nil
        }
    }

    /// The whole frame at `offset` of `bytes`; nil, with its header when that holds, when there is none.
    private static func frame(at offset: Int, in bytes: [UInt8]) -> (frame: Frame?, header: Header?) {
        guard let h = header(at: offset, in: bytes) else { return (nil, nil) }
        guard h.length <= bytes.count - offset - headerSize else { return (nil, h) }
        let payload = bytes[(offset + headerSize)..<(offset + headerSize + h.length)]
        let sum = payload.withUnsafeBytes { b in
            var c = RowChecksum()
            c.bytes(b)
            return UInt64(bitPattern: c.value)
        }
        guard sum == h.payloadSum else { return (nil, h) }
        return (Frame(offset: offset, history: h.history, prevSeq: h.prevSeq, firstSeq: h.firstSeq, lastSeq: h.lastSeq,
                      payload: payload), h)
    }

    /// Splits `bytes` into whole frames and the torn end, if any. Zeros after the last whole frame are the
    /// preallocated rest of the file. Bytes that are not a whole frame are a torn last append, unless a whole
    /// frame of `history` with later seqs follows them: that is damage inside the log (the groups in between
    /// are lost), which recovery must not skip silently (DATA_LOSS). A frame whose header holds but whose
    /// payload does not is torn at its payload; the search for a later frame starts after its declared end.
    /// `storeSeq`: the store's last seq; bytes that are not a frame before frames the store already holds
    /// are not worth refusing to start for. A whole frame of another history, anywhere, makes this another
    /// store's log (INTERNAL).
    package static func parse(_ bytes: [UInt8], path: String, history: UInt64, storeSeq: UInt64 = 0) throws(HearthError) -> (frames: [Frame], tear: Tear?) {
        var frames: [Frame] = []
        var offset = 0
        while offset < bytes.count {
            let (found, header) = frame(at: offset, in: bytes)
            if let f = found {
                guard f.history == history else { throw foreignLog(path, f, history) }
                frames.append(f)
                offset = f.end
                continue
            }
            guard let lastByte = bytes[offset...].lastIndex(where: { $0 != 0 }) else { return (frames, nil) }
            let reason: String
            if let header {
                reason = header.length > bytes.count - offset - headerSize
                    ? "its group needs \(header.length) bytes after the header" : "its group's checksum does not match"
            } else {
                reason = bytes.count - offset < headerSize ? "a frame header needs \(headerSize) bytes" : "no whole frame header"
            }
            let tear = Tear(offset: offset, length: lastByte + 1 - offset, reason: reason)
            let lastGood = max(frames.last?.lastSeq ?? 0, storeSeq)
            var later = header.map { offset + headerSize + min($0.length, bytes.count - offset - headerSize) } ?? offset + 1
            while later + headerSize <= lastByte + 1 {
                if let f = frame(at: later, in: bytes).frame {
                    guard f.history == history else { throw foreignLog(path, f, history) }
                    guard f.lastSeq <= lastGood else {
                        throw HearthError(.dataLoss, "storage: \(path) is damaged at offset \(offset) (\(tear.reason)): a whole group of seq \(f.firstSeq)...\(f.lastSeq) follows at offset \(later), so the commits before it cannot be recovered; move the file away to start without them")
                    }
                }
                later += 1
            }
            return (frames, tear)
        }
        return (frames, nil)
    }

    private static func foreignLog(_ path: String, _ f: Frame, _ history: UInt64) -> HearthError {
        HearthError(.internal, "storage: \(path) belongs to another store (a group of history \(f.history) at offset \(f.offset); this store's is \(history)); move it away if this store is the one to keep")
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
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let e = Self.failure("writing", path, n < 0 ? errno : ENOSPC)
                rollBack(to: size, length: written)
                throw e
            }
            written += n
        }
        guard fdatasync(fd) == 0 else {
            // After a failed fsync the kernel may have dropped the dirty pages: what the file holds is unknown.
            let e = Self.failure("syncing", path, errno)
            poison(e)
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
            poison(Self.failure("zeroing a refused group in", path, errno))
            return
        }
        size = offset
    }

    /// Empties the log for good at a clean close (SQLite's synced files hold every frame), giving its blocks
    /// back. The empty file stays: it marks the directory as one that holds a store (`SQLiteStore`). A failure
    /// leaves frames SQLite already holds, which the next open skips.
    func empty() {
        if ftruncate(fd, 0) == 0, fdatasync(fd) == 0 {
            size = 0
            allocated = 0
        }
    }

    /// Empties the log once SQLite's own files hold every frame durably, keeping one chunk allocated.
    func reset() throws(HearthError) {
        guard ftruncate(fd, 0) == 0 else {
            let e = Self.failure("emptying", path, errno)
            poison(e)
            throw e
        }
        size = 0
        allocated = 0
        do { try makeRoom(0) } catch where error.isDiskFull {
            // No room to preallocate: the file grows as frames come.
        }
        guard fdatasync(fd) == 0 else {
            let e = Self.failure("emptying", path, errno)
            poison(e)
            throw e
        }
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
