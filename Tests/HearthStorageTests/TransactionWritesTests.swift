import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// An applier transaction writes its documents and index entries at its end, in key order, each key once
/// (`TransactionWrites`). What that must keep: SQLite ends exactly as if each commit had been written in turn.
@Suite struct TransactionWritesTests {
    private func doc(_ p: String, _ v: String) -> StoredDocument {
        StoredDocument(path: path(p), data: bytes(v), createTime: Timestamp(micros: 1), updateTime: Timestamp(micros: 1), seq: 1)
    }

    /// Documents come out in (collection, id) order by bytes, each once with its last version (a delete
    /// included); IDs that differ only in their bytes (NUL, é precomposed or not) stay apart.
    @Test func documentsComeOutInKeyOrderEachWithItsLastWrite() throws {
        var w = TransactionWrites()
        w.write(path("c/b"), doc("c/b", "1"))
        w.write(path("c/a"), doc("c/a", "2"))
        w.write(path("c/b"), nil)
        w.write(path("d/a"), doc("d/a", "3"))
        w.write(path("c/b"), doc("c/b", "4"))
        w.write(path("c/a\u{0}"), doc("c/a\u{0}", "5"))
        w.write(path("c/\u{e9}"), doc("c/\u{e9}", "6"))
        w.write(path("c/e\u{301}"), doc("c/e\u{301}", "7"))
        w.write(path("c/a"), nil)
        w.write(path("c/x/c/a"), doc("c/x/c/a", "8"))
        var seen: [(String, String?)] = []
        try w.forEachDocumentInKeyOrder { (d) throws(HearthError) in
            seen.append((d.collection + "|" + d.path.id, d.version.map { String(decoding: $0.data, as: UTF8.self) }))
        }
        let expected: [(String, String?)] = [("c|a", nil), ("c|a\u{0}", "5"), ("c|b", "4"), ("c|e\u{301}", "7"), ("c|\u{e9}", "6"),
                                             ("c/x/c|a", "8"), ("d|a", "3")]
        #expect(seen.map { Array($0.0.utf8) } == expected.map { Array($0.0.utf8) })
        #expect(seen.map(\.1) == expected.map(\.1))
    }

    /// Entries come out in memcmp order (a key before the keys it prefixes, the empty key first), each once with
    /// its last write; within a commit removals come before additions, so a commit that removes and adds one
    /// key leaves it present.
    @Test func entriesComeOutInKeyOrderEachWithItsLastWrite() throws {
        var w = TransactionWrites()
        w.index(IndexChanges(removed: [entry([1], "c/a")], added: [entry([1], "c/b"), entry([2, 0], "c/b")]))
        w.index(IndexChanges(added: [entry([1, 0], "c/a"), entry([], "c/a"), entry([0xFF], "c/a")]))
        w.index(IndexChanges(removed: [entry([2, 0], "c/x"), entry([9], "c/x")]))
        w.index(IndexChanges(removed: [entry([0xFF], "c/a")], added: [entry([0xFF], "c/z"), entry([1], "c/y")]))
        var seen: [([UInt8], String?)] = []
        try w.forEachEntryInKeyOrder { (key, e) throws(HearthError) in
            seen.append((Array(key), e.path.map(\.description)))
            if let p = e.path { #expect(e.collection == p.collectionDescription) }
        }
        #expect(seen.map(\.0) == [[], [1], [1, 0], [2, 0], [9], [0xFF]])
        #expect(seen.map(\.1) == ["c/a", "c/y", "c/a", nil, nil, "c/z"])
    }

    /// Before images of a commit from the log: what the gathered writes leave, else nothing known.
    @Test func versionsFollowTheLastWrite() {
        var w = TransactionWrites(tracksVersions: true)
        #expect(w.version(of: path("c/a")) == nil)
        w.write(path("c/a"), doc("c/a", "1"))
        #expect(w.version(of: path("c/a")) == .some(doc("c/a", "1")))
        w.write(path("c/a"), nil)
        #expect(w.version(of: path("c/a")) == .some(nil))
        #expect(w.version(of: path("c/b")) == nil)
    }

    /// Random commits that write, delete and rewrite a few documents and move their index entries, many to a
    /// transaction (the applier holds the groups back, then takes them at once), against the in-memory store;
    /// then the same groups replayed from the commit log by a start after a kill (whose frames carry no before
    /// images: they are read as the transaction leaves each document), and the change log compared with its
    /// before images.
    @Test func manyCommitsToATransactionEndAsTheyWouldOneByOne() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        let store = try #require(f.store as? SQLiteStore)
        let model = MemoryStore()
        defer { model.close() }
        var rng = SplitMix(seed: 0x7A_5EED)
        var h = History()
        // IDs that differ only in bytes, and one with NUL.
        let paths = ["c/a", "c/b", "c/\u{e9}", "c/e\u{301}", "c/n\u{0}", "c/x/s/a", "d/a"]
        var keysOf: [String: [[UInt8]]] = [:]
        func commit() -> CommitRecord {
            var writes: [(String, [UInt8]?)] = []
            var changes = IndexChanges()
            var touched = Set<[UInt8]>()
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let p = paths[Int(rng.next() % UInt64(paths.count))]
                guard touched.insert(Array(p.utf8)).inserted else { continue }
                for k in keysOf[p] ?? [] { changes.removed.append(entry(k, p)) }
                if rng.next() % 3 == 0 {
                    writes.append((p, nil))
                    keysOf[p] = nil
                } else {
                    // Two entries per document, in two regions; values collide across documents only through
                    // the path suffix.
                    let v = UInt8(rng.next() % 4)
                    let keys = [[1, v] + Array(p.utf8), [2, UInt8(rng.next() % 2), v] + Array(p.utf8)]
                    writes.append((p, [v, UInt8(rng.next() & 0xFF)]))
                    changes.added += keys.map { entry($0, p) }
                    keysOf[p] = keys
                }
            }
            // Now and then an entry removed that no document had, and one re-added in the same commit.
            if rng.next() % 5 == 0 { changes.removed.append(entry([3, UInt8(rng.next() % 3)], "c/a")) }
            if rng.next() % 5 == 0 {
                let k: [UInt8] = [4, UInt8(rng.next() % 2)]
                changes.removed.append(entry(k, "c/a"))
                changes.added.append(entry(k, paths[Int(rng.next() % UInt64(paths.count))]))
            }
            return h.commit(writes, index: changes)
        }
        // Rows and entries to replace and delete: the first groups are in SQLite before the held ones.
        for _ in 0..<5 {
            let group = [commit(), commit()]
            try store.apply(group)
            try model.apply(group)
        }
        try store.drainApplier()
        store.holdApplier(1_000)
        var rewrittenInAGroup = 0
        for _ in 0..<40 {
            let group = (0..<(1 + Int(rng.next() % 4))).map { _ in commit() }
            let written = group.flatMap { $0.mutations.map { Array($0.path.description.utf8) } }
            if Set(written).count < written.count { rewrittenInAGroup += 1 }
            try store.apply(group)
            try model.apply(group)
        }
        // Recovery's before images come from earlier commits of the same frame in some groups.
        #expect(rewrittenInAGroup >= 5, "\(rewrittenInAGroup)")
        // The files a kill leaves now: every group only in the log.
        let copy = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(copy) }
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["hearth.db", "hearth.db-wal", CommitLog.fileName] {
            try FileManager.default.copyItem(atPath: f.directory + "/" + name, toPath: copy + "/" + name)
        }
        let transactionsBefore = try #require(store.applier).transactions
        store.holdApplier(0)
        try store.drainApplier()
        // The 40 held groups went to SQLite in one transaction.
        #expect(try #require(store.applier).transactions == transactionsBefore + 1)
        let recovered = try StoreFixture.openSQLite(copy)
        defer { recovered.close() }
        #expect(recovered.recovery?.groups == 40)   // one transaction per frame

        for s in [store, recovered] as [SQLiteStore] {
            #expect(try s.lastSeq() == h.seq)
            for p in paths { #expect(try s.get(path(p)) == model.get(path(p)), "get \(p)") }
            #expect(try s.scanIndexEntries(from: [], to: [], reverse: false, limit: 1_000)
                    == model.scanIndexEntries(from: [], to: [], reverse: false, limit: 1_000))
            #expect(try s.scanIndex(from: [], to: [], reverse: true, limit: 1_000)
                    == model.scanIndex(from: [], to: [], reverse: true, limit: 1_000))
            #expect(try s.countIndex(from: [], to: []) == model.countIndex(from: [], to: []))
            let logged = try #require(try s.changes(after: 0, limit: 10_000))
            let expected = try #require(try model.changes(after: 0, limit: 10_000))
            #expect(logged.map(\.mutations) == expected.map(\.mutations))
        }
    }
}
