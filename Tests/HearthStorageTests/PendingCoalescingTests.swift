import HearthModel
import HearthStorage
import Testing

/// `PendingGroup(coalescing:)` and `PendingCommits`' totals: a backlog answers every point read the same
/// however its groups are coalesced, and its totals follow appends, removals and coalescing. (Index reads
/// over coalesced groups are checked against a model in `PendingMergeTests`.)
@Suite struct PendingCoalescingTests {
    /// Random single-group commits over a few documents, some carrying request IDs, some reusing one.
    private static func groups(_ count: Int, seed: UInt64) -> [PendingGroup] {
        var rng = SplitMix(seed: seed)
        var h = History()
        return (0..<count).map { g in
            let records = (0..<Int(rng.next() % 3) + 1).map { _ -> CommitRecord in
                let id = "c/d\(rng.next() % 6)"
                var r = rng.next() % 5 == 0 ? h.delete(id) : h.put(id, bytes("\(g)-\(rng.next() % 100)"))
                if rng.next() % 3 == 0 { r.request = CommitRequest(id: "req\(rng.next() % 8)", answer: bytes("answer \(r.seq)")) }
                return r
            }
            return PendingGroup(records, logBytes: 100 + g)
        }
    }

    /// Coalesces random runs of adjacent groups, several times over (so groups of several tiers coalesce).
    private static func coalesced(_ groups: [PendingGroup], seed: UInt64) -> PendingCommits {
        var rng = SplitMix(seed: seed)
        var backlog = PendingCommits(groups)
        for _ in 0..<12 where backlog.groups.count > 1 {
            let start = Int(rng.next() % UInt64(backlog.groups.count - 1))
            let end = min(backlog.groups.count, start + 2 + Int(rng.next() % 4))
            backlog.coalesce(start..<end, into: PendingGroup(coalescing: Array(backlog.groups[start..<end])))
        }
        return backlog
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func coalescedGroupsAnswerAsTheirGroupsDo(seed: UInt64) throws {
        let groups = Self.groups(40, seed: seed)
        let plain = PendingCommits(groups)
        let backlog = Self.coalesced(groups, seed: seed &+ 100)
        #expect(backlog.groups.count < groups.count, "some groups were coalesced")
        #expect(backlog.groups.contains { $0.tier >= 2 }, "a coalesced group was coalesced again")
        #expect(backlog.groups.reduce(0) { $0 + $1.acknowledgedGroups } == groups.count)
        #expect(backlog.groups.flatMap(\.records).map(\.seq) == groups.flatMap(\.records).map(\.seq))
        for i in 0..<6 {
            let p = path("c/d\(i)")
            #expect(backlog.document(p) == plain.document(p), "c/d\(i)")
        }
        #expect(backlog.document(path("c/other")) == nil)
        for i in 0..<8 {
            let id = "req\(i)"
            let oldest = groups.flatMap(\.records).first { $0.request?.id == id }
            #expect(backlog.committedRequest(id) == plain.committedRequest(id), "\(id)")
            #expect(backlog.committedRequest(id)?.seq == oldest?.seq, "\(id): the oldest commit's")
        }
        #expect(backlog.commitCount == plain.commitCount && backlog.imageBytes == plain.imageBytes)
        #expect(backlog.writeCount == plain.writeCount && backlog.logBytes == plain.logBytes)
    }

    @Test func totalsFollowAppendsRemovalsAndCoalescing() {
        let groups = Self.groups(20, seed: 7)
        var backlog = PendingCommits()
        func check(_ what: String) {
            #expect(backlog.commitCount == backlog.groups.reduce(0) { $0 + $1.records.count }, "\(what): commits")
            #expect(backlog.imageBytes == backlog.groups.reduce(0) { $0 + $1.imageBytes }, "\(what): image bytes")
            #expect(backlog.writeCount == backlog.groups.reduce(0) { $0 + $1.writeCount }, "\(what): writes")
            #expect(backlog.logBytes == backlog.groups.reduce(0) { $0 + $1.logBytes }, "\(what): log bytes")
        }
        for g in groups { backlog.append(g) }
        check("appended")
        backlog.coalesce(4..<12, into: PendingGroup(coalescing: Array(groups[4..<12])))
        check("coalesced")
        #expect(backlog.groups.count == 13 && backlog.groups[4].tier == 1 && backlog.groups[4].acknowledgedGroups == 8)
        #expect(backlog.groups[4].logBytes == groups[4..<12].reduce(0) { $0 + $1.logBytes })
        backlog.removeThrough(groups[11].lastSeq)
        check("applied through the coalesced group")
        #expect(backlog.groups.first === groups[12])
        backlog.removeThrough(groups[19].lastSeq)
        check("all applied")
        #expect(backlog.isEmpty && backlog.commitCount == 0 && backlog.logBytes == 0)
    }
}
