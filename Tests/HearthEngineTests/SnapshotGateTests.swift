@testable import HearthEngine
import HearthModel
import Testing

/// The snapshot gate's state machine on its own: no engine, no store, no sockets; the store's seq and the
/// published seq are plain variables the test moves.
@Suite struct SnapshotGateTests {
    final class World {
        var storeSeq: UInt64 = 5
        var published: UInt64 = 5
        var storeFails = false
        lazy var gate = SnapshotGate(
            storeSeq: { [unowned self] () throws(HearthError) in
                if self.storeFails { throw HearthError(.unavailable, "disk gone") }
                return self.storeSeq
            },
            publishedSeq: { [unowned self] in self.published })
    }

    final class Waiter: SnapshotWaiter {
        let name: String
        let log: Log
        let gate: () -> SnapshotGate
        init(_ name: String, _ log: Log, gate: @escaping () -> SnapshotGate) { self.name = name; self.log = log; self.gate = gate }
        func snapshotGateOpened() { log.entries.append("\(name) woke, gate \(gate().phase)") }
    }

    final class Log { var entries: [String] = [] }

    func ticket(_ g: SnapshotGate) throws -> SnapshotGate.Ticket {
        guard case .run(let t) = g.admit() else { throw HearthError(.internal, "expected to run") }
        return t
    }

    @Test func whileQuietReadsRunAndNeedNoConfirmation() throws {
        let w = World()
        let t = try ticket(w.gate)
        w.gate.noteStoreRead()
        w.storeSeq = 99                      // would fail a check, but none is needed: nothing is in flight
        #expect(w.gate.confirm(t))
        #expect(w.gate.confirmations == 0)
    }

    @Test func duringAnFsyncAReadThatTouchedOnlyMemoryIsExact() throws {
        let w = World()
        w.gate.batchTaken(CommitBatch(pending: []))
        #expect(w.gate.phase == .inFlight)
        let t = try ticket(w.gate)
        w.storeSeq = 6                       // landed, but the read never went to the store
        #expect(w.gate.confirm(t))
        #expect(w.gate.confirmations == 0)
    }

    @Test func duringAnFsyncAStoreReadIsConfirmedByTheStoresSeq() throws {
        let w = World()
        w.gate.batchTaken(CommitBatch(pending: []))
        let t1 = try ticket(w.gate)
        w.gate.noteStoreRead()
        #expect(w.gate.confirm(t1))           // the store is still at the published seq
        #expect(w.gate.phase == .inFlight)
        let t2 = try ticket(w.gate)
        w.gate.noteStoreRead()
        w.storeSeq = 6                       // the batch landed while it read
        #expect(!w.gate.confirm(t2))
        #expect(w.gate.phase == .landed)
        #expect(w.gate.retries == 1 && w.gate.confirmations == 2)
        // After the landing a read still runs: exact if it touches only memory, torn if it reads the store.
        let t3 = try ticket(w.gate)
        #expect(w.gate.confirm(t3))
        let t4 = try ticket(w.gate)
        w.gate.noteStoreRead()
        #expect(!w.gate.confirm(t4))
        #expect(w.gate.phase == .landed && w.gate.retries == 2)
    }

    @Test func aStoreThatCannotTellItsSeqIsNotTrusted() throws {
        let w = World()
        w.gate.batchTaken(CommitBatch(pending: []))
        let t = try ticket(w.gate)
        w.gate.noteStoreRead()
        w.storeFails = true
        #expect(!w.gate.confirm(t))
    }

    /// Once the writer's flag is set, a read that touched only memory is still exact (the cache and the
    /// listeners' views hold the published state until the publication), and one that read the store is torn,
    /// known from the flag without asking the store.
    @Test func theWritersFlagTearsStoreReadsOnly() throws {
        let w = World()
        let batch = CommitBatch(pending: [])
        w.gate.batchTaken(batch)
        let t = try ticket(w.gate)
        batch.markLanded()
        let memoryOnly = try ticket(w.gate)
        #expect(w.gate.phase == .landed)
        #expect(w.gate.confirm(memoryOnly))
        w.gate.noteStoreRead()
        #expect(!w.gate.confirm(t))           // flagged: no need to ask the store
        #expect(w.gate.retries == 1)
    }

    @Test func waitersWakeOnceInOrderAfterThePublicationWithTheGateQuiet() throws {
        let w = World()
        let log = Log()
        let a = Waiter("a", log) { w.gate }, b = Waiter("b", log) { w.gate }, c = Waiter("c", log) { w.gate }
        w.gate.batchTaken(CommitBatch(pending: []))
        w.gate.wait(b)
        w.gate.wait(a)
        w.gate.wait(b)                       // twice is once
        w.gate.wait(c)
        w.gate.forget(c)                     // its connection closed
        #expect(w.gate.waiterCount == 2)
        w.gate.publicationStarted()
        #expect(w.gate.phase == .publishing)
        #expect(log.entries.isEmpty)
        w.gate.publicationFinished()
        #expect(log.entries == ["b woke, gate quiet", "a woke, gate quiet"])
        #expect(w.gate.waiterCount == 0 && w.gate.phase == .quiet)
    }

    @Test func aFailedBatchAlsoEndsItsWindow() throws {
        let w = World()
        let log = Log()
        w.gate.batchTaken(CommitBatch(pending: []))
        w.gate.wait(Waiter("a", log) { w.gate })
        w.gate.publicationStarted()          // finish of a failed batch: nothing landed
        w.gate.publicationFinished()
        #expect(log.entries == ["a woke, gate quiet"])
        _ = try ticket(w.gate)
    }
}
