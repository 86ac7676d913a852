#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the small files that hold secrets and keys (`--auth-secret-file`, `--admin-key-file`,
/// `--auth-jwks`).
public enum SecretFile {
    /// The whole file, at most `limit` bytes.
    public static func read(_ path: String, limit: Int) throws(AuthConfigError) -> [UInt8] {
        guard let f = fopen(path, "rb") else {
            throw AuthConfigError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n > 0 { bytes += chunk[0..<n] }
            if bytes.count > limit { throw AuthConfigError("\(path) is larger than \(limit) bytes") }
            if n < chunk.count {
                if ferror(f) != 0 { throw AuthConfigError("cannot read \(path): \(String(cString: strerror(errno)))") }
                break
            }
        }
        return bytes
    }

    /// A secret: the file's bytes with one trailing line break ("\n" or "\r\n") removed, at least
    /// `minimumBytes` long. Nothing else is trimmed or decoded: a file written by `openssl rand -hex 32 > f`
    /// holds a 64-byte secret, the hex text itself.
    public static func secret(_ path: String, minimumBytes: Int) throws(AuthConfigError) -> [UInt8] {
        var bytes = try read(path, limit: 64 * 1024)
        if bytes.last == 10 {
            bytes.removeLast()
            if bytes.last == 13 { bytes.removeLast() }
        }
        guard bytes.count >= minimumBytes else {
            throw AuthConfigError("\(path) holds \(bytes.count) bytes; a secret needs at least \(minimumBytes) "
                + "(make one with: openssl rand -hex 32 > \(path))")
        }
        return bytes
    }
}
