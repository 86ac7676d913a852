#if canImport(Glibc)
import Glibc
#endif

/// The checkpoint of an import: one line, the number of document lines from the file's start that are
/// durable in the daemon. Written to `PATH.tmp`, synced and renamed over `PATH`, so it is always whole.
struct ImportCheckpoint {
    let path: String

    /// The saved count; nil when there is no checkpoint.
    func load() throws -> Int? {
        guard let f = fopen(path, "r") else {
            if errno == ENOENT { return nil }
            throw OpsError("cannot read the checkpoint \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, 64, f) != nil,
              let n = Int(String(cString: buffer).trimmingCharacters(in: [" ", "\n"])), n >= 0 else {
            throw OpsError("the checkpoint \(path) is not a line count; delete it to start over")
        }
        return n
    }

    func save(_ lines: Int) throws {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OpsError("cannot write the checkpoint \(tmp): \(String(cString: strerror(errno)))") }
        let text = Array("\(lines)\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = fsync(fd)
        close(fd)
        guard written == text.count, rename(tmp, path) == 0 else {
            throw OpsError("cannot write the checkpoint \(path): \(String(cString: strerror(errno)))")
        }
    }

    func remove() throws {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw OpsError("cannot remove the checkpoint \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Lines of a file (or standard input), without their line breaks; any length.
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var line: UnsafeMutablePointer<CChar>?
    private var capacity = 0

    init(path: String?) throws {
        if let path {
            guard let f = fopen(path, "r") else { throw OpsError("cannot read \(path): \(String(cString: strerror(errno)))") }
            file = f
        } else {
            file = fdopen(dup(0), "r")!
        }
    }

    deinit {
        free(line)
        fclose(file)
    }

    func next() throws -> [UInt8]? {
        let n = getline(&line, &capacity, file)
        guard n >= 0, let line else {
            if ferror(file) != 0 { throw OpsError("reading the import file: \(String(cString: strerror(errno)))") }
            return nil
        }
        var count = n
        if count > 0 && line[count - 1] == 10 { count -= 1 }
        return line.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }
}
