import HearthModel
import HearthStorage

/// The reader connection's statements for `index_entries`: `scanIndex` and `countIndex`. Each call is ONE
/// statement, so it reads one committed snapshot (WAL) without an explicit transaction.
///
/// A scan walks the `index_entries` primary key in key order (either direction) between the bounds and
/// fetches each entry's document through `documents_by_key` in the same statement; the join drops entries
/// whose document is missing before LIMIT counts rows. `EXPLAIN QUERY PLAN` shows no sort (docs/storage.md;
/// a test checks it). An empty upper bound means "no upper bound": SQLite has no blob above every blob, so
/// those scans use their own statements without the `key < ?2` term.
package struct SQLiteIndexReader {
    /// `scan[reverse][bounded]`, `entries[reverse][bounded]`, `count[bounded]` (index 0: no upper bound,
    /// 1: `key < ?2`).
    private let scans: [[SQLiteStatement]]
    private let rowScans: [[SQLiteStatement]]
    private let entryScans: [[SQLiteStatement]]
    private let counts: [SQLiteStatement]

    /// The scan statement: `?1` lower bound (inclusive), `?2` upper bound (exclusive, only when `bounded`),
    /// `?3` limit. Columns: key, collection, id, data, create_us, update_us, seq, checksum.
    package static func scanSQL(reverse: Bool, bounded: Bool) -> String {
        """
        SELECT i.key, d.collection, d.id, d.data, d.create_us, d.update_us, d.seq, d.checksum
        FROM index_entries i JOIN documents d ON d.collection = i.collection AND d.id = i.id
        WHERE i.key >= ?1\(bounded ? " AND i.key < ?2" : "")
        ORDER BY i.key\(reverse ? " DESC" : "") LIMIT ?3
        """
    }

    /// `scanSQL` keeping the entries whose document is missing (a LEFT JOIN: their document columns NULL),
    /// for the scan that merges pending commits (`PendingBase.scanIndexRows`). Columns: key, the entry's
    /// collection and id, then the document's data, create_us, update_us, seq, checksum.
    package static func rowsSQL(reverse: Bool, bounded: Bool) -> String {
        """
        SELECT i.key, i.collection, i.id, d.data, d.create_us, d.update_us, d.seq, d.checksum
        FROM index_entries i LEFT JOIN documents d ON d.collection = i.collection AND d.id = i.id
        WHERE i.key >= ?1\(bounded ? " AND i.key < ?2" : "")
        ORDER BY i.key\(reverse ? " DESC" : "") LIMIT ?3
        """
    }

    /// The entries-only scan: `scanSQL` without the join, from the `index_entries` primary key alone.
    package static func entriesSQL(reverse: Bool, bounded: Bool) -> String {
        """
        SELECT key, collection, id FROM index_entries
        WHERE key >= ?1\(bounded ? " AND key < ?2" : "")
        ORDER BY key\(reverse ? " DESC" : "") LIMIT ?3
        """
    }

    /// The count statement: `?1` lower bound, `?2` upper bound (only when `bounded`). Counts entries, whether
    /// or not their document exists (the contract of `countIndex`), from the primary key alone.
    package static func countSQL(bounded: Bool) -> String {
        "SELECT count(*) FROM index_entries WHERE key >= ?1\(bounded ? " AND key < ?2" : "")"
    }

    init(connection c: SQLiteConnection) throws(HearthError) {
        scans = try Self.prepareRangeScans(c, "scan index", Self.scanSQL)
        rowScans = try Self.prepareRangeScans(c, "scan index rows", Self.rowsSQL)
        entryScans = try Self.prepareRangeScans(c, "scan index entries", Self.entriesSQL)
        counts = [try c.prepare(Self.countSQL(bounded: false), name: "count index to the end"),
                  try c.prepare(Self.countSQL(bounded: true), name: "count index")]
    }

    /// The four statements of a range scan, `[reverse][bounded]`.
    private static func prepareRangeScans(_ c: SQLiteConnection, _ what: String,
                                          _ sql: (_ reverse: Bool, _ bounded: Bool) -> String) throws(HearthError) -> [[SQLiteStatement]] {
        var table: [[SQLiteStatement]] = []
        for reverse in [false, true] {
            var pair: [SQLiteStatement] = []
            for bounded in [false, true] {
                let name = "\(what) \(reverse ? "descending" : "ascending")\(bounded ? "" : " to the end")"
                pair.append(try c.prepare(sql(reverse, bounded), name: name))
            }
            table.append(pair)
        }
        return table
    }

    /// The statement of `table` for the direction and bounds, with the bounds and limit bound (reset it after).
    private static func bound(_ table: [[SQLiteStatement]], from lower: [UInt8], to upper: [UInt8], reverse: Bool,
                              limit: Int) throws(HearthError) -> SQLiteStatement {
        let bounded = !upper.isEmpty
        let s = table[reverse ? 1 : 0][bounded ? 1 : 0]
        try s.bind(1, blob: lower)
        if bounded { try s.bind(2, blob: upper) }
        try s.bind(3, Int64(clamping: limit))
        return s
    }

    /// Document paths of consecutive rows, which often share a collection: its path is split once.
    private struct RowPaths {
        private var parent: (text: String, segments: [String]) = ("", [])

        /// The path of document `id` in `collection`; throws INVALID_ARGUMENT when they do not form one.
        mutating func path(_ collection: String, _ id: String) throws(HearthError) -> DocumentPath {
            if collection != parent.text {
                parent = (collection, collection.utf8.split(separator: 47, omittingEmptySubsequences: false)
                    .map { String(decoding: $0, as: UTF8.self) })
            }
            var segments = parent.segments
            segments.append(id)
            return try DocumentPath(ResourcePath(segments: segments))
        }
    }

    func scan(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int) throws(HearthError) -> [IndexHit] {
        guard limit > 0 else { return [] }
        let s = try Self.bound(scans, from: lower, to: upper, reverse: reverse, limit: limit)
        defer { s.reset() }
        var hits: [IndexHit] = []
        var paths = RowPaths()
        while try s.step() {
            let collection = s.text(1), id = s.text(2)
            let doc = try Self.document(s, collection, id) { () throws(HearthError) in
                do throws(HearthError) { return try paths.path(collection, id) } catch {
                    throw StorageDamage.document("\(collection)/\(id)", "invalid path: \(error.message)")
                }
            }
            hits.append(IndexHit(key: s.bytes(0), document: doc))
        }
        return hits
    }

    /// The document in columns 1...7 of a scan's row (collection, id, data, create_us, update_us, seq,
    /// checksum), checked against its checksum before anything is made of it, then given its `path`.
    private static func document(_ s: SQLiteStatement, _ collection: String, _ id: String,
                                 path: () throws(HearthError) -> DocumentPath) throws(HearthError) -> StoredDocument {
        var sum = RowChecksum()
        sum.columns(s, 1..<7)
        guard sum.value == s.int64(7) else { throw StorageDamage.document("\(collection)/\(id)", "checksum mismatch") }
        return StoredDocument(path: try path(), data: s.bytes(3), createTime: Timestamp(micros: s.int64(4)),
                              updateTime: Timestamp(micros: s.int64(5)), seq: s.uint64(6))
    }

    /// `rowsSQL`'s rows: each entry with its document, or nil when the document is missing.
    func scanRows(from lower: [UInt8], to upper: [UInt8], reverse: Bool,
                  limit: Int) throws(HearthError) -> [(key: [UInt8], path: DocumentPath, document: StoredDocument?)] {
        guard limit > 0 else { return [] }
        let s = try Self.bound(rowScans, from: lower, to: upper, reverse: reverse, limit: limit)
        defer { s.reset() }
        var rows: [(key: [UInt8], path: DocumentPath, document: StoredDocument?)] = []
        var paths = RowPaths()
        while try s.step() {
            let collection = s.text(1), id = s.text(2)
            let path: DocumentPath
            do { path = try paths.path(collection, id) } catch {
                throw StorageDamage.indexEntry("\(collection)/\(id)", "invalid path: \(error.message)")
            }
            guard !s.isNull(6) else {
                rows.append((s.bytes(0), path, nil))
                continue
            }
            // The entry's collection and id are the document's: the join matched them.
            rows.append((s.bytes(0), path, try Self.document(s, collection, id) { path }))
        }
        return rows
    }

    /// The entries-only scan, each row handed to `visit` in the statement's own memory (`IndexEntryView`).
    func visit(from lower: [UInt8], to upper: [UInt8], reverse: Bool, limit: Int,
               _ visit: (IndexEntryView) throws(HearthError) -> Bool) throws(HearthError) {
        guard limit > 0 else { return }
        let s = try Self.bound(entryScans, from: lower, to: upper, reverse: reverse, limit: limit)
        defer { s.reset() }
        while try s.step() {
            guard try visit(IndexEntryView(key: s.rawBlob(0), collection: s.rawText(1), id: s.rawText(2))) else { return }
        }
    }

    func count(from lower: [UInt8], to upper: [UInt8]) throws(HearthError) -> Int {
        let bounded = !upper.isEmpty
        let s = counts[bounded ? 1 : 0]
        defer { s.reset() }
        try s.bind(1, blob: lower)
        if bounded { try s.bind(2, blob: upper) }
        guard try s.step() else { throw SQLiteFailure.corrupt("count(*) returned no row") }
        return Int(s.int64(0))
    }
}
