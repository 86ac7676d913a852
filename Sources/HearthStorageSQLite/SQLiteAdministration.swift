#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthStorage

/// The administration reads run on a snapshot connection of their own (never the loop thread's reader), and
/// compaction takes the writer's lock like one applier transaction: commits go on into the commit log and
/// wait for it only in the applier's backlog (docs/operations.md, "Compaction"), and readers keep reading
/// (WAL).
extension SQLiteStore: StoreAdministration {
    public func collectionIDs(under parent: DocumentPath?) throws(HearthError) -> [String] {
        try withSnapshotReader { (r: SQLiteReader) throws(HearthError) in
            let prefix = parent.map { $0.description + "/" } ?? ""
            // Collections under the prefix sort in [prefix, prefix with its last byte "/" raised to "0").
            let end = parent.map { $0.description + "0" }
            let sql = end == nil
                ? "SELECT collection FROM documents WHERE collection >= ?1 AND (?2 = 0 OR collection > ?1) ORDER BY collection LIMIT 1"
                : "SELECT collection FROM documents WHERE collection >= ?1 AND (?2 = 0 OR collection > ?1) AND collection < ?3 ORDER BY collection LIMIT 1"
            return try r.connection.withStatement(sql, name: "next collection") { (s: SQLiteStatement) throws(HearthError) in
                try CollectionIDWalk.ids(prefix: prefix) { (cursor, strictly) throws(HearthError) in
                    defer { s.reset() }
                    try s.bind(1, cursor)
                    try s.bind(2, Int64(strictly ? 1 : 0))
                    if let end { try s.bind(3, end) }
                    return try s.step() ? s.text(0) : nil
                }
            }
        }
    }

    public func documentPaths(under root: ResourcePath, limit: Int) throws(HearthError) -> [DocumentPath] {
        guard limit > 0 else { return [] }
        return try withSnapshotReader { (r: SQLiteReader) throws(HearthError) in
            let text = root.description
            var paths: [DocumentPath] = []
            if root.segments.count % 2 == 0 {
                // A document: itself first.
                let doc = try DocumentPath(root)
                if try r.get(doc) != nil { paths.append(doc) }
            } else {
                try collect(r, "SELECT collection, id FROM documents WHERE collection = ?1 ORDER BY id LIMIT ?2",
                            [text], limit, &paths)
            }
            if paths.count < limit {
                try collect(r, "SELECT collection, id FROM documents WHERE collection >= ?1 AND collection < ?2 ORDER BY collection, id LIMIT ?3",
                            [text + "/", text + "0"], limit - paths.count, &paths)
            }
            return paths
        }
    }

    private func collect(_ r: SQLiteReader, _ sql: String, _ texts: [String], _ limit: Int,
                         _ paths: inout [DocumentPath]) throws(HearthError) {
        try r.connection.withStatement(sql, name: "subtree documents") { (s: SQLiteStatement) throws(HearthError) in
            for (i, t) in texts.enumerated() { try s.bind(Int32(i + 1), t) }
            try s.bind(Int32(texts.count + 1), Int64(limit))
            while try s.step() {
                let collection = s.text(0), id = s.text(1)
                do throws(HearthError) {
                    paths.append(try DocumentPath(parsing: collection + "/" + id))
                } catch {
                    throw StorageDamage.document("\(collection)/\(id)", "invalid path: \(error.message)")
                }
            }
        }
    }

    public func bytesOnDisk() -> Int64 {
        var total: Int64 = 0
        let directory = String(databasePath.dropLast(Self.fileName.count))
        let logs = [CommitLog.fileName, CommitLog.retiredName].map { directory + $0 }
        for file in ["", "-wal", "-shm"].map({ databasePath + $0 }) + logs {
            var st = stat()
            if stat(file, &st) == 0 { total += Int64(st.st_blocks) * 512 }
        }
        return total
    }

    /// The first compaction switches the database to incremental auto-vacuum with one `VACUUM` (a rewrite
    /// of the whole file); later ones run `PRAGMA incremental_vacuum`, which only returns free pages.
    public func compact() throws(HearthError) -> CompactionResult {
        // What was deleted and acknowledged must be in SQLite before the vacuum, or its space stays taken.
        try drainApplier()
        let before = bytesOnDisk()
        // A vacuum rewrites the whole database through the WAL: paced out to the disk as it goes.
        writeback?.begin()
        defer { writeback?.end() }
        let method = try writer.withLock { (w: inout SQLiteWriter?) throws(HearthError) -> String in
            guard let w else { throw HearthError(.unavailable, "storage: the store is closed") }
            let c = w.connection
            let method: String
            if try c.queryInt("PRAGMA auto_vacuum") == 2 {
                _ = try c.queryColumn("PRAGMA incremental_vacuum")
                method = "incremental vacuum"
            } else {
                try c.exec("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;", "compacting (VACUUM)")
                method = "full vacuum"
            }
            // The rewritten pages are in the WAL: copy them into hearth.db and empty the WAL. A checkpoint the
            // background checkpointer or a reader holds up reports busy; try again for up to a second.
            for _ in 0..<100 {
                if try c.queryInt("PRAGMA wal_checkpoint(TRUNCATE)") == 0 { break }
                usleep(10_000)
            }
            return method
        }
        return CompactionResult(method: method, bytesBefore: before, bytesAfter: bytesOnDisk())
    }

    /// SQLite's own state on a snapshot connection, once it holds every commit acknowledged before the call (these reads
    /// walk SQLite's tables directly, without the pending groups).
    private func withSnapshotReader<R>(_ body: (SQLiteReader) throws(HearthError) -> R) throws(HearthError) -> R {
        try drainApplier()
        let snap = try snapshot()
        defer { snap.close() }
        guard let s = snap as? SQLiteSnapshot else { throw HearthError(.internal, "storage: unexpected snapshot type") }
        return try body(try s.open())
    }
}
