#if canImport(Glibc)
import Glibc
#endif
import HearthModel
import HearthProtocol

/// `<data-dir>/indexes.json`, where Hearth kept the declared composite indexes before the catalog moved into
/// the store (schema version 4). Read once, at start, when the store has no catalog yet: the server imports
/// it with a commit and, once that is durable, renames the file to `indexes.json.imported` (kept for
/// reference; nothing reads it again).
struct IndexCatalogFile {
    let path: String

    init(dataDir: String) { path = dataDir + "/indexes.json" }

    /// Where the file goes once imported.
    var importedPath: String { path + ".imported" }

    var exists: Bool { access(path, F_OK) == 0 }

    /// The catalog the file holds; nil when there is no file.
    func load() throws(HearthError) -> IndexCatalog? {
        guard let f = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw HearthError(.unavailable, "cannot read \(path): errno \(errno)")
        }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        do { return try IndexCatalogJSON.decode(bytes) } catch {
            throw HearthError(.internal, "\(path): \(error.message)")
        }
    }

    /// Renames the file out of the way (`indexes.json.imported`).
    func retire() throws(HearthError) {
        guard rename(path, importedPath) == 0 else {
            throw HearthError(.unavailable, "cannot rename \(path) to \(importedPath): errno \(errno)")
        }
    }
}
