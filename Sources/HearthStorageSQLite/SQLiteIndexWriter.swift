import HearthModel
import HearthStorage

/// The writer connection's statements for `index_entries`: the index half of `apply`, run inside its
/// transaction (so a failing group rolls index changes back with everything else), once per transaction
/// (`TransactionWrites`).
///
/// Semantics (the same as `MemoryIndex`): removals first, then additions in order; removing an absent key is
/// a no-op and matches by key alone; adding an existing key replaces the document it points at.
struct SQLiteIndexWriter {
    private let upsert: SQLiteStatement
    private let delete: SQLiteStatement

    init(connection c: SQLiteConnection) throws(HearthError) {
        upsert = try c.prepare("""
            INSERT INTO index_entries (key, collection, id) VALUES (?1, ?2, ?3)
            ON CONFLICT (key) DO UPDATE SET collection = excluded.collection, id = excluded.id
            """, name: "put index entry")
        delete = try c.prepare("DELETE FROM index_entries WHERE key = ?1", name: "delete index entry")
    }

    /// Writes a transaction's index entries (each key once, its last write, in key order). An entry's
    /// document is bound only when it differs from the last entry's (the statement keeps its bindings from one
    /// run to the next).
    func apply(_ writes: TransactionWrites) throws(HearthError) {
        var bound: DocumentPath?
        try writes.forEachEntryInKeyOrder { (key, entry) throws(HearthError) in
            guard let path = entry.path else {
                try delete.bind(1, blobCopying: key)
                try delete.runKeepingBindings()
                return
            }
            try upsert.bind(1, blobCopying: key)
            if path != bound {
                try upsert.bind(2, entry.collection)
                try upsert.bind(3, path.id)
                bound = path
            }
            try upsert.runKeepingBindings()
        }
    }
}
