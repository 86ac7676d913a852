import Foundation
import HearthTesting
import Testing

/// The randomized pipelined-consistency test against the real daemon: each connection, on a thread of its
/// own, pipelines random bursts (all lines of a burst in one write) and reads until the burst is answered,
/// while the others do the same, so the daemon's own group commits land between them at real timings.
/// `PipelineOracle` checks everything each connection saw. `HEARTH_PIPELINE_SEEDS=N` runs more seeds.
@Suite struct PipelinedConsistencyTCPTests {
    @Test func everySnapshotOverTCPIsExactAtItsSeq() throws {
        var failedSeeds: [String] = []
        let seeds = pipelineSeeds(default: 4)
        var snapshots = 0
        for seed in seeds {
            let (failures, counts) = try run(seed: seed, connections: 4, bursts: 60)
            snapshots += counts.snapshots
            if !failures.isEmpty { failedSeeds.append("seed \(seed):\n  " + failures.prefix(5).joined(separator: "\n  ")) }
        }
        #expect(failedSeeds.isEmpty, "\(failedSeeds.joined(separator: "\n"))")
        #expect(snapshots > 20 * seeds.count)
    }

    func run(seed: UInt64, connections n: Int, bursts: Int) throws -> ([String], PipelineOracleCounts) {
        let daemon = try DaemonProcess()
        var oracle = PipelineOracle(connections: n)
        let records = oracle.connections
        let clients = Locked<[Int: WireClient]>([:])
        let errors = Locked<[String]>([])
        let group = DispatchGroup()
        for i in 0..<n {
            group.enter()
            let record = records[i]
            Thread.detachNewThread {
                defer { group.leave() }
                var work = PipelineWorkload(seed: seed &+ UInt64(i) &* 1_000_003, connections: n)
                do {
                    let c = try daemon.connect()
                    clients.update { $0[i] = c }
                    for _ in 0..<bursts {
                        let burst = work.burst(for: i)
                        record.sent += burst.map(\.0)
                        try c.sendRaw(Array(burst.map { $0.1 + "\n" }.joined().utf8))
                        var answered = 0
                        while answered < burst.count {
                            let line = try c.readObject()
                            record.received.append(line)
                            if line["ok"] != nil { answered += 1 }
                        }
                    }
                } catch {
                    errors.update { $0.append("connection \(i): \(error)") }
                }
            }
        }
        group.wait()
        guard errors.value.isEmpty else { return (errors.value, PipelineOracleCounts()) }
        // A barrier on every connection, once everyone has finished: each answers after every publication.
        for i in 0..<n {
            let id = "\(i)-end"
            let c = clients.value[i]!
            records[i].sent.append(.ping(id: id))
            try c.send(#"{"op":"ping","id":"\#(id)"}"#)
            while true {
                let line = try c.readObject()
                records[i].received.append(line)
                if line["id"] as? String == id { break }
            }
        }
        let failures = oracle.check()
        return (failures, PipelineOracleCounts(oracle.counts))
    }
}

struct PipelineOracleCounts {
    var snapshots = 0
    init() {}
    init(_ c: (commits: Int, refused: Int, queries: Int, snapshots: Int, listeners: Int)) { snapshots = c.snapshots }
}
