#if canImport(Glibc)
import Glibc
#endif
import HearthEngine
import HearthModel
import HearthProtocol

/// The declared composite indexes, kept in `<data-dir>/indexes.json` (written atomically: temp file, fsync,
/// rename) so an operator can read and version it:
/// `{"nextId":3,"indexes":[{"id":1,"collection":"call_records","scope":"collection",
///   "fields":[["customerId","asc"],["callDate","desc"]],"state":"ready"}]}`.
struct IndexCatalogFile {
    let path: String

    init(dataDir: String) { path = dataDir + "/indexes.json" }

    /// The declared indexes; none when the file does not exist. Any other failure (unreadable, not JSON, a bad
    /// definition) throws an error that names the file.
    func load() throws(HearthError) -> (indexes: [IndexDefinition], nextID: Int64) {
        guard let f = fopen(path, "rb") else {
            if errno == ENOENT { return ([], 1) }
            throw HearthError(.unavailable, "cannot read the index catalog \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        if ferror(f) != 0 {
            throw HearthError(.unavailable, "cannot read the index catalog \(path): \(String(cString: strerror(errno)))")
        }
        do throws(HearthError) {
            let parser = JSONParser()
            let root = try parser.parse(bytes)
            guard root.kind == .object else { throw HearthError.invalid("expected a JSON object") }
            var defs: [IndexDefinition] = []
            for el in root["indexes"]?.elements ?? JSONRef.emptyElements(parser) {
                defs.append(try IndexHandlers.definition(el, id: el["id"]?.int64 ?? 0,
                                                         state: IndexDefinition.State(rawValue: el["state"]?.string ?? "") ?? .building))
            }
            return (defs, root["nextId"]?.int64 ?? 1)
        } catch {
            throw HearthError(error.code, "the index catalog \(path) is damaged: \(error.message) (restore it from a backup, or move it away to start with no declared indexes)")
        }
    }

    /// Writes the catalog atomically (a temporary file, mode 0600, fsynced, renamed over the old one).
    func save(_ indexes: [IndexDefinition], nextID: Int64) throws(HearthError) {
        var w = JSONWriter()
        w.beginObject()
        w.key("nextId"); w.int(nextID)
        w.key("indexes")
        w.beginArray()
        for d in indexes { IndexHandlers.write(d, into: &w) }
        w.endArray()
        w.endObject()
        w.newline()
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0, let f = fdopen(fd, "wb") else {
            let reason = String(cString: strerror(errno))
            throw HearthError(.unavailable, "cannot write \(tmp): \(reason)")
        }
        let bytes = w.bytes
        let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count && fflush(f) == 0 && fsync(fileno(f)) == 0
        let failure = errno
        fclose(f)
        guard ok else {
            unlink(tmp)
            throw HearthError(.unavailable, "cannot write \(tmp): \(String(cString: strerror(failure)))")
        }
        guard rename(tmp, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(tmp)
            throw HearthError(.unavailable, "cannot rename \(tmp) to \(path): \(reason)")
        }
    }
}

extension JSONRef {
    /// An empty element sequence, for a missing array.
    static func emptyElements(_ parser: JSONParser) -> JSONRef.Elements {
        (try! parser.parse("[]")).elements
    }
}
