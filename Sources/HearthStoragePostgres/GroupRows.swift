import HearthModel
import HearthStorage

/// The statements that write one group's rows: each document's final state (one upsert, one delete), the
/// index changes netted per key (removals then additions, commit by commit: one delete, one upsert), the
/// commits and their mutations appended to the change log, and the index catalog when a commit carries one.
/// Each is one statement over arrays (`unnest`), whatever the group's size. Built before the transaction,
/// so the writer can send them step by step or all at once.
package struct GroupRows {
    private(set) var statements: [PGStatement] = []
    /// The image bytes the group adds to the change log (`CommitRecord.imageBytes`).
    private(set) var imageBytes: Int64 = 0
    let firstSeq: UInt64

    /// The most bytes of documents or images one statement carries (`defaultStatementBytes`).
    let statementBytes: Int

    package init(_ commits: [CommitRecord], statementBytes: Int = GroupRows.defaultStatementBytes) {
        firstSeq = commits.first?.seq ?? 0
        self.statementBytes = statementBytes
        documents(commits)
        indexEntries(commits)
        log(commits)
        if let carrier = commits.last(where: { $0.indexCatalog != nil }) {
            statements.append(PGStatement(sql: """
                INSERT INTO hearth_index_catalog (id, data, seq) VALUES (1, $1, $2)
                ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data, seq = EXCLUDED.seq
                """, params: [.bytea(carrier.indexCatalog), .int8(carrier.seq)], what: "storing the index catalog"))
        }
    }

    /// Each path's state after the group's last mutation of it: stored, or deleted.
    private mutating func documents(_ commits: [CommitRecord]) {
        var final: [DocumentPath: StoredDocument?] = [:]
        for c in commits { for m in c.mutations { final[m.path] = .some(m.after) } }
        var putParent: [[UInt8]?] = [], putID: [[UInt8]?] = [], data: [[UInt8]?] = []
        var created: [Int64?] = [], updated: [Int64?] = [], seqs: [Int64?] = []
        var delParent: [[UInt8]?] = [], delID: [[UInt8]?] = []
        var bytes = 0
        func flushPuts() {
            guard !putParent.isEmpty else { return }
            statements.append(PGStatement(sql: """
                INSERT INTO hearth_documents (parent, id, data, create_us, update_us, seq)
                SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::int8[], $5::int8[], $6::int8[])
                ON CONFLICT (parent, id) DO UPDATE
                SET data = EXCLUDED.data, create_us = EXCLUDED.create_us, update_us = EXCLUDED.update_us, seq = EXCLUDED.seq
                """, params: [.byteaArray(putParent), .byteaArray(putID), .byteaArray(data), .int8Array(created), .int8Array(updated),
                              .int8Array(seqs)], what: "storing \(putParent.count) documents"))
            putParent = []; putID = []; data = []; created = []; updated = []; seqs = []
            bytes = 0
        }
        for (path, doc) in final {
            let parent = Array(path.collectionDescription.utf8), id = Array(path.id.utf8)
            if let doc {
                if bytes + doc.data.count > statementBytes { flushPuts() }
                putParent.append(parent); putID.append(id); data.append(doc.data)
                created.append(doc.createTime.micros); updated.append(doc.updateTime.micros); seqs.append(Int64(bitPattern: doc.seq))
                bytes += doc.data.count + parent.count + id.count
            } else {
                delParent.append(parent); delID.append(id)
            }
        }
        flushPuts()
        if !delParent.isEmpty {
            statements.append(PGStatement(sql: """
                DELETE FROM hearth_documents d USING unnest($1::bytea[], $2::bytea[]) AS x(parent, id)
                WHERE d.parent = x.parent AND d.id = x.id
                """, params: [.byteaArray(delParent), .byteaArray(delID)], what: "deleting \(delParent.count) documents"))
        }
    }

    /// Each key's state after the group: removed, or pointing at a document.
    private mutating func indexEntries(_ commits: [CommitRecord]) {
        var final: [[UInt8]: DocumentPath?] = [:]
        for c in commits {
            for e in c.indexChanges.removed { final[e.key] = .some(nil) }
            for e in c.indexChanges.added { final[e.key] = .some(e.path) }
        }
        guard !final.isEmpty else { return }
        var putKey: [[UInt8]?] = [], putParent: [[UInt8]?] = [], putID: [[UInt8]?] = [], delKey: [[UInt8]?] = []
        for (key, path) in final {
            if let path {
                putKey.append(key); putParent.append(Array(path.collectionDescription.utf8)); putID.append(Array(path.id.utf8))
            } else {
                delKey.append(key)
            }
        }
        if !delKey.isEmpty {
            statements.append(PGStatement(sql: "DELETE FROM hearth_index_entries WHERE key = ANY($1::bytea[])",
                                          params: [.byteaArray(delKey)], what: "removing \(delKey.count) index entries"))
        }
        if !putKey.isEmpty {
            statements.append(PGStatement(sql: """
                INSERT INTO hearth_index_entries (key, parent, id) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                ON CONFLICT (key) DO UPDATE SET parent = EXCLUDED.parent, id = EXCLUDED.id
                """, params: [.byteaArray(putKey), .byteaArray(putParent), .byteaArray(putID)], what: "adding \(putKey.count) index entries"))
        }
    }

    /// The commits and their mutations, with both images, in order.
    private mutating func log(_ commits: [CommitRecord]) {
        var seqs: [Int64?] = [], times: [Int64?] = [], sizes: [Int64?] = []
        var requestIDs: [String?] = [], answers: [[UInt8]?] = []
        var cSeq: [Int64?] = [], ord: [Int64?] = [], path: [[UInt8]?] = []
        var b: (data: [[UInt8]?], created: [Int64?], updated: [Int64?], seq: [Int64?]) = ([], [], [], [])
        var a: (data: [[UInt8]?], created: [Int64?], updated: [Int64?], seq: [Int64?]) = ([], [], [], [])
        var bytes = 0
        var out: [PGStatement] = []
        func flushChanges() {
            guard !cSeq.isEmpty else { return }
            out.append(PGStatement(sql: """
                INSERT INTO hearth_changes (seq, ord, path, before_data, before_create_us, before_update_us, before_seq,
                                            after_data, after_create_us, after_update_us, after_seq)
                SELECT * FROM unnest($1::int8[], $2::int8[]::int4[], $3::bytea[], $4::bytea[], $5::int8[], $6::int8[], $7::int8[],
                                     $8::bytea[], $9::int8[], $10::int8[], $11::int8[])
                """, params: [.int8Array(cSeq), .int8Array(ord), .byteaArray(path), .byteaArray(b.data), .int8Array(b.created),
                              .int8Array(b.updated), .int8Array(b.seq), .byteaArray(a.data), .int8Array(a.created), .int8Array(a.updated),
                              .int8Array(a.seq)], what: "logging \(cSeq.count) mutations"))
            cSeq = []; ord = []; path = []; b = ([], [], [], []); a = ([], [], [], [])
            bytes = 0
        }
        for c in commits {
            let imageBytes = c.imageBytes
            self.imageBytes += imageBytes
            seqs.append(Int64(bitPattern: c.seq)); times.append(c.commitTime.micros); sizes.append(imageBytes)
            requestIDs.append(c.request?.id); answers.append(c.request?.answer)
            for (i, m) in c.mutations.enumerated() {
                let size = (m.before?.data.count ?? 0) + (m.after?.data.count ?? 0)
                if bytes + size > statementBytes { flushChanges() }
                cSeq.append(Int64(bitPattern: c.seq)); ord.append(Int64(i)); path.append(Array(m.path.description.utf8))
                b.data.append(m.before?.data); b.created.append(m.before?.createTime.micros)
                b.updated.append(m.before?.updateTime.micros); b.seq.append(m.before.map { Int64(bitPattern: $0.seq) })
                a.data.append(m.after?.data); a.created.append(m.after?.createTime.micros)
                a.updated.append(m.after?.updateTime.micros); a.seq.append(m.after.map { Int64(bitPattern: $0.seq) })
                bytes += size + (path.last??.count ?? 0)
            }
        }
        flushChanges()
        guard !seqs.isEmpty else { return }
        statements.append(PGStatement(sql: """
            INSERT INTO hearth_commits (seq, commit_us, bytes, request_id, request_answer)
            SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::text[], $5::bytea[])
            """, params: [.int8Array(seqs), .int8Array(times), .int8Array(sizes), .textArray(requestIDs), .byteaArray(answers)],
            what: "logging \(commits.count) commits"))
        statements += out
    }

    /// The most bytes of documents or images one statement carries: PostgreSQL refuses a message above 1 GiB,
    /// so a large group is sent in several statements of the same transaction.
    package static let defaultStatementBytes = 64 << 20

    /// What each statement does, in order (for tests).
    package var descriptions: [String] { statements.map(\.what) }
}
