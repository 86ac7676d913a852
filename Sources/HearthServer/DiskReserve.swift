#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `<data-dir>/RESERVE`: disk space held back while the disk has room, and given up when it fills, so that the
/// writes that free space (deletes) can still commit and an operator can make room through the API.
///
/// The file's blocks are allocated (`posix_fallocate`), not a sparse hole, on filesystems that allocate
/// (ext4, xfs, tmpfs). It is created with mode 0600 at start, removed when a commit fails for a full disk, and
/// created again once the filesystem has room for it and as much again (`hasRoomToRestore`).
final class DiskReserve {
    static let fileName = "RESERVE"

    let path: String
    let directory: String
    /// The reserve's size (0: none is kept).
    let bytes: Int
    /// True while the reserve file exists at its full size.
    private(set) var isHeld = false
    /// Bytes the daemon may still write on the data directory's filesystem; nil when unknown. A property so
    /// tests can pretend the disk is full or has room.
    var freeBytes: () -> Int?

    init(dataDir: String, bytes: Int) {
        directory = dataDir
        path = dataDir.hasSuffix("/") ? dataDir + Self.fileName : dataDir + "/" + Self.fileName
        self.bytes = bytes
        freeBytes = { [directory = dataDir] in DiskReserve.available(in: directory) }
    }

    /// Creates the reserve (or completes one left by an earlier run); with size 0, removes any old one.
    /// Returns nil, or why it could not (a partly allocated file is removed again).
    func create() -> String? {
        guard bytes > 0 else {
            unlink(path)
            isHeld = false
            return nil
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(path): \(String(cString: strerror(errno)))" }
        let rc = posix_fallocate(fd, 0, off_t(bytes))
        if rc == 0 { _ = ftruncate(fd, off_t(bytes)) }   // a larger reserve from an earlier run shrinks
        close(fd)
        guard rc == 0 else {
            unlink(path)
            isHeld = false
            return "cannot allocate \(bytes >> 20) MiB for \(path): \(String(cString: strerror(rc)))"
        }
        isHeld = true
        return nil
    }

    /// Removes the reserve, giving its space back to the filesystem. Returns the bytes released.
    @discardableResult
    func release() -> Int {
        guard isHeld else { return 0 }
        unlink(path)
        isHeld = false
        return bytes
    }

    /// True when the filesystem has room for the reserve plus as much again (at least 1 MiB) for writes, so
    /// re-creating it does not fill the disk at once.
    var hasRoomToRestore: Bool {
        guard let free = freeBytes() else { return false }
        return free >= bytes + max(bytes, 1 << 20)
    }

    /// `statvfs`: the blocks available to an unprivileged writer, in bytes.
    static func available(in directory: String) -> Int? {
        var s = statvfs()
        guard statvfs(directory, &s) == 0 else { return nil }
        return Int(s.f_bavail) * Int(s.f_frsize)
    }
}
