import HearthModel
import HearthStorage

/// The writer connection's statements for `index_entries`: the index half of `apply`, run inside its
/// transaction (so a failing group rolls index changes back with everything else).
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

    /// Applies one commit's index changes.
    func apply(_ changes: IndexChanges) throws(HearthError) {
        for entry in changes.removed {
            try delete.bind(1, blob: entry.key)
            try delete.runKeepingBindings()
        }
        // A document's entries come together: its collection and id are bound once for all of them (the
        // statement keeps its bindings from one run to the next).
        var bound: DocumentPath?
        for entry in changes.added {
            try upsert.bind(1, blob: entry.key)
            if entry.path != bound {
                try upsert.bind(2, entry.path.collectionDescription)
                try upsert.bind(3, entry.path.id)
                bound = entry.path
            }
            try upsert.runKeepingBindings()
        }
    }
}
