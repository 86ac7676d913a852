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

    func load() throws(HearthError) -> (indexes: [IndexDefinition], nextID: Int64) {
        guard let f = fopen(path, "rb") else { return ([], 1) }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        let parser = JSONParser()
        let root = try parser.parse(bytes)
        var defs: [IndexDefinition] = []
        for el in root["indexes"]?.elements ?? JSONRef.emptyElements(parser) {
            defs.append(try IndexHandlers.definition(el, id: el["id"]?.int64 ?? 0,
                                                     state: IndexDefinition.State(rawValue: el["state"]?.string ?? "") ?? .building))
        }
        return (defs, root["nextId"]?.int64 ?? 1)
    }

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
        guard let f = fopen(tmp, "wb") else { throw HearthError(.unavailable, "cannot write \(tmp): errno \(errno)") }
        let bytes = w.bytes
        let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count && fflush(f) == 0 && fsync(fileno(f)) == 0
        fclose(f)
        guard ok, rename(tmp, path) == 0 else { throw HearthError(.unavailable, "cannot write \(path): errno \(errno)") }
    }
}

extension JSONRef {
    /// An empty element sequence, for a missing array.
    static func emptyElements(_ parser: JSONParser) -> JSONRef.Elements {
        (try! parser.parse("[]")).elements
    }
}
