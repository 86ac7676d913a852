import Foundation
import HearthModel
import HearthStorage
@testable import HearthStorageSQLite
import Testing

/// The commit log: where a group becomes durable before SQLite commits it without syncing
/// (docs/storage.md, "Durability"). These tests build the files a power loss leaves (SQLite behind the log,
/// the log's last frame torn at every byte) and check what an open recovers.
@Suite struct CommitLogTests {
    // MARK: The codec

    /// Groups as the engine makes them: creates, updates, deletes, index-only commits, a catalog, and paths
    /// whose bytes are not ASCII.
    static func sampleGroups() -> [[CommitRecord]] {
        var h = History()
        let catalog = bytes("{\"indexes\":[]}")
        var withCatalog = h.commit([("users/é/feed/p1", bytes("{\"a\":1}"))],
                                   index: IndexChanges(added: [entry([1, 0, 0xFF], "users/é/feed/p1")]))
        withCatalog.indexCatalog = catalog
        var withRequest = h.put("c/a", bytes("{\"n\":1}"))
        withRequest.request = CommitRequest(id: "req-é-1", answer: bytes("{\"t\":1}"))
        return [
            [withRequest, h.put("c/b", Array(repeating: 7, count: 300))],
            [h.commit([("c/a", bytes("{\"n\":2}")), ("c/b", nil)],
                      index: IndexChanges(removed: [entry([2], "c/b")], added: [entry([3, 4], "c/a"), entry([], "c/a")]))],
            [withCatalog, h.index(adding: [entry([9, 9], "c/a")])],
            [h.commit([])],
        ]
    }

    @Test func groupsRoundTripExactly() throws {
        for group in Self.sampleGroups() {
            var out: [UInt8] = []
            CommitRecordCodec.encode(group, into: &out)
            let back = try CommitRecordCodec.decode(out)
            #expect(back.commits == group && back.includingBefore)
            // Without before images, as the commit log writes them: everything else is the same.
            var short: [UInt8] = []
            CommitRecordCodec.encode(group, includingBefore: false, into: &short)
            let shortBack = try CommitRecordCodec.decode(short)
            var withoutBefore = group
            for c in withoutBefore.indices { for m in withoutBefore[c].mutations.indices { withoutBefore[c].mutations[m].before = nil } }
            #expect(shortBack.commits == withoutBefore && !shortBack.includingBefore)
        }
    }

    /// A group written before commits carried a request (flags without 0x02) decodes as it always did.
    @Test func aGroupOfTheFormatBeforeRequestsDecodes() throws {
        var h = History()
        let group = [h.put("c/a", bytes("{\"n\":1}")), h.commit([("c/a", nil)])]
        var out: [UInt8] = []
        CommitRecordCodec.encode(group, includingBefore: false, into: &out)
        // The same group as the earlier format wrote it: flags 0x00, and no request byte after each catalog.
        var old: [UInt8] = [0]
        var r = 1
        old += out[r..<(r + 4)]; r += 4
        for c in group {
            var one: [UInt8] = []
            CommitRecordCodec.encode([c], includingBefore: false, into: &one)
            old += one[5..<(one.count - 1)]   // the record without its trailing "no request" byte
            r += one.count - 5
        }
        #expect(r == out.count)
        var withoutBefore = group
        for c in withoutBefore.indices { for m in withoutBefore[c].mutations.indices { withoutBefore[c].mutations[m].before = nil } }
        #expect(try CommitRecordCodec.decode(old).commits == withoutBefore)
        #expect(thrownError { () throws(HearthError) in _ = try CommitRecordCodec.decode([4, 0, 0, 0, 0]) }?.code == .dataLoss, "an unknown flag")
    }

    /// Bytes that are not an encoding throw DATA_LOSS; they never read out of bounds or trap. Every
    /// truncation, and every single-byte change of a group (each either decodes to something or throws).
    @Test func everyTruncationThrowsAndNoChangedByteTraps() throws {
        var out: [UInt8] = []
        CommitRecordCodec.encode(Self.sampleGroups()[2], into: &out)
        for n in 0..<out.count {
            let error = thrownError { () throws(HearthError) in _ = try CommitRecordCodec.decode(out[0..<n]) }
            #expect(error?.code == .dataLoss, "a truncation to \(n) of \(out.count) bytes")
        }
        for i in out.indices {
            for v: UInt8 in [0, 1, 0x7F, 0xFF] where out[i] != v {
                var changed = out
                changed[i] = v
                _ = try? CommitRecordCodec.decode(changed)
            }
        }
    }

    // MARK: Recovery

    /// The files a power loss leaves: hearth.db holding the first `durable` groups (SQLite lost the rest of its
    /// unsynced tail) and commit.log holding every later group, each as one `apply`.
    struct Crash {
        var database: [UInt8]
        var log: [UInt8]
        /// The groups, and the documents after each (index 0: before any).
        var groups: [[CommitRecord]]
        var states: [[DocumentPath: StoredDocument]]
        var durable: Int
        var history: UInt64

        init(durable: Int = 2) throws {
            self.durable = durable
            let f = try StoreFixture(.sqlite)
            defer { f.finish() }
            var h = History()
            groups = (0..<5).map { g in
                (0..<3).map { i in h.commit([("c/d\(g * 3 + i)", bytes("{\"g\":\(g),\"i\":\(i)}")), ("c/shared", bytes("{\"g\":\(g)}"))]) }
            }
            var replay = History()
            states = [replay.documents]
            for group in groups {
                for c in group { _ = replay.commit(c.mutations.map { ($0.path.description, $0.after?.data) }) }
                states.append(replay.documents)
            }
            history = try f.store.historyID()
            for group in groups[..<durable] { try f.store.apply(group) }
            f.store.close()
            database = try Array(Data(contentsOf: URL(fileURLWithPath: f.directory + "/hearth.db")))
            try f.reopen()
            for group in groups[durable...] { try f.store.apply(group) }
            log = try Array(Data(contentsOf: URL(fileURLWithPath: f.directory + "/" + CommitLog.fileName)))
        }

        /// A fresh data directory holding the database and `log`.
        func directory(log: [UInt8]) throws -> String {
            let dir = StoreFixture.makeTemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(database).write(to: URL(fileURLWithPath: dir + "/hearth.db"))
            try Data(log).write(to: URL(fileURLWithPath: dir + "/" + CommitLog.fileName))
            return dir
        }

        /// The frames of the log.
        var frames: [CommitLog.Frame] { get throws { try CommitLog.parse(log, path: "log", history: history).frames } }
    }

    /// Checks that `store` holds exactly the documents after `groups` groups.
    static func expectState(_ store: SQLiteStore, _ crash: Crash, groups n: Int, _ what: String) throws {
        let seq = UInt64(n * 3)
        #expect(try store.lastSeq() == seq, "\(what): last seq")
        let docs = try store.list(collection: collection("c"), afterID: nil, limit: 1000)
        #expect(Dictionary(uniqueKeysWithValues: docs.map { ($0.path, $0) }) == crash.states[n], "\(what): documents")
        // The change log has every commit with both images: the before images the log leaves out were read
        // back from the store as recovery applied the commits in order.
        #expect(try store.changes(after: 0, limit: 1000) == crash.groups.prefix(n).flatMap { $0 }.map(\.logged), "\(what): change log")
    }

    /// The last group's frame torn at every byte offset, as a crash during its write leaves it: the open
    /// recovers exactly the whole groups before it (the acknowledged ones), says so in its recovery line, and
    /// the store goes on from there.
    @Test func aTornLastGroupRecoversExactlyTheGroupsBeforeIt() throws {
        let crash = try Crash()
        let frames = try crash.frames
        #expect(frames.count == 3)
        #expect(frames.map(\.firstSeq) == [7, 10, 13])
        let last = try #require(frames.last)
        // The file is preallocated: zeros follow the last frame.
        #expect(crash.log.count > last.end && crash.log[last.end...].allSatisfy { $0 == 0 })
        for cut in last.offset...last.end {
            // Cut, and cut with the preallocated zeros still after it (a crash leaves either).
            let zeros = cut % 2 == 0 ? 0 : crash.log.count - cut
            let dir = try crash.directory(log: Array(crash.log[0..<cut]) + [UInt8](repeating: 0, count: zeros))
            defer { StoreFixture.removeTemporaryDirectory(dir) }
            let store = try StoreFixture.openSQLite(dir)
            // Whole also when the bytes cut off were zeros and zeros were put back: the frame then reads
            // complete (it is: its checksum holds), and applying a group whose acknowledgement was never
            // sent is what a crash right after its fsync does too.
            let whole = cut == last.end || (zeros > 0 && crash.log[cut..<last.end].allSatisfy { $0 == 0 })
            try Self.expectState(store, crash, groups: whole ? 5 : 4, "log cut at \(cut)")
            let recovery = try #require(store.recovery)
            #expect(recovery.storeSeq == 6)
            #expect(recovery.groups == (whole ? 3 : 2))
            #expect(recovery.recoveredSeq == (whole ? 15 : 12))
            let torn = cut != last.offset && !whole
            #expect(recovery.tearOffset == (torn ? last.offset : nil), "log cut at \(cut)")
            let line = try #require(recovery.summary)
            #expect(line.contains("applied \(whole ? 3 : 2) groups (\(whole ? 9 : 6) commits) the store lacked, seq 7...\(whole ? 15 : 12)"))
            // The torn frame's bytes up to its last non-zero one (zeros after it read as the preallocated end).
            let tornLength = (crash.log[last.offset..<cut].lastIndex(where: { $0 != 0 }) ?? last.offset - 1) + 1 - last.offset
            #expect(line.contains("dropped a torn last frame, \(tornLength) bytes at offset \(last.offset)") == torn, "\(line)")
            // Recovered, synced and emptied: a commit goes on from the recovered seq, and a reopen finds
            // nothing more to do.
            var h = History(startingAfter: whole ? 15 : 12)
            try store.apply([h.put("c/after", bytes("{}"))])
            store.close()
            let again = try StoreFixture.openSQLite(dir)
            #expect(again.recovery?.summary == nil)
            #expect(try again.lastSeq() == (whole ? 16 : 13))
            again.close()
        }
    }

    /// A power loss after SQLite synced nothing at all: every group comes back from the log.
    @Test func everyGroupComesBackWhenTheStoreHasNone() throws {
        let crash = try Crash(durable: 0)
        let dir = try crash.directory(log: crash.log)
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let store = try StoreFixture.openSQLite(dir)
        defer { store.close() }
        try Self.expectState(store, crash, groups: 5, "all from the log")
        #expect(store.recovery?.groups == 5)
    }

    /// Frames SQLite already holds (the process died after SQLite's commit) are skipped, not applied twice.
    @Test func groupsTheStoreHoldsAreSkipped() throws {
        let crash = try Crash()
        // The crash left hearth.db with every group: take it from a store that holds them all.
        let full = try crash.directory(log: crash.log)
        defer { StoreFixture.removeTemporaryDirectory(full) }
        var store = try StoreFixture.openSQLite(full)
        store.close()
        let complete = try Array(Data(contentsOf: URL(fileURLWithPath: full + "/hearth.db")))
        var later = crash
        later.database = complete
        let dir = try later.directory(log: crash.log)
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        store = try StoreFixture.openSQLite(dir)
        defer { store.close() }
        try Self.expectState(store, crash, groups: 5, "nothing to apply")
        #expect(store.recovery?.groups == 0)
        #expect(store.recovery?.summary == nil)
    }

    /// A changed byte before the end, with a whole group after it, is damage and not a torn write: the open
    /// refuses (the groups in between would be lost silently) and names the offset.
    @Test func damageBeforeTheEndIsRefused() throws {
        let crash = try Crash()
        let frames = try crash.frames
        var damaged = crash.log
        damaged[frames[0].offset + CommitLog.headerSize + 5] ^= 0x40
        let dir = try crash.directory(log: damaged)
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("commit.log is damaged at offset 0 (its group's checksum does not match)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("a whole group of seq 10...12 follows at offset \(frames[1].offset)") == true)
        // The refusal changed nothing: the same files open once the damaged log is moved away.
        try FileManager.default.removeItem(atPath: dir + "/" + CommitLog.fileName)
        let store = try StoreFixture.openSQLite(dir)
        defer { store.close() }
        try Self.expectState(store, crash, groups: 2, "log moved away")
    }

    /// The byte-by-byte search after a header that does not hold: a changed header byte before whole frames
    /// is damage; the same before frames the store already holds is not worth refusing to start for.
    @Test func aDamagedHeaderIsFoundByTheScan() throws {
        let crash = try Crash()
        let frames = try crash.frames
        var damaged = crash.log
        damaged[frames[0].offset + 20] ^= 0x01   // inside prevSeq: the header checksum fails
        let dir = try crash.directory(log: damaged)
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("damaged at offset 0 (no whole frame header): a whole group of seq 10...12 follows at offset \(frames[1].offset)") == true,
                "\(error?.message ?? "")")
        #expect(try CommitLog.parse(damaged, path: "log", history: crash.history, storeSeq: 15).frames.isEmpty,
                "a store that holds every group does not refuse")
    }

    /// A torn last group whose data holds the bytes of a whole frame of this store is still a tear: the
    /// search for later frames starts after the group's declared end, and a frame found inside a torn one's
    /// bytes is not mistaken for a later group.
    @Test func frameBytesInsideATornGroupAreNotALaterGroup() throws {
        var crash = try Crash()
        let frames = try crash.frames
        let last = try #require(frames.last)
        // The last frame again, with a document whose data is a whole frame of this store's history.
        var h = History(startingAfter: last.firstSeq - 1)
        let inner = CommitLog.frame([commitAt(seq: 99, putting: "c/fake")], history: crash.history, prevSeq: 98)
        let group = [h.put("c/carrier", inner)]
        let outer = CommitLog.frame(group, history: crash.history, prevSeq: last.prevSeq)
        crash.log = Array(crash.log[0..<last.offset]) + outer
        let torn = Array(crash.log.dropLast(3))   // its own checksum fails; the inner frame is whole inside it
        let (found, tear) = try CommitLog.parse(torn, path: "log", history: crash.history)
        #expect(found.count == 2)
        #expect(tear?.offset == last.offset)
        // Another store's whole frame after a tear is another store's log.
        let foreign = CommitLog.frame([commitAt(seq: 99, putting: "c/x")], history: crash.history &+ 1, prevSeq: 98)
        let mixed = Array(crash.log[0..<last.offset]) + [0x48, 0x43, 0x4C] + foreign
        let error = thrownError { () throws(HearthError) in _ = try CommitLog.parse(mixed, path: "log", history: crash.history) }
        #expect(error?.code == .internal)
        #expect(error?.message.contains("belongs to another store") == true)
    }

    /// A log whose first group is not the store's next seq (commits in between are lost), and a log from
    /// another store's history, are refused.
    @Test func aGapOrAnotherStoresLogIsRefused() throws {
        let crash = try Crash()
        let frames = try crash.frames
        let gap = try crash.directory(log: Array(crash.log[frames[1].offset...]))
        defer { StoreFixture.removeTemporaryDirectory(gap) }
        let error = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: gap) }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("the group of seq 10...12 was appended after seq 9 but the store ends at seq 6") == true, "\(error?.message ?? "")")

        let other = try Crash()
        var mixed = crash
        mixed.database = other.database
        let dir = try mixed.directory(log: crash.log)
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let foreign = thrownError { () throws(HearthError) in _ = try SQLiteStore(directory: dir) }
        #expect(foreign?.code == .internal)
        #expect(foreign?.message.contains("belongs to another store") == true, "\(foreign?.message ?? "")")
    }

    /// The seqs of a group that failed before the log took it are not reused, so the next frame starts above
    /// the store's last seq + 1: recovery follows the frames' own record of the seq they were appended after,
    /// not seq arithmetic.
    @Test func aFailedGroupsSeqsAreAGapRecoveryAccepts() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a")), h.put("c/b", bytes("b"))])
        f.store.close()
        let database = try Array(Data(contentsOf: URL(fileURLWithPath: f.directory + "/hearth.db")))
        try f.reopen()
        _ = h.put("c/lost", bytes("x"))        // seq 3: its group failed, and the seq is not reused
        let after = h.put("c/c", bytes("c"))   // seq 4
        try f.store.apply([after])
        let log = try Array(Data(contentsOf: URL(fileURLWithPath: f.directory + "/" + CommitLog.fileName)))
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(database).write(to: URL(fileURLWithPath: dir + "/hearth.db"))
        try Data(log).write(to: URL(fileURLWithPath: dir + "/" + CommitLog.fileName))
        let store = try StoreFixture.openSQLite(dir)
        defer { store.close() }
        #expect(try store.lastSeq() == 4)
        #expect(try store.get(path("c/c"))?.data == bytes("c"))
        #expect(try store.get(path("c/lost")) == nil)
        #expect(store.recovery?.groups == 1)
        #expect(try store.changes(after: 0, limit: 10)?.map(\.seq) == [1, 2, 4])
    }

    /// Once the log outgrows its limit it is retired (renamed `commit.log.1`) and a new one started; the
    /// retired segment goes once SQLite's synced files hold all of it. The two stay bounded (each by the hard
    /// limit: how close to the reset size they stay depends on the applier's timing), nothing is lost
    /// across a reopen, and a clean close leaves an empty log and no retired segment behind.
    @Test func theLogRotatesOnceItOutgrowsItsLimit() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        var store = try StoreFixture.openSQLite(dir, logResetBytes: 4096)
        var h = History()
        let logPath = dir + "/" + CommitLog.fileName
        let retiredPath = dir + "/" + CommitLog.retiredName
        // The bytes up to the last frame's end (the file is preallocated with zeros after it).
        func logSize(_ path: String) -> Int {
            guard let data = FileManager.default.contents(atPath: path) else { return 0 }
            return (data.lastIndex(where: { $0 != 0 }) ?? -1) + 1
        }
        var largest = 0
        for i in 0..<200 {
            try store.apply([h.put("c/d\(i % 20)", Array(repeating: UInt8(i % 251), count: 500))])
            largest = max(largest, logSize(logPath) + logSize(retiredPath))
        }
        // Counted, not sampled: the applier may remove a retired segment before the next look at the directory.
        #expect(store.logRotations > 0, "the log was never retired")
        // Each segment stops at the hard limit and a frame (a retired one is a log that was due to rotate).
        #expect(largest > 0 && largest <= 2 * (4096 * CommitPipeline.hardLimitFactor + 1024), "the log peaked at \(largest) bytes")
        try store.drainApplier()
        store.close()
        #expect(FileManager.default.contents(atPath: logPath) == Data(), "a clean close leaves the log empty")
        #expect(!FileManager.default.fileExists(atPath: retiredPath))
        store = try StoreFixture.openSQLite(dir)
        defer { store.close() }
        #expect(try store.lastSeq() == 200)
        #expect(try store.get(path("c/d19"))?.data == Array(repeating: UInt8(199 % 251), count: 500))
    }

    /// A kill while a retired segment still holds groups SQLite lacks: the next start applies the retired
    /// segment's groups, then the active log's, and removes the segment.
    @Test func recoveryReadsTheRetiredSegmentFirst() throws {
        let dir = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(dir) }
        let store = try StoreFixture.openSQLite(dir, logResetBytes: 4096)
        defer { store.close() }
        store.holdApplier(1_000)   // nothing reaches SQLite
        var h = History()
        var commits: [CommitRecord] = []
        for i in 0..<12 {
            let c = h.put("c/d\(i % 5)", Array(repeating: UInt8(i), count: 500))
            commits.append(c)
            try store.apply([c])
        }
        let fm = FileManager.default
        #expect(fm.fileExists(atPath: dir + "/" + CommitLog.retiredName))
        let copy = StoreFixture.makeTemporaryDirectory()
        defer { StoreFixture.removeTemporaryDirectory(copy) }
        try fm.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for name in ["hearth.db", "hearth.db-wal", CommitLog.fileName, CommitLog.retiredName] {
            try fm.copyItem(atPath: dir + "/" + name, toPath: copy + "/" + name)
        }
        let recovered = try StoreFixture.openSQLite(copy)
        defer { recovered.close() }
        #expect(recovered.recovery?.groups == 12)
        #expect(try recovered.lastSeq() == 12)
        #expect(try recovered.changes(after: 0, limit: 100) == commits)
        #expect(!fm.fileExists(atPath: copy + "/" + CommitLog.retiredName))
        // The original, once its applier runs, retires the segment itself.
        store.holdApplier(0)
        try store.drainApplier()
        #expect(!fm.fileExists(atPath: dir + "/" + CommitLog.retiredName))
    }
}
