import Foundation
import HearthModel
import HearthStorage
import HearthStorageSQLite
import Testing

/// Throughput and latency figures, printed, never asserted (they depend on the disk). Runs only when
/// HEARTH_STORAGE_BENCH is set; docs/storage.md gives the command and the figures measured.
@Suite struct StorageBenchmarks {
    static let enabled = ProcessInfo.processInfo.environment["HEARTH_STORAGE_BENCH"] != nil
    /// ~300 bytes, like a small JSON document.
    static let payload = Array(#"{"name":"Ada Lovelace","email":"ada@example.com","department":"engineering","title":"Analyst","tags":["math","poetry","engines"],"address":{"street":"12 St James's Square","city":"London","postcode":"SW1Y 4JH"},"joined":"1842-09-01T00:00:00Z","active":true,"score":1815,"notes":"Notes on the Analytical Engine."}"#.utf8)

    @Test(.enabled(if: enabled), arguments: Backend.allCases)
    func applyAndGet(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        let workingSet = 10_000
        func nextCommit() -> CommitRecord { h.put("users/u\(Int(h.seq) % workingSet)", Self.payload) }

        // Warm up and fill the working set, 100 commits per group.
        for _ in 0..<(workingSet / 100) { try f.store.apply((0..<100).map { _ in nextCommit() }) }

        for groupSize in [1, 100] {
            let groups = groupSize == 1 ? 1_000 : 100
            let batches = (0..<groups).map { _ in (0..<groupSize).map { _ in nextCommit() } }
            let start = ContinuousClock.now
            for batch in batches { try f.store.apply(batch) }
            let seconds = Self.seconds(ContinuousClock.now - start)
            let commits = Double(groups * groupSize)
            print(String(format: "bench %@: apply groups of %d x 1 doc (%d B): %.0f commits/s, %.1f us per apply",
                         backend.rawValue, groupSize, Self.payload.count, commits / seconds, seconds / Double(groups) * 1e6))
        }

        let paths = (0..<workingSet).map { path("users/u\(($0 * 7919) % workingSet)") }
        var samples: [Double] = []
        samples.reserveCapacity(200_000)
        var found = 0
        let clock = ContinuousClock()
        for round in 0..<20 {
            for p in paths {
                let t0 = clock.now
                if try f.store.get(p) != nil { found += 1 }
                if round > 0 { samples.append(Self.seconds(clock.now - t0) * 1e6) }
            }
        }
        samples.sort()
        let mean = samples.reduce(0, +) / Double(samples.count)
        print(String(format: "bench %@: get (hot, %d docs): mean %.2f us, p50 %.2f us, p99 %.2f us (%d found)",
                     backend.rawValue, workingSet, mean, samples[samples.count / 2], samples[samples.count * 99 / 100], found))

        // The same gets while a writer thread keeps committing groups of 10 (each commit invalidates the
        // reader's page cache, so this is the figure that matters under load).
        let stop = Locked(false)
        let writerDone = Locked(0)
        let store = f.store
        let startSeq = h.seq
        let writer = Thread {
            var writerHistory = History(startingAfter: startSeq)
            var groups = 0
            while !stop.withLock({ $0 }) {
                let batch = (0..<10).map { _ in writerHistory.put("users/u\(Int(writerHistory.seq) % workingSet)", Self.payload) }
                do { try store.apply(batch) } catch { break }
                groups += 1
            }
            let total = groups
            writerDone.withLock { $0 = total }
        }
        writer.start()
        samples.removeAll(keepingCapacity: true)
        let loadStart = ContinuousClock.now
        for _ in 0..<10 {
            for p in paths {
                let t0 = clock.now
                _ = try f.store.get(p)
                samples.append(Self.seconds(clock.now - t0) * 1e6)
            }
        }
        let loadSeconds = Self.seconds(ContinuousClock.now - loadStart)
        stop.withLock { $0 = true }
        while writerDone.withLock({ $0 }) == 0 { usleep(1000) }
        samples.sort()
        print(String(format: "bench %@: get while writing groups of 10: mean %.2f us, p50 %.2f us, p99 %.2f us; writer %d commits/s",
                     backend.rawValue, samples.reduce(0, +) / Double(samples.count), samples[samples.count / 2],
                     samples[samples.count * 99 / 100], Int(Double(writerDone.withLock { $0 } * 10) / loadSeconds)))

        let start = ContinuousClock.now
        var listed = 0
        for i in 0..<1_000 { listed += try f.store.list(collection: collection("users"), afterID: "u\(i * 9)", limit: 100).count }
        print(String(format: "bench %@: list 100 docs: %.1f us per call (%d docs)",
                     backend.rawValue, Self.seconds(ContinuousClock.now - start) * 1e3, listed))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}
