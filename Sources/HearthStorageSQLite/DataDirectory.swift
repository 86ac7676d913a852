#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// The data directory: created on first open (like `mkdir -p`), holding hearth.db and SQLite's -wal and -shm
/// files beside it.
enum DataDirectory {
    /// Creates `path` and any missing parents. Intermediate directories get mode 0755, the data directory itself
    /// 0700 (both less the umask): the database is nobody else's business.
    static func create(_ path: String) throws(HearthError) {
        guard !path.isEmpty else { throw HearthError(.invalidArgument, "storage: the data directory path is empty") }
        let parts = path.split(separator: "/")
        var prefix = path.hasPrefix("/") ? "/" : ""
        for (i, part) in parts.enumerated() {
            prefix += part
            let mode: mode_t = i == parts.count - 1 ? 0o700 : 0o755
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw HearthError(.unavailable, "storage: cannot create the data directory \(prefix): \(reason)")
            }
            prefix += "/"
        }
    }

    /// `directory/name`, without doubling a trailing slash.
    static func file(_ name: String, in directory: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
