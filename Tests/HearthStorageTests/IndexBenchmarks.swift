import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// Secondary-index figures for SQLite, printed, never asserted. Runs only when HEARTH_STORAGE_BENCH is set
/// (HEARTH_INDEX_BENCH_ENTRIES overrides the 1,000,000 entries); docs/storage.md gives the figures measured.
///
/// The data: N documents `items/dNNNNNNN` (100-byte payload), then one index entry per document, backfilled
/// by index-only commits of 1,000 entries (one commit per `apply`), the way the engine fills a new index.
/// Keys are ~43 bytes shaped like the engine's (`owner == X order by time desc`): string tag, `owner-NNNNN`
/// (10,000 distinct values, so N/10,000 entries per prefix), terminator, timestamp tag and 8 bytes, then the
/// encoded document key. The change log is kept empty (maxBytes 0) so the file holds documents and entries.
@Suite struct IndexBenchmarks {
    static let entries = Int(ProcessInfo.processInfo.environment["HEARTH_INDEX_BENCH_ENTRIES"] ?? "") ?? 1_000_000
    static let prefixes = 10_000
    static let payload = Array(StorageBenchmarks.payload.prefix(100))

    static func docID(_ i: Int) -> String {
        let digits = String(i)
        return "d" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    /// The first bytes shared by every key of owner `o`.
    static func prefix(_ o: Int) -> [UInt8] {
        let digits = String(o)
        return [0x50] + Array(("owner-" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits).utf8) + [0x00, 0x01]
    }

    static func key(_ i: Int) -> [UInt8] {
        var k = prefix(i % prefixes)
        k.append(0x40)
        let time = UInt64(1_767_225_600_000_000 + i) ^ (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { k.append(UInt8(truncatingIfNeeded: time >> UInt64(shift))) }
        k += [0x70] + Array("items".utf8) + [0x00, 0x02] + Array(docID(i).utf8) + [0x00, 0x02, 0x00, 0x01]
        return k
    }

    @Test(.enabled(if: StorageBenchmarks.enabled))
    func descendingScansOfAMillionEntryIndex() throws {
        let f = try StoreFixture(.sqlite, retention: RetentionPolicy(maxAgeMicros: Int64.max, maxBytes: 0))
        defer { f.finish() }
        let n = Self.entries, batch = 1_000
        var seq: UInt64 = 0
        let t0 = Timestamp(micros: 1_767_225_600_000_000)

        var start = ContinuousClock.now
        for first in stride(from: 0, to: n, by: batch) {
            seq += 1
            let mutations = (first..<min(n, first + batch)).map { i in
                let doc = StoredDocument(path: path("items/" + Self.docID(i)), data: Self.payload, createTime: t0, updateTime: t0, seq: seq)
                return Mutation(path: doc.path, before: nil, after: doc)
            }
            try f.store.apply([CommitRecord(seq: seq, commitTime: t0, mutations: mutations)])
        }
        print(String(format: "bench index: %d documents written in %.1f s", n, StorageBenchmarks.seconds(ContinuousClock.now - start)))

        start = ContinuousClock.now
        for first in stride(from: 0, to: n, by: batch) {
            seq += 1
            let added = (first..<min(n, first + batch)).map { IndexEntry(key: Self.key($0), path: path("items/" + Self.docID($0))) }
            try f.store.apply([CommitRecord(seq: seq, commitTime: t0, mutations: [], indexChanges: IndexChanges(added: added))])
        }
        let backfill = StorageBenchmarks.seconds(ContinuousClock.now - start)
        print(String(format: "bench index: backfilled %d entries (index-only commits of %d) in %.1f s: %.0f entries/s",
                     n, batch, backfill, Double(n) / backfill))
        #expect(try f.store.countIndex(from: [], to: []) == n)
        try Self.printSizes(f, entries: n)

        // Descending scans of 20 from a random prefix; then the same ascending, open-ended, and counts.
        var rng = SplitMix(seed: 7)
        let clock = ContinuousClock()
        func measure(_ label: String, rounds: Int, _ body: (Int) throws -> Int) rethrows {
            var samples: [Double] = []
            samples.reserveCapacity(rounds)
            var rows = 0
            for round in 0..<(rounds + rounds / 10) {
                let owner = Int(rng.next() % UInt64(Self.prefixes))
                let t = clock.now
                let found = try body(owner)
                guard round >= rounds / 10 else { continue }  // warm-up
                samples.append(StorageBenchmarks.seconds(clock.now - t) * 1e6)
                rows += found
            }
            samples.sort()
            print(String(format: "bench index: %@: p50 %.1f us, p99 %.1f us, mean %.1f us (%d calls, %.1f rows per call)",
                         label, samples[samples.count / 2], samples[samples.count * 99 / 100],
                         samples.reduce(0, +) / Double(samples.count), samples.count, Double(rows) / Double(samples.count)))
        }
        let store = f.store
        func upper(_ o: Int) -> [UInt8] { var p = Self.prefix(o); p[p.count - 1] += 1; return p }
        try measure("descending scan, limit 20, one prefix", rounds: 20_000) { o in
            try store.scanIndex(from: Self.prefix(o), to: upper(o), reverse: true, limit: 20).count
        }
        try measure("ascending scan, limit 20, one prefix", rounds: 20_000) { o in
            try store.scanIndex(from: Self.prefix(o), to: upper(o), reverse: false, limit: 20).count
        }
        try measure("descending scan, limit 20, from a prefix to the end (upper []: the last 20 keys)", rounds: 20_000) { o in
            try store.scanIndex(from: Self.prefix(o), to: [], reverse: true, limit: 20).count
        }
        try measure("countIndex of one prefix", rounds: 20_000) { o in
            try store.countIndex(from: Self.prefix(o), to: upper(o))
        }

        // The descending scans again while a writer thread moves entries (groups of 10 commits, each updating
        // one document and re-keying its entry): every commit resets the reader's page cache.
        let stop = Locked(false)
        let written = Locked(0)
        let startSeq = seq
        let writer = Thread {
            var s = startSeq, commits = 0, i = 0
            while !stop.withLock({ $0 }) {
                var group: [CommitRecord] = []
                for _ in 0..<10 {
                    s += 1
                    let doc = StoredDocument(path: path("items/" + Self.docID(i)), data: Self.payload, createTime: t0, updateTime: t0, seq: s)
                    let changes = IndexChanges(removed: [IndexEntry(key: Self.key(i), path: doc.path)],
                                               added: [IndexEntry(key: Self.key(i), path: doc.path)])
                    group.append(CommitRecord(seq: s, commitTime: t0, mutations: [Mutation(path: doc.path, before: doc, after: doc)],
                                              indexChanges: changes))
                    i = (i + 7919) % n
                }
                do { try store.apply(group) } catch { break }
                commits += 10
            }
            let total = commits
            written.withLock { $0 = total }
        }
        let loadStart = ContinuousClock.now
        writer.start()
        try measure("descending scan, limit 20, while writing", rounds: 20_000) { o in
            try store.scanIndex(from: Self.prefix(o), to: upper(o), reverse: true, limit: 20).count
        }
        let loadSeconds = StorageBenchmarks.seconds(ContinuousClock.now - loadStart)
        stop.withLock { $0 = true }
        while written.withLock({ $0 }) == 0 { usleep(1000) }
        print(String(format: "bench index: writer meanwhile: %.0f commits/s", Double(written.withLock { $0 }) / loadSeconds))
    }

    /// The index table's pages as SQLite's `dbstat` counts them, and the whole file after a checkpoint.
    static func printSizes(_ f: StoreFixture, entries n: Int) throws {
        let db = try SQLiteConnection(path: f.directory + "/hearth.db", role: "bench", create: false)
        defer { db.close() }
        _ = try db.queryColumn("PRAGMA wal_checkpoint(TRUNCATE)")
        for name in ["index_entries", "documents", "documents_by_key"] {
            let row = try db.queryColumn("""
                SELECT count(*) || ' ' || sum(pgsize) || ' ' || sum(payload) || ' ' || sum(unused) FROM dbstat WHERE name = '\(name)'
                """)
            let v = (row.first ?? "").split(separator: " ").compactMap { Double($0) }
            guard v.count == 4 else { continue }
            print(String(format: "bench index: %@: %.0f pages, %.1f MiB (%.1f MiB per million rows; payload %.1f MiB, unused %.1f MiB)",
                         name, v[0], v[1] / 1_048_576, v[1] / 1_048_576 / (Double(n) / 1e6), v[2] / 1_048_576, v[3] / 1_048_576))
        }
        let file = try FileManager.default.attributesOfItem(atPath: f.directory + "/hearth.db")[.size] as? Int ?? 0
        print(String(format: "bench index: hearth.db after checkpoint: %.1f MiB", Double(file) / 1_048_576))
    }
}
