import Foundation
@testable import HearthEngine
@testable import HearthServer
import Testing

/// The randomized pipelined-consistency test, in process: several connections pipeline random bursts while
/// the group commit is stepped at random (queue, take a batch, land it with or without the writer's flag,
/// publish it), so reads arrive in every window of a batch's life. `PipelineOracle` checks everything each
/// connection saw. `HEARTH_PIPELINE_SEEDS=N` runs more seeds, `HEARTH_PIPELINE_SEED=S` replays one.
@Suite struct PipelinedConsistencyTests {
    static let connections = 4

    @Test func everySnapshotIsExactAtItsSeq() throws {
        var failedSeeds: [String] = []
        var totals = (commits: 0, refused: 0, queries: 0, snapshots: 0, listeners: 0, retries: 0)
        let seeds = pipelineSeeds(default: 40)
        for seed in seeds {
            let (failures, counts, retries) = try run(seed: seed, steps: 300)
            totals.commits += counts.commits; totals.refused += counts.refused; totals.queries += counts.queries
            totals.snapshots += counts.snapshots; totals.listeners += counts.listeners; totals.retries += retries
            if !failures.isEmpty { failedSeeds.append("seed \(seed):\n  " + failures.prefix(5).joined(separator: "\n  ")) }
            if failedSeeds.count >= 3 { break }
        }
        #expect(failedSeeds.isEmpty, "\(failedSeeds.joined(separator: "\n"))")
        // The runs covered what they are meant to: refused writes, many snapshots. (Reads torn on the loop
        // and run again no longer occur here: a listen that reads the store reads it on a reader thread.)
        print("pipelined consistency, in process: \(seeds.count) seeds, \(totals)")
        #expect(totals.commits > 20 * seeds.count && totals.snapshots > 20 * seeds.count && totals.queries > 5 * seeds.count)
        #expect(totals.refused > 0 && totals.listeners > 5 * seeds.count)
    }

    func run(seed: UInt64, steps: Int) throws -> ([String], counts: (commits: Int, refused: Int, queries: Int, snapshots: Int, listeners: Int), retries: Int) {
        let s = try InProcessServer()
        let conns = (0..<Self.connections).map { _ in s.connect() }
        var oracle = PipelineOracle(connections: conns.count)
        var work = PipelineWorkload(seed: seed, connections: conns.count)
        var rng = SplitMix(seed: seed ^ 0xA5A5)
        var batch: CommitBatch?
        var landed = false
        func collect() {
            for (i, c) in conns.enumerated() { oracle.connections[i].received += c.take() }
        }
        func publish() {
            guard let b = batch else { return }
            if !landed { s.land(b) } else if !b.hasLanded { b.markLanded() }
            s.publish(b)
            batch = nil
            landed = false
        }
        for _ in 0..<steps {
            switch rng.next() % 10 {
            case 0..<5:
                let c = Int(rng.next() % UInt64(conns.count))
                let burst = work.burst(for: c)
                oracle.connections[c].sent += burst.map(\.0)
                conns[c].write(burst.map(\.1))
            case 5:
                s.settle()          // responses of reads on reader threads come back
            case 6:
                if batch == nil { batch = s.takeBatch() }
            case 7, 8:
                // Land the batch in flight: flagged, or not yet (the instant after the store's commit).
                if let b = batch, !landed { s.land(b, flag: rng.next() % 2 == 0); landed = true }
            default:
                publish()
            }
            collect()
        }
        // Quiesce, then a barrier on every connection: each answers after everything before it.
        s.settle()
        publish()
        s.flush()
        for (i, c) in conns.enumerated() {
            let (sent, line) = work.ping(for: i)
            oracle.connections[i].sent.append(sent)
            c.write([line])
        }
        s.flush()
        s.settle()
        collect()
        let failures = oracle.check()
        return (failures, oracle.counts, s.engine.gate.retries)
    }
}
