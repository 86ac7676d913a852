import HearthModel
import HearthStorage

/// Every read of the store as SQL on one connection: the store runs them on its reader connection (each
/// statement one consistent state, PostgreSQL's statement snapshot), a `PostgresSnapshot` inside its
/// REPEATABLE READ transaction (all of them at one seq). One place for the SQL, so the two cannot differ.
struct PostgresReads {
    let connection: PGConnection

    static let documentColumns = "parent, id, data, create_us, update_us, seq"

    func get(_ path: DocumentPath) throws(HearthError) -> StoredDocument? {
        let rows = try connection.query("SELECT \(Self.documentColumns) FROM hearth_documents WHERE parent = $1 AND id = $2",
                                        [.utf8(path.collectionDescription), .utf8(path.id)], "reading \(path)")
        return rows.count == 0 ? nil : try Self.document(rows, 0, column: 0)
    }

    func list(collection: CollectionPath, afterID: String?, limit: Int) throws(HearthError) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        let rows: PGRows
        if let afterID {
            rows = try connection.query("SELECT \(Self.documentColumns) FROM hearth_documents WHERE parent = $1 AND id > $2 ORDER BY id LIMIT $3",
                                        [.utf8(collection.description), .utf8(afterID), Self.limit(limit)], "listing \(collection)")
        } else {
            rows = try connection.query("SELECT \(Self.documentColumns) FROM hearth_documents WHERE parent = $1 ORDER BY id LIMIT $2",
                                        [.utf8(collection.description), Self.limit(limit)], "listing \(collection)")
        }
        return try (0..<rows.count).map { (i) throws(HearthError) in try Self.document(rows, i, column: 0) }
    }

    func scanIndex(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        guard limit > 0, upper.isEmpty || lower.lexicographicallyPrecedes(upper) else { return [] }
        var params: [PGValue] = [.bytea(lower), Self.limit(limit)]
        if !upper.isEmpty { params.append(.bytea(upper)) }
        let rows = try connection.query("""
            SELECT e.key, d.parent, d.id, d.data, d.create_us, d.update_us, d.seq
            FROM hearth_index_entries e JOIN hearth_documents d ON d.parent = e.parent AND d.id = e.id
            WHERE e.key >= $1\(upper.isEmpty ? "" : " AND e.key < $3")
            ORDER BY e.key\(reverse ? " DESC" : "") LIMIT $2
            """, params, "scanning an index")
        return try (0..<rows.count).map { (i) throws(HearthError) in
            IndexHit(key: rows.bytes(i, 0) ?? [], document: try Self.document(rows, i, column: 1))
        }
    }

    func visitIndexEntries(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
                           _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        guard limit > 0, upper.isEmpty || lower.lexicographicallyPrecedes(upper) else { return }
        var params: [PGValue] = [.bytea(lower), Self.limit(limit)]
        if !upper.isEmpty { params.append(.bytea(upper)) }
        let rows = try connection.query("""
            SELECT key, parent, id FROM hearth_index_entries
            WHERE key >= $1\(upper.isEmpty ? "" : " AND key < $3")
            ORDER BY key\(reverse ? " DESC" : "") LIMIT $2
            """, params, "scanning an index")
        for i in 0..<rows.count {
            let go = try rows.withBytes(i, 0) { (k) throws(HearthError) in
                try rows.withBytes(i, 1) { (c) throws(HearthError) in
                    try rows.withBytes(i, 2) { (d) throws(HearthError) in try visit(IndexEntryView(key: k, collection: c, id: d)) }
                }
            }
            if !go { return }
        }
    }

    func countIndex(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        guard upper.isEmpty || lower.lexicographicallyPrecedes(upper) else { return 0 }
        var params: [PGValue] = [.bytea(lower)]
        if !upper.isEmpty { params.append(.bytea(upper)) }
        let rows = try connection.query("SELECT count(*) FROM hearth_index_entries WHERE key >= $1\(upper.isEmpty ? "" : " AND key < $2")",
                                        params, "counting an index range")
        return Int(rows.int64(0, 0))
    }

    /// The commit that carried request `id`, while the change log holds it.
    func committedRequest(_ id: String) throws(HearthError) -> CommittedRequest? {
        let rows = try connection.query("SELECT seq, request_answer FROM hearth_commits WHERE request_id = $1 ORDER BY seq LIMIT 1",
                                        [.string(id)], "looking up request \(id)")
        guard rows.count == 1 else { return nil }
        return CommittedRequest(seq: rows.uint64(0, 0), answer: rows.bytes(0, 1) ?? [])
    }

    /// The change log after `after`: nil when retention pruned part of it. One statement (one snapshot) reads
    /// the pruning point and the commits with their mutations. Each commit's mutations are looked up by its
    /// seq (a nested loop over the primary key): a plain join lets a prepared statement's generic plan merge
    /// with `hearth_changes` from its first row, which costs the whole log on every read of its end.
    func changes(after: UInt64, limit: Int) throws(HearthError) -> [CommitRecord]? {
        let rows = try connection.query("""
            SELECT m.pruned_through, c.seq, c.commit_us, ch.path,
                   ch.before_data, ch.before_create_us, ch.before_update_us, ch.before_seq,
                   ch.after_data, ch.after_create_us, ch.after_update_us, ch.after_seq
            FROM hearth_meta m
            LEFT JOIN LATERAL (SELECT seq, commit_us FROM hearth_commits WHERE seq > $1 ORDER BY seq LIMIT $2) c ON true
            LEFT JOIN LATERAL (SELECT * FROM hearth_changes x WHERE x.seq = c.seq ORDER BY x.ord) ch ON true
            ORDER BY c.seq, ch.ord
            """, [.int8(Self.seqBound(after)), Self.limit(max(0, limit))], "reading the change log after seq \(after)")
        guard rows.count > 0 else { throw HearthError(.internal, "storage: hearth_meta has no row") }
        if after < rows.uint64(0, 0) { return nil }
        guard limit > 0 else { return [] }
        var out: [CommitRecord] = []
        for i in 0..<rows.count where !rows.isNull(i, 1) {
            let seq = rows.uint64(i, 1)
            if out.last?.seq != seq {
                out.append(CommitRecord(seq: seq, commitTime: Timestamp(micros: rows.int64(i, 2)), mutations: []))
            }
            guard !rows.isNull(i, 3) else { continue }   // a commit without mutations (an index backfill)
            let text = rows.text(i, 3)
            let path: DocumentPath
            // As stored, like every backend: the path's segments, not a path a client may write (which refuses
            // reserved IDs a store may hold from an import).
            do { path = try DocumentPath(ResourcePath(segments: text.split(separator: "/", omittingEmptySubsequences: false).map(String.init))) } catch {
                throw StorageDamage.change(seq: seq, path: text, "invalid path: \(error.message)")
            }
            out[out.count - 1].mutations.append(Mutation(path: path, before: Self.image(rows, i, column: 4, path: path),
                                                         after: Self.image(rows, i, column: 8, path: path)))
        }
        return out
    }

    /// Documents of `scope` in export order (parent bytes, then ID bytes), after `after`.
    func documents(in scope: DocumentScope, after: DocumentPath?, limit: Int) throws(HearthError) -> [StoredDocument] {
        guard limit > 0 else { return [] }
        var conditions: [String] = []
        var params: [PGValue] = [Self.limit(limit)]
        if let after {
            params.append(.utf8(after.collectionDescription)); params.append(.utf8(after.id))
            conditions.append("(parent, id) > ($\(params.count - 1), $\(params.count))")
        }
        switch scope {
        case .all: break
        case .collection(let c):
            params.append(.utf8(c.description))
            conditions.append("parent = $\(params.count)")
        case .collectionGroup(let id):
            // The parent's last segment is `id`: the parent is `id`, or ends with "/" + id.
            params.append(.utf8(id)); let n = params.count
            params.append(.utf8("/" + id))
            conditions.append("(parent = $\(n) OR (length(parent) > length($\(n + 1)) AND substring(parent FROM length(parent) - length($\(n + 1)) + 1) = $\(n + 1)))")
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let rows = try connection.query("SELECT \(Self.documentColumns) FROM hearth_documents \(filter) ORDER BY parent, id LIMIT $1",
                                        params, "reading documents for an export")
        return try (0..<rows.count).map { (i) throws(HearthError) in try Self.document(rows, i, column: 0) }
    }

    func lastSeq() throws(HearthError) -> UInt64 { try meta("last_seq") }
    func oldestResumableSeq() throws(HearthError) -> UInt64 { try meta("pruned_through") }
    func historyID() throws(HearthError) -> UInt64 { try meta("history_id") }

    func indexCatalog() throws(HearthError) -> [UInt8]? {
        let rows = try connection.query("SELECT data FROM hearth_index_catalog WHERE id = 1", [], "reading the index catalog")
        return rows.count == 0 ? nil : rows.bytes(0, 0)
    }

    private func meta(_ column: String) throws(HearthError) -> UInt64 {
        let rows = try connection.query("SELECT \(column) FROM hearth_meta WHERE id = 1", [], "reading \(column)")
        guard rows.count == 1 else { throw HearthError(.internal, "storage: hearth_meta has no row") }
        return rows.uint64(0, 0)
    }

    // MARK: Rows

    /// `LIMIT $n`: NULL (no limit) for limits beyond what int8 holds.
    static func limit(_ n: Int) -> PGValue { .int8(n == Int.max ? nil : Int64(n)) }

    /// A seq bound as int8 (seqs above Int64.max are never stored, so the largest int8 bounds them all).
    static func seqBound(_ seq: UInt64) -> Int64 { seq > UInt64(Int64.max) ? Int64.max : Int64(seq) }

    /// The document in columns `column...column+5` (parent, id, data, create_us, update_us, seq).
    static func document(_ rows: PGRows, _ row: Int, column: Int) throws(HearthError) -> StoredDocument {
        let path = try storedPath(rows.text(row, column), rows.text(row, column + 1))
        return StoredDocument(path: path, data: rows.bytes(row, column + 2) ?? [],
                              createTime: Timestamp(micros: rows.int64(row, column + 3)),
                              updateTime: Timestamp(micros: rows.int64(row, column + 4)), seq: rows.uint64(row, column + 5))
    }

    /// The path of a stored row (its parent collection and ID, as stored: not parsed as a client's path, which
    /// refuses reserved IDs a store may hold from an import); DATA_LOSS when they do not form one.
    static func storedPath(_ parent: String, _ id: String) throws(HearthError) -> DocumentPath {
        if id.utf8.contains(47) { throw StorageDamage.document("\(parent)/\(id)", "invalid path: its ID holds a \"/\"") }
        do { return try DocumentPath(ResourcePath(segments: parent.split(separator: "/", omittingEmptySubsequences: false).map(String.init) + [id])) } catch {
            throw StorageDamage.document("\(parent)/\(id)", "invalid path: \(error.message)")
        }
    }

    /// A change-log image in columns `column...column+3` (data, create_us, update_us, seq), nil when NULL.
    static func image(_ rows: PGRows, _ row: Int, column: Int, path: DocumentPath) -> StoredDocument? {
        guard let data = rows.bytes(row, column) else { return nil }
        return StoredDocument(path: path, data: data, createTime: Timestamp(micros: rows.int64(row, column + 1)),
                              updateTime: Timestamp(micros: rows.int64(row, column + 2)), seq: rows.uint64(row, column + 3))
    }
}
