import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The SQLite store acknowledges a group once its commit log holds it and applies it to SQLite in the
/// background (`CommitPipeline`). What that must keep: every acknowledged group is readable at once and
/// survives anything SQLite does with it later; a group SQLite refuses stops writes, not reads, and is applied
/// by the next start once the cause is gone.
@Suite struct CommitPipelineTests {
    /// A group SQLite refuses after the log took it was acknowledged: it is served, never dropped; the next
    /// write is refused with the cause; the files a kill leaves keep it; a start without the cause applies it.
    @Test func aGroupSQLiteRefusesStopsWritesNotReadsAndIsAppliedByTheNextStart() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        try f.refuseDocumentsNamedBoom()
        let store = try #require(f.store as? SQLiteStore)
        var h = History()
        try store.apply([h.put("c/a", bytes("a"))])
        try store.drainApplier()
        let refused = h.commit([("c/b", bytes("b")), ("c/boom", bytes("x"))])
        try store.apply([refused])     // durable in the log: acknowledged
        #expect(try store.get(path("c/boom"))?.data == bytes("x"))
        #expect(try store.lastSeq() == 2)

        // The applier meets the trigger (waiting for it to apply says so), and the next write asks it to try
        // again, then is refused with the cause.
        #expect(throws: HearthError.self) { try store.drainApplier() }
        let error = thrownError { () throws(HearthError) in try store.apply([h.put("c/c", bytes("c"))]) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("boom refused") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("durable in the commit log") == true, "\(error?.message ?? "")")
        // Reads still see every acknowledged commit, through a snapshot too; SQLite's own files lack the group.
        #expect(try store.get(path("c/b"))?.data == bytes("b"))
        #expect(try store.changes(after: 1, limit: 10)?.map(\.seq) == [2])
        let snap = try store.snapshot()
        #expect(snap.seq == 2)
        #expect(try snap.get(path("c/boom"))?.data == bytes("x"))
        snap.close()
        let other = try StoreFixture.open(.sqlite, directory: f.directory, retention: .default, lockingDirectory: false)
        #expect(try other.lastSeq() == 1)
        other.close()

        // The files a kill leaves behind, copied with the trigger removed: the next start applies the group.
        let copy = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(copy) }
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["hearth.db", "hearth.db-wal", CommitLog.fileName] {
            try FileManager.default.copyItem(atPath: f.directory + "/" + name, toPath: copy + "/" + name)
        }
        let db = try SQLiteConnection(path: copy + "/hearth.db", role: "test", create: false)
        try db.exec("DROP TRIGGER boom", "dropping the trigger")
        db.close()
        let recovered = try StoreFixture.openSQLite(copy)
        defer { recovered.close() }
        #expect(recovered.recovery?.groups == 1)
        #expect(try recovered.lastSeq() == 2)
        #expect(try recovered.get(path("c/boom"))?.data == bytes("x"))
        try recovered.apply([h.put("c/c", bytes("c"))])

        // Closing the stuck store keeps its log (the group is still only there), so its own next start, with
        // the trigger still in place, refuses to open rather than lose it.
        store.close()
        #expect(FileManager.default.fileExists(atPath: f.directory + "/" + CommitLog.fileName))
        #expect {
            _ = try StoreFixture.openSQLite(f.directory)
        } throws: { error in
            (error as? HearthError)?.message.contains("boom refused") == true
        }
    }

    /// Readers on other threads take snapshots while the applier moves SQLite past the groups they merged:
    /// every snapshot reads exactly the state at its seq (each document holds the seq that wrote it, and the
    /// index holds one entry per document naming its value).
    @Test func snapshotsStayExactWhileTheApplierCatchesUp() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let done = Locked<Result<Int, HearthError>?>(nil)
        let writer = Thread {
            var h = History()
            var keyOf: [Int: [UInt8]] = [:]
            var groups = 0
            var outcome = Result<Int, HearthError>.success(0)
            for round in 0..<150 {
                var commits: [CommitRecord] = []
                for _ in 0..<3 {
                    let d = Int.random(in: 0..<20)
                    let seq = h.seq + 1
                    let key: [UInt8] = [1] + withUnsafeBytes(of: seq.bigEndian, Array.init)
                    var removed: [IndexEntry] = []
                    if let old = keyOf[d] { removed.append(IndexEntry(key: old, path: path("c/d\(d)"))) }
                    keyOf[d] = key
                    commits.append(h.commit([("c/d\(d)", withUnsafeBytes(of: seq, Array.init))],
                                            index: IndexChanges(removed: removed, added: [IndexEntry(key: key, path: path("c/d\(d)"))])))
                }
                do throws(HearthError) { try store.apply(commits) } catch { outcome = .failure(error); break }
                groups += 1
                outcome = .success(groups)
                // Alternate between an applier that keeps up and one that lags by five groups.
                if round % 25 == 0 { store.holdApplier(round % 50 == 0 ? 5 : 0) }
            }
            store.holdApplier(0)
            let final = outcome
            done.withLock { $0 = final }
        }
        writer.start()
        var checked = 0
        var finished = false
        while !finished || checked < 50 {
            finished = done.withLock { $0 != nil }
            let snap = try store.snapshot()
            defer { snap.close() }
            let hits = try snap.scanIndex(from: [1], to: [2], reverse: false, limit: 1000)
            // Every entry's key is the seq that wrote its document, and the document carries that seq.
            for hit in hits {
                let seq = hit.key.dropFirst().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                #expect(hit.document.seq == seq)
                #expect(seq <= snap.seq)
            }
            #expect(Set(hits.map(\.document.path)).count == hits.count)
            #expect(try snap.countIndex(from: [1], to: [2]) == hits.count)
            checked += 1
        }
        let groups = try done.withLock { $0 }!.get()
        try store.drainApplier()
        #expect(groups == 150)
        #expect(try store.lastSeq() == 450)
    }
}
