import HearthModel
import HearthStorage

/// Commits groups to PostgreSQL on its own connection: one transaction per group, whose first statement locks
/// the meta row and checks that the stored `last_seq` is the one this group follows (the fence: a group built
/// on another history, or racing another writer, changes nothing). Each group's rows go in a few statements
/// over arrays (`unnest`), netted per document and per index key first. Used by one thread at a time.
final class PostgresWriter {
    private let connection: PGConnection
    private let retention: RetentionPolicy
    /// The oldest commit still in the change log, as far as this writer knows (nil: not read yet). Pruning
    /// needs its time for every group; reading it once and following it saves a statement per group.
    private var oldest: (seq: UInt64, micros: Int64)?
    /// Set when a COMMIT's outcome could not be learned: every later group is refused with it, since this
    /// writer no longer knows which seq the stored history ends at (a restart reads it again).
    private(set) var doubt: HearthError?

    /// The schema's writer lock (`PostgresSchema.writerLockSQL`) belongs to this session of the connection.
    private var lockedSession = 0
    private let schema: String

    /// Takes the schema's writer lock, or throws UNAVAILABLE when another hearthd holds it.
    /// With `lockingNow` false the lock is first taken by the first group (a store opened to read beside another).
    init(connection: PGConnection, schema: String, retention: RetentionPolicy, lockingNow: Bool) throws(HearthError) {
        self.connection = connection
        self.schema = schema
        self.retention = retention
        if lockingNow { try lockSchema() }
    }

    /// One hearthd commits to a schema at a time: a session-level advisory lock, held by the writer's session
    /// and so released by PostgreSQL when that session ends however it ends. Taken again after a reconnect.
    private func lockSchema() throws(HearthError) {
        try connection.reconnectIfBroken()
        guard lockedSession != connection.sessions else { return }
        let rows = try connection.query("SELECT pg_try_advisory_lock(hashtextextended($1, 7412))", [.string(schema)], "locking schema \(schema) for writing")
        guard rows.bytes(0, 0) == [1] else {
            throw HearthError(.unavailable, "storage: schema \(schema) is in use by another hearthd (it holds the schema's writer lock); one daemon writes to a schema at a time")
        }
        lockedSession = connection.sessions
    }

    func close() { connection.close() }

    var serverDescription: String { connection.serverDescription }

    /// Commits `commits` in one transaction (see `DocumentStore.apply`).
    func apply(_ commits: [CommitRecord]) throws(HearthError) {
        guard let newest = commits.last else { return }
        var expected: UInt64 = 0
        do throws(HearthError) {
            try lockSchema()
            try connection.exec("BEGIN", "starting a commit")
            let meta = try connection.query("SELECT last_seq, pruned_through, log_bytes FROM hearth_meta WHERE id = 1 FOR UPDATE", [],
                                            "locking the meta row")
            guard meta.count == 1 else { throw HearthError(.internal, "storage: hearth_meta has no row") }
            expected = meta.uint64(0, 0)
            var prunedThrough = meta.uint64(0, 1)
            var logBytes = meta.int64(0, 2)
            try CommitValidation.check(commits, after: expected)
            if let o = oldest, o.seq <= prunedThrough { oldest = nil }
            try writeDocuments(commits)
            try writeIndexEntries(commits)
            logBytes += try writeLog(commits)
            if oldest == nil { oldest = try oldestCommit(after: prunedThrough) }
            if let catalog = commits.last(where: { $0.indexCatalog != nil }) {
                try connection.query("""
                    INSERT INTO hearth_index_catalog (id, data, seq) VALUES (1, $1, $2)
                    ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, seq = EXCLUDED.seq
                    """, [.bytea(catalog.indexCatalog), .int8(catalog.seq)], "storing the index catalog")
            }
            try prune(&prunedThrough, &logBytes, cutoff: retention.ageCutoff(newest: newest.commitTime))
            try connection.query("""
                UPDATE hearth_meta SET last_seq = $1, last_commit_us = $2, pruned_through = $3, log_bytes = $4 WHERE id = 1
                """, [.int8(newest.seq), .int8(newest.commitTime.micros), .int8(prunedThrough), .int8(logBytes)], "advancing last_seq")
        } catch {
            connection.rollBack()
            oldest = nil
            throw error
        }
        do throws(HearthError) {
            try connection.exec("COMMIT", "committing seqs \(commits[0].seq)...\(newest.seq)")
        } catch {
            oldest = nil
            // The COMMIT may have reached PostgreSQL and been applied even though its answer was lost: ask.
            if error.code == .unavailable, try committed(newest.seq, after: expected) { return }
            connection.rollBack()
            throw error
        }
    }

    /// After a COMMIT whose outcome is unknown: whether the group ending at `seq` is stored (true), or not
    /// (false: `last_seq` is still `after`). Throws, naming the doubt, when PostgreSQL cannot be asked.
    private func committed(_ seq: UInt64, after: UInt64) throws(HearthError) -> Bool {
        let rows: PGRows
        do {
            rows = try connection.query("SELECT last_seq FROM hearth_meta WHERE id = 1", [], "reading last_seq after a lost COMMIT")
        } catch {
            doubt = PostgresStore.uncertain(seq, error)
            throw doubt!
        }
        let stored = rows.uint64(0, 0)
        if stored >= seq { return true }
        if stored == after { return false }
        doubt = PostgresStore.uncertain(seq, HearthError(.internal, "last_seq is \(stored), neither \(after) nor \(seq)"))
        throw doubt!
    }

    /// Stores each document's final state in the group: upserts, then deletes.
    private func writeDocuments(_ commits: [CommitRecord]) throws(HearthError) {
        var final: [DocumentPath: StoredDocument?] = [:]
        for c in commits { for m in c.mutations { final[m.path] = .some(m.after) } }
        var putParent: [[UInt8]?] = [], putID: [[UInt8]?] = [], data: [[UInt8]?] = []
        var created: [Int64?] = [], updated: [Int64?] = [], seqs: [Int64?] = []
        var delParent: [[UInt8]?] = [], delID: [[UInt8]?] = []
        for (path, doc) in final {
            let parent = Array(path.collection.description.utf8), id = Array(path.id.utf8)
            if let doc {
                putParent.append(parent); putID.append(id); data.append(doc.data)
                created.append(doc.createTime.micros); updated.append(doc.updateTime.micros); seqs.append(Int64(doc.seq))
            } else {
                delParent.append(parent); delID.append(id)
            }
        }
        if !putParent.isEmpty {
            try connection.query("""
                INSERT INTO hearth_documents (parent, id, data, create_us, update_us, seq)
                SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::int8[], $5::int8[], $6::int8[])
                ON CONFLICT (parent, id) DO UPDATE
                SET data = EXCLUDED.data, create_us = EXCLUDED.create_us, update_us = EXCLUDED.update_us, seq = EXCLUDED.seq
                """, [.byteaArray(putParent), .byteaArray(putID), .byteaArray(data), .int8Array(created), .int8Array(updated), .int8Array(seqs)],
                "storing \(putParent.count) documents")
        }
        if !delParent.isEmpty {
            try connection.query("""
                DELETE FROM hearth_documents d USING unnest($1::bytea[], $2::bytea[]) AS x(parent, id)
                WHERE d.parent = x.parent AND d.id = x.id
                """, [.byteaArray(delParent), .byteaArray(delID)], "deleting \(delParent.count) documents")
        }
    }

    /// Applies the group's index changes, commit by commit (removals, then additions), netted per key.
    private func writeIndexEntries(_ commits: [CommitRecord]) throws(HearthError) {
        var final: [[UInt8]: DocumentPath?] = [:]
        for c in commits {
            for e in c.indexChanges.removed { final[e.key] = .some(nil) }
            for e in c.indexChanges.added { final[e.key] = .some(e.path) }
        }
        guard !final.isEmpty else { return }
        var putKey: [[UInt8]?] = [], putParent: [[UInt8]?] = [], putID: [[UInt8]?] = [], delKey: [[UInt8]?] = []
        for (key, path) in final {
            if let path {
                putKey.append(key); putParent.append(Array(path.collection.description.utf8)); putID.append(Array(path.id.utf8))
            } else {
                delKey.append(key)
            }
        }
        if !delKey.isEmpty {
            try connection.query("DELETE FROM hearth_index_entries WHERE key = ANY($1::bytea[])", [.byteaArray(delKey)],
                                 "removing \(delKey.count) index entries")
        }
        if !putKey.isEmpty {
            try connection.query("""
                INSERT INTO hearth_index_entries (key, parent, id) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                ON CONFLICT (key) DO UPDATE SET parent = EXCLUDED.parent, id = EXCLUDED.id
                """, [.byteaArray(putKey), .byteaArray(putParent), .byteaArray(putID)], "adding \(putKey.count) index entries")
        }
    }

    /// Appends the group to the change log; returns the image bytes it added.
    private func writeLog(_ commits: [CommitRecord]) throws(HearthError) -> Int64 {
        var seqs: [Int64?] = [], times: [Int64?] = [], sizes: [Int64?] = []
        var cSeq: [Int64?] = [], ord: [Int64?] = [], path: [[UInt8]?] = []
        var b: (data: [[UInt8]?], created: [Int64?], updated: [Int64?], seq: [Int64?]) = ([], [], [], [])
        var a: (data: [[UInt8]?], created: [Int64?], updated: [Int64?], seq: [Int64?]) = ([], [], [], [])
        var total: Int64 = 0
        for c in commits {
            let bytes = c.imageBytes
            total += bytes
            seqs.append(Int64(c.seq)); times.append(c.commitTime.micros); sizes.append(bytes)
            for (i, m) in c.mutations.enumerated() {
                cSeq.append(Int64(c.seq)); ord.append(Int64(i)); path.append(Array(m.path.description.utf8))
                b.data.append(m.before?.data); b.created.append(m.before?.createTime.micros)
                b.updated.append(m.before?.updateTime.micros); b.seq.append(m.before.map { Int64($0.seq) })
                a.data.append(m.after?.data); a.created.append(m.after?.createTime.micros)
                a.updated.append(m.after?.updateTime.micros); a.seq.append(m.after.map { Int64($0.seq) })
            }
        }
        try connection.query("INSERT INTO hearth_commits (seq, commit_us, bytes) SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[])",
                             [.int8Array(seqs), .int8Array(times), .int8Array(sizes)], "logging \(commits.count) commits")
        if !cSeq.isEmpty {
            try connection.query("""
                INSERT INTO hearth_changes (seq, ord, path, before_data, before_create_us, before_update_us, before_seq,
                                            after_data, after_create_us, after_update_us, after_seq)
                SELECT * FROM unnest($1::int8[], $2::int8[]::int4[], $3::bytea[], $4::bytea[], $5::int8[], $6::int8[], $7::int8[],
                                     $8::bytea[], $9::int8[], $10::int8[], $11::int8[])
                """, [.int8Array(cSeq), .int8Array(ord), .byteaArray(path), .byteaArray(b.data), .int8Array(b.created),
                      .int8Array(b.updated), .int8Array(b.seq), .byteaArray(a.data), .int8Array(a.created), .int8Array(a.updated),
                      .int8Array(a.seq)], "logging \(cSeq.count) mutations")
        }
        return total
    }

    /// The oldest commit above `after` in the log, or nil when there is none.
    private func oldestCommit(after: UInt64) throws(HearthError) -> (seq: UInt64, micros: Int64)? {
        let rows = try connection.query("SELECT seq, commit_us FROM hearth_commits WHERE seq > $1 ORDER BY seq LIMIT 1",
                                        [.int8(PostgresReads.seqBound(after))], "reading the oldest commit")
        return rows.count == 0 ? nil : (rows.uint64(0, 0), rows.int64(0, 1))
    }

    /// Removes the oldest whole commits while retention says so (`RetentionPolicy.prunesOldest`), reading
    /// the log's oldest commits in pages only when the oldest one known is due.
    private func prune(_ prunedThrough: inout UInt64, _ logBytes: inout Int64, cutoff: Int64) throws(HearthError) {
        guard let o = oldest, retention.prunesOldest(commitMicros: o.micros, logBytes: logBytes, cutoff: cutoff) else { return }
        var through = prunedThrough
        var done = false
        while !done {
            let rows = try connection.query("SELECT seq, commit_us, bytes FROM hearth_commits WHERE seq > $1 ORDER BY seq LIMIT 256",
                                            [.int8(PostgresReads.seqBound(through))], "reading the oldest commits")
            if rows.count == 0 { break }
            for i in 0..<rows.count {
                guard retention.prunesOldest(commitMicros: rows.int64(i, 1), logBytes: logBytes, cutoff: cutoff) else {
                    oldest = (rows.uint64(i, 0), rows.int64(i, 1))
                    done = true
                    break
                }
                logBytes -= rows.int64(i, 2)
                through = rows.uint64(i, 0)
            }
        }
        if !done { oldest = nil }   // the whole log was pruned
        guard through != prunedThrough else { return }
        try connection.query("DELETE FROM hearth_changes WHERE seq <= $1", [.int8(through)], "pruning the change log")
        try connection.query("DELETE FROM hearth_commits WHERE seq <= $1", [.int8(through)], "pruning the change log")
        prunedThrough = through
    }
}
