#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// The data directory: created on first open (like `mkdir -p`), holding hearth.db and SQLite's -wal and -shm
/// files beside it, and `LOCK` (see `DataDirectoryLock`).
enum DataDirectory {
    /// Creates `path` and any missing parents. Intermediate directories get mode 0755, the data directory itself
    /// 0700 (both less the umask): the database is nobody else's business. An existing `path` that is not a
    /// directory, or a file where a parent should be, fails with a message saying so.
    static func create(_ path: String) throws(HearthError) {
        guard !path.isEmpty else { throw HearthError(.invalidArgument, "storage: the data directory path is empty") }
        var st = stat()
        if stat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw HearthError(.unavailable, "storage: the data directory \(path) is not a directory")
            }
            return
        }
        let parts = path.split(separator: "/")
        var prefix = path.hasPrefix("/") ? "/" : ""
        for (i, part) in parts.enumerated() {
            prefix += part
            let mode: mode_t = i == parts.count - 1 ? 0o700 : 0o755
            let made = mkdir(prefix, mode) == 0
            if !made && errno != EEXIST {
                let failure = errno
                if failure == ENOTDIR, let file = firstNonDirectory(on: path) {
                    throw HearthError(.unavailable, "storage: cannot create the data directory \(path): \(file) is not a directory")
                }
                throw HearthError(.unavailable, "storage: cannot create the data directory \(path): \(prefix): \(describe(failure))")
            }
            // A new directory's entry in its parent survives a power loss only once the parent is synced.
            if made { try sync(parent(of: prefix)) }
            prefix += "/"
        }
    }

    /// The directory holding `path` ("." for a bare name).
    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The first prefix of `path` that exists and is not a directory (a file where a directory should be).
    private static func firstNonDirectory(on path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part
            var st = stat()
            if stat(prefix, &st) == 0 && st.st_mode & S_IFMT != S_IFDIR { return prefix }
            prefix += "/"
        }
        return nil
    }

    /// fsyncs the directory itself, so that the files created in it (their names) survive a power loss.
    static func sync(_ directory: String) throws(HearthError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw HearthError(.unavailable, "storage: opening the data directory \(directory) to sync it: \(describe(errno))") }
        defer { _ = close(fd) }
        guard fsync(fd) == 0 else { throw HearthError(.unavailable, "storage: syncing the data directory \(directory): \(describe(errno))") }
    }

    /// `directory/name`, without doubling a trailing slash.
    static func file(_ name: String, in directory: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// A system error in words, lower case as it reads inside a sentence: "permission denied",
    /// "read-only file system", "not a directory", "no space left on device".
    static func describe(_ code: Int32) -> String {
        switch code {
        case EACCES, EPERM: return "permission denied"
        case EROFS: return "read-only file system"
        case ENOTDIR: return "not a directory"
        case EISDIR: return "is a directory"
        case ENOSPC: return "no space left on device"
        default: return String(cString: strerror(code)).lowercased()
        }
    }
}

/// An exclusive lock on a data directory, held for as long as a store is open on it, so that two daemons (or a
/// daemon and a tool) never open the same database: `flock` on `<dir>/LOCK`, which holds the holder's pid.
///
/// The lock belongs to the open file description, so it goes away when the process dies, however it dies (no
/// stale lock to clean up), and a second open in the same process conflicts too. The file stays when the lock is
/// released: deleting it would let one process lock a file another has just unlinked.
public final class DataDirectoryLock: Sendable {
    static let fileName = "LOCK"

    /// `<dir>/LOCK`.
    let path: String
    /// The locked file, -1 once released.
    private let descriptor: Locked<Int32>

    /// Takes the lock, or throws UNAVAILABLE naming the directory and, when another process holds it, its pid.
    /// Changes nothing when the lock is held elsewhere (the file already exists then).
    init(directory: String) throws(HearthError) {
        path = DataDirectory.file(Self.fileName, in: directory)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let failure = errno
            let what: String
            switch failure {
            case EROFS: what = "the data directory \(directory) is read-only (read-only file system): cannot open \(path)"
            case EACCES, EPERM: what = "permission denied: cannot open \(path) in the data directory \(directory)"
            default: what = "cannot open the data directory's lock file \(path): \(DataDirectory.describe(failure))"
            }
            throw HearthError(.unavailable, "storage: \(what)")
        }
        guard Self.lock(fd) else {
            let failure = errno
            let holder = Self.holder(fd)
            close(fd)
            if failure == EWOULDBLOCK {
                let who = holder.map { $0 == getpid() ? "pid \($0) (this process)" : "pid \($0)" } ?? "another process (pid unknown)"
                throw HearthError(.unavailable, "storage: the data directory \(directory) is in use by \(who), which holds the lock \(path)")
            }
            throw HearthError(.unavailable, "storage: cannot lock the data directory \(directory) (\(path)): \(DataDirectory.describe(failure))")
        }
        // Write the pid over the old one, then cut what is left: no new block is needed when the file had one
        // already, so a full disk cannot keep the daemon from starting here.
        var text = Array("\(getpid())\n".utf8)
        let written = text.withUnsafeMutableBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        if written == text.count { _ = ftruncate(fd, off_t(text.count)) }
        descriptor = Locked(fd)
    }

    deinit { release() }

    /// Creates `directory` when missing (as a store's data directory is) and takes its lock: for a daemon whose
    /// store lives elsewhere (PostgreSQL) but whose node directory is still its own.
    public static func creating(_ directory: String) throws(HearthError) -> DataDirectoryLock {
        try DataDirectory.create(directory)
        return try DataDirectoryLock(directory: directory)
    }

    /// Releases the lock (closing the file). Idempotent.
    public func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
        }
    }

    /// Takes the lock without waiting for another holder, except this process itself: a lock this process has
    /// just released is still held by a copy of its descriptor in a child that another thread is spawning, from
    /// the fork until the exec closes it (the descriptor is close-on-exec; microseconds, longer on a loaded
    /// machine), and nothing marks the end of that window. So while the file names this process, the lock is
    /// tried again for up to `ownLockWaitMicros` (a second open in this process fails after that wait).
    /// False with errno set when it is not taken.
    private static func lock(_ fd: Int32) -> Bool {
        var waited: UInt32 = 0
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            let failure = errno
            guard failure == EWOULDBLOCK, waited < ownLockWaitMicros, holder(fd) == getpid() else {
                errno = failure
                return false
            }
            usleep(10_000)
            waited += 10_000
        }
    }

    /// How long a lock held by this process itself is waited for (see `lock`).
    static let ownLockWaitMicros: UInt32 = 2_000_000

    /// The pid written in the lock file, if it reads as one.
    private static func holder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        let digits = buffer[..<n].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard let pid = Int32(String(decoding: digits, as: UTF8.self)), pid > 0 else { return nil }
        return pid
    }
}
