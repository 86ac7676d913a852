#if canImport(Glibc)
import Glibc
#endif

/// The few file operations the fuzz driver needs (no Foundation: the fuzz build stays small).
enum FileIO {
    static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    static func read(_ path: String) -> [UInt8] {
        guard let f = fopen(path, "rb") else { return [] }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return out
    }

    static func writeFile(_ path: String, _ bytes: [UInt8]) {
        guard let f = fopen(path, "wb") else { return }
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }

    /// `path` itself when it is a file, else the regular files directly in it, sorted.
    static func files(under path: String) -> [String] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [] }
        if (st.st_mode & S_IFMT) != S_IFDIR { return [path] }
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            names.append(path + "/" + name)
        }
        return names.sorted().filter { var s = stat(); return stat($0, &s) == 0 && (s.st_mode & S_IFMT) == S_IFREG }
    }
}
