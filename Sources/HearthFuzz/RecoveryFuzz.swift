#if canImport(Glibc)
import Glibc
#endif
import HearthModel
import HearthProtocol
import HearthStorage
import HearthStorageSQLite

/// The recovery fuzzer: a small store is written once (documents, index entries, a change log, closed
/// cleanly); each input then flips bytes of a copy of its file (pairs of a 3-byte offset and a byte) and,
/// when its first byte is odd, puts the rest of the input beside it as a torn WAL. Opening may fail with an
/// error; whatever opens must read through (documents, index scans, the change log, a snapshot) without a
/// crash, and stored data that decodes at all must re-encode as valid UTF-8.
final class RecoveryFuzz {
    nonisolated(unsafe) static let shared = RecoveryFuzz()
    nonisolated(unsafe) private static var base: String?
    private let template: [UInt8]
    private let dir: String
    private let paths = (0..<40).map { try! DocumentPath(parsing: "c/d\($0)") }
    private let json = FieldsJSON()

    private init() {
        let base = "/tmp/hearth-fuzz-recovery-\(getpid())"
        dir = base + "/run"
        let tdir = base + "/template"
        _ = system("rm -rf '\(base)' && mkdir -p '\(tdir)' '\(dir)'")
        // Gone when the fuzzer exits.
        Self.base = base
        atexit { if let b = RecoveryFuzz.base { _ = system("rm -rf '\(b)'") } }
        let store = try! SQLiteStore(directory: tdir)
        var seq: UInt64 = 0
        var current: [DocumentPath: StoredDocument] = [:]
        for round in 0..<3 {
            var mutations: [Mutation] = []
            var added: [IndexEntry] = []
            seq += 1
            for (i, p) in paths.enumerated() where (i + round) % 3 != 0 {
                let data = Array(#"{"n":\#(i * 10 + round),"s":"é\#(i)","a":[1,{"$timestamp":"2026-01-01T00:00:00Z"}]}"#.utf8)
                let doc = StoredDocument(path: p, data: data, createTime: Timestamp(micros: 1), updateTime: Timestamp(micros: Int64(seq)), seq: seq)
                mutations.append(Mutation(path: p, before: current[p], after: doc))
                current[p] = doc
                added.append(IndexEntry(key: [UInt8(round), UInt8(i)], path: p))
            }
            try! store.apply([CommitRecord(seq: seq, commitTime: Timestamp(micros: Int64(seq) * 1000), mutations: mutations,
                                           indexChanges: IndexChanges(added: added))])
        }
        store.close()
        template = FileIO.read(tdir + "/hearth.db")
    }

    func run(_ data: UnsafeRawBufferPointer) {
        let input = Array(data)
        var db = template
        var i = 1
        while i + 3 < min(input.count, 1 + 4 * 32) {
            let offset = (Int(input[i]) << 16 | Int(input[i + 1]) << 8 | Int(input[i + 2])) % db.count
            db[offset] = input[i + 3]
            i += 4
        }
        _ = unlink(dir + "/hearth.db-wal")
        _ = unlink(dir + "/hearth.db-shm")
        FileIO.writeFile(dir + "/hearth.db", db)
        if let first = input.first, first & 1 == 1, input.count > 1 {
            FileIO.writeFile(dir + "/hearth.db-wal", Array(input[1...]))
        }
        guard let store = try? SQLiteStore(directory: dir) else { return }
        defer { store.close() }
        _ = try? store.lastSeq()
        _ = try? store.historyID()
        for p in paths { if let d = try? store.get(p) { check(d) } }
        if let hits = try? store.scanIndex(from: [], to: [], reverse: false, limit: 1000) { for h in hits { check(h.document) } }
        _ = try? store.countIndex(from: [], to: [])
        if let log = try? store.changes(after: 0, limit: 100) {
            for c in log { for m in c.mutations { if let d = m.after { check(d) } } }
        }
        if let snap = try? store.snapshot() {
            _ = try? snap.get(paths[1])
            _ = try? snap.scanIndex(from: [], to: [], reverse: true, limit: 10)
            snap.close()
        }
    }

    /// Stored bytes that decode as fields re-encode as valid UTF-8 (what a response would carry).
    private func check(_ doc: StoredDocument) {
        guard let fields = try? json.decodeFields(doc.data) else { return }
        precondition(String(validating: json.encodeFields(fields), as: UTF8.self) != nil, "recovery: re-encoded fields are not UTF-8")
    }
}
