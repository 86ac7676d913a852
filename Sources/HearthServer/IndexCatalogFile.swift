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
    func load() throws(HearthError) -> IndexCatalog? { try IndexCatalogJSON.load(file: path) }

    /// Renames the file out of the way (`indexes.json.imported`).
    func retire() throws(HearthError) {
        guard rename(path, importedPath) == 0 else {
            throw HearthError(.unavailable, "cannot rename \(path) to \(importedPath): errno \(errno)")
        }
    }
}
