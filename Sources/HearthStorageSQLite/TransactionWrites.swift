import HearthModel
import HearthStorage

/// The document rows and index entries one `SQLiteWriter.apply` transaction writes, gathered over all of its
/// commits and written at its end in key order, each key once (its last write in the transaction).
///
/// Why: an applier transaction holds many groups (`CommitPipeline`), whose documents and index entries land at
/// scattered places of the `documents_by_key` and `index_entries` b-trees (a timeline post writes one feed entry
/// per follower, each with five index entries, in a thousand places). Written in key order, consecutive writes
/// descend the same pages, which stay in the CPU's caches, and a key written by several commits of the
/// transaction is written once. docs/benchmarks.md, "Documents and index entries in key order", has the figures.
///
/// Why the tables end with the same rows and entries as writing each commit in turn (the `documents` table's
/// rowids aside: a new row is numbered in key order, and a document deleted and created again within the
/// transaction keeps its row): a write to one key never depends on a write to
/// another (a document row is replaced or deleted whole; an index entry is added, replacing its document, or
/// removed by key alone, a no-op when absent), so writes to different keys commute, and for each key the last
/// write decides what the table holds. Within a commit, index removals come before additions, as
/// `SQLiteIndexWriter` documents. Change rows and commit rows are not gathered: they are appended in seq order.
///
/// The keys are kept in flat byte buffers and sorted through their offsets (`FlatKeys`), so that sorting tens
/// of thousands of them touches no reference counts.
struct TransactionWrites {
    /// A document row to write: `version` nil deletes it.
    struct DocumentWrite {
        let path: DocumentPath
        /// `path.collectionDescription`, the row's `collection` column.
        let collection: String
        let version: StoredDocument?
    }

    /// An index entry to write: `path` nil removes it.
    struct EntryWrite {
        let path: DocumentPath?
        /// `path.collectionDescription` (empty for a removal), the entry's `collection` column.
        let collection: String
    }

    private typealias Span = FlatKeys.Span

    private var documents: [DocumentWrite] = []
    /// Each document's collection, then its id (UTF-8), at `documentSpans[i]`.
    private var documentBytes: [UInt8] = []
    private var documentSpans: [(collection: Span, id: Span)] = []
    private var entries: [EntryWrite] = []
    /// Each entry's key, at the entry's place.
    private var entryKeys = FlatKeys()
    /// The last write of each document so far, by its place in `documents`; kept only when `tracksVersions`
    /// (the before images of a commit from the log, `version(of:)`).
    private var latest: [DocumentPath: Int] = [:]
    private let tracksVersions: Bool

    init(tracksVersions: Bool = false) {
        self.tracksVersions = tracksVersions
    }

    /// The document as the writes gathered so far leave it: `.some(nil)` when they delete it, nil when they do
    /// not touch it (the table holds what it held). Only with `tracksVersions`.
    func version(of path: DocumentPath) -> StoredDocument?? {
        precondition(tracksVersions, "TransactionWrites: versions are tracked only when asked for")
        guard let i = latest[path] else { return nil }
        return .some(documents[i].version)
    }

    mutating func write(_ path: DocumentPath, _ version: StoredDocument?) {
        if tracksVersions { latest[path] = documents.count }
        let collection = path.collectionDescription
        documentSpans.append((Self.append(collection, to: &documentBytes), Self.append(path.id, to: &documentBytes)))
        documents.append(DocumentWrite(path: path, collection: collection, version: version))
    }

    /// One commit's index changes: its removals, then its additions.
    mutating func index(_ changes: IndexChanges) {
        for e in changes.removed { add(e.key, EntryWrite(path: nil, collection: "")) }
        // A document's entries come together: its collection is described once for all of them.
        var described: (path: DocumentPath, collection: String)?
        for e in changes.added {
            if described?.path != e.path { described = (e.path, e.path.collectionDescription) }
            add(e.key, EntryWrite(path: e.path, collection: described!.collection))
        }
    }

    private mutating func add(_ key: [UInt8], _ entry: EntryWrite) {
        entryKeys.append(key)
        entries.append(entry)
    }

    private static func append(_ s: String, to bytes: inout [UInt8]) -> Span {
        let start = bytes.count
        bytes.append(contentsOf: s.utf8)
        return Span(start: start, count: bytes.count - start)
    }

    /// Calls `body` with each document written, once, with its last version, in the order of
    /// `documents_by_key` (collection, then id, by UTF-8 bytes: SQLite's BINARY collation).
    func forEachDocumentInKeyOrder(_ body: (DocumentWrite) throws(HearthError) -> Void) throws(HearthError) {
        let order = documentBytes.withUnsafeBytes { bytes in
            documentSpans.withUnsafeBufferPointer { spans in
                FlatKeys.lastOfEach(count: spans.count) { i, j in
                    let c = FlatKeys.compare(bytes, spans[i].collection, spans[j].collection)
                    return c != 0 ? c : FlatKeys.compare(bytes, spans[i].id, spans[j].id)
                }
            }
        }
        for i in order { try body(documents[i]) }
    }

    /// Calls `body` with each index entry written, once, with its last write, in key order (memcmp, as
    /// `index_entries` orders its keys); the key's bytes are valid during the call only.
    func forEachEntryInKeyOrder(_ body: (UnsafeRawBufferPointer, EntryWrite) throws(HearthError) -> Void) throws(HearthError) {
        // withUnsafeBytes rethrows untyped errors: the typed one is carried out as a value.
        let order = entryKeys.lastOfEachKey()
        let failure = entryKeys.bytes.withUnsafeBytes { bytes -> HearthError? in
            do throws(HearthError) {
                for i in order {
                    let s = entryKeys.spans[i]
                    try body(UnsafeRawBufferPointer(rebasing: bytes[s.start ..< s.start + s.count]), entries[i])
                }
            } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }
}
