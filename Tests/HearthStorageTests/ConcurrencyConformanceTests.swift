import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// One writer thread applying groups while a reader thread reads, for every backend.
@Suite struct ConcurrencyConformanceTests {
    @Test(arguments: Backend.allCases)
    func readsNeverSeeAPartialGroup(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        try Race.run(writer: f.store, reader: f.store)
    }
}

/// The race: 1,000 single-document commits applied in groups of two, where commit 2g-1 writes `race/d0` and
/// commit 2g writes `race/d1`, both with the group number g, and moves that document's index entry from key
/// `[i] + "g-1"` to `[i] + "g"`. Whatever a read returns must come from whole groups: a `list` shows d0 and d1
/// from the same group, a `scanIndex` shows both entries with that group's keys joined with that group's
/// documents, `lastSeq` is even, `changes` ends on an even seq, and nothing goes backwards.
enum Race {
    static let commits = 1_000
    static let groupSize = 2

    static func run(writer: any DocumentStore, reader: any DocumentStore) throws {
        let done = Locked<Result<Void, HearthError>?>(nil)
        let thread = Thread {
            var h = History()
            var outcome = Result<Void, HearthError>.success(())
            for g in 1...(commits / groupSize) {
                let group = (0..<groupSize).map { i in
                    h.commit([("race/d\(i)", encode(g))], index: IndexChanges(removed: [entry([UInt8(i)] + encode(g - 1), "race/d\(i)")],
                                                                         added: [entry([UInt8(i)] + encode(g), "race/d\(i)")]))
                }
                do throws(HearthError) { try writer.apply(group) } catch { outcome = .failure(error); break }
            }
            let final = outcome
            done.withLock { $0 = final }
        }
        thread.start()

        var reads = 0
        var lastGroupSeen = 0
        var lastSeqSeen: UInt64 = 0
        while true {
            let finished = done.withLock { $0 != nil }
            // A reader on other connections sees a group once SQLite holds it: the last read waits for that.
            if finished, writer !== reader { try (writer as? SQLiteStore)?.drainApplier() }
            let seq = try reader.lastSeq()
            #expect(seq % UInt64(groupSize) == 0, "lastSeq \(seq) is inside a group")
            #expect(seq >= lastSeqSeen)
            lastSeqSeen = seq

            let docs = try reader.list(collection: collection("race"), afterID: nil, limit: 10)
            if !docs.isEmpty {
                #expect(docs.count == groupSize, "saw \(docs.count) of a group's documents")
                let groups = Set(docs.map { decode($0.data) })
                #expect(groups.count == 1, "documents from different groups in one read: \(groups)")
                #expect(docs[1].seq == docs[0].seq + 1)
                let g = groups.first ?? 0
                #expect(g >= lastGroupSeen)
                lastGroupSeen = g
            }

            let hits = try reader.scanIndex(from: [], to: [], reverse: false, limit: 10)
            if !hits.isEmpty {
                #expect(hits.count == groupSize, "saw \(hits.count) index entries")
                let keyGroups = Set(hits.map { decode(Array($0.key.dropFirst())) })
                #expect(keyGroups.count == 1, "index entries from different groups in one read: \(keyGroups)")
                #expect(hits.allSatisfy { decode(Array($0.key.dropFirst())) == decode($0.document.data) }, "an entry joined another group's document")
                #expect(keyGroups.first ?? 0 >= lastGroupSeen)
            }

            let log = try #require(try reader.changes(after: 0, limit: Int.max))
            #expect(UInt64(log.count) % UInt64(groupSize) == 0, "change log ends inside a group")
            #expect(log.last?.seq ?? 0 >= seq)
            reads += 1
            if finished { break }
        }
        try done.withLock { $0 }!.get()
        #expect(try reader.lastSeq() == UInt64(commits))
        #expect(lastGroupSeen == commits / groupSize)
        print("Race: \(reads) consistent reads during \(commits) commits")
    }

    static func encode(_ n: Int) -> [UInt8] { Array(String(n).utf8) }
    static func decode(_ data: [UInt8]) -> Int { Int(String(decoding: data, as: UTF8.self)) ?? -1 }
}
