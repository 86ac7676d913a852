import Foundation
import HearthTesting
import Testing

/// Queries, counts and aggregations run on reader threads (`--readers 4`) while several writers commit: every
/// answer is checked against a model of the collection rebuilt at the seq the answer reports. A read that mixed
/// two commits, missed a published one, or reported the wrong seq fails here.
@Suite struct ReaderExactnessTests {
    /// One commit as a writer saw it acknowledged: its seq and, per document, the data set (nil: deleted).
    struct Commit {
        let seq: Int
        let writes: [(id: String, data: (g: Int, v: Int)?)]
    }

    /// One answer as a reader got it.
    enum Answer {
        case top(g: Int, limit: Int, ids: [String], values: [Int], seq: Int)
        case atLeast(v: Int, ids: [String], seq: Int)
        case count(g: Int, count: Int, seq: Int)
        case sum(g: Int, sum: Int, seq: Int)

        var seq: Int {
            switch self {
            case .top(_, _, _, _, let s), .atLeast(_, _, let s), .count(_, _, let s), .sum(_, _, let s): return s
            }
        }
    }

    static let documents = 24
    static func id(_ n: Int) -> String { "d" + (n < 10 ? "0" : "") + String(n) }

    @Test func everyAnswerIsTheModelAtItsSeq() throws {
        let daemon = try DaemonProcess(extraArgs: ["--readers", "4"])
        let setup = try daemon.connect()
        #expect(try setup.request(#"{"op":"index","action":"create","collection":"items","fields":[["g","asc"],["v","desc"]]}"#).isOK)
        // The composite index is usable once its (empty) backfill is durable: wait for the query to be accepted.
        var ready = false
        for _ in 0..<10_000 where !ready {
            ready = try setup.request(#"{"op":"query","collection":"items","where":[["g","==",0]],"orderBy":[["v","desc"]],"limit":1}"#).isOK
        }
        #expect(ready, "the composite index became ready")

        let stop = Locked(false)
        let commits = Locked<[Commit]>([])
        let answers = Locked<[Answer]>([])
        let failures = Locked<[String]>([])
        let writers = DispatchGroup(), readers = DispatchGroup()
        for w in 0..<3 {
            writers.enter()
            Thread.detachNewThread {
                defer { writers.leave() }
                var random = SystemRandomNumberGenerator()
                guard let c = try? daemon.connect() else { failures.update { $0.append("writer \(w) could not connect") }; return }
                while !stop.value {
                    var writes: [(id: String, data: (g: Int, v: Int)?)] = []
                    var lines: [String] = []
                    var used = Set<String>()
                    for _ in 0..<Int.random(in: 1...3, using: &random) {
                        let id = Self.id(Int.random(in: 0..<Self.documents, using: &random))
                        guard used.insert(id).inserted else { continue }
                        if Int.random(in: 0..<5, using: &random) == 0 {
                            writes.append((id, nil))
                            lines.append(#"{"op":"delete","path":"items/\#(id)"}"#)
                        } else {
                            let g = Int.random(in: 0..<3, using: &random), v = Int.random(in: 0..<40, using: &random)
                            writes.append((id, (g, v)))
                            lines.append(#"{"op":"set","path":"items/\#(id)","data":{"g":\#(g),"v":\#(v),"w":\#(w)}}"#)
                        }
                    }
                    guard let r = try? c.request(#"{"op":"commit","writes":[\#(lines.joined(separator: ","))]}"#), r.isOK,
                          let seq = r["seq"] as? Int else {
                        failures.update { $0.append("writer \(w): a commit failed") }
                        return
                    }
                    commits.update { $0.append(Commit(seq: seq, writes: writes)) }
                }
            }
        }
        for reader in 0..<4 {
            readers.enter()
            Thread.detachNewThread {
                defer { readers.leave() }
                var random = SystemRandomNumberGenerator()
                guard let c = try? daemon.connect() else { failures.update { $0.append("reader \(reader) could not connect") }; return }
                var mine = 0
                // Each reader asks at least 300 times, and on until the writers have committed 300 times (on a
                // loaded machine the writers may start late: the reads must overlap commits to mean anything).
                while (mine < 300 || commits.value.count < 300) && failures.value.isEmpty && mine < 200_000 {
                    mine += 1
                    let g = Int.random(in: 0..<3, using: &random)
                    do {
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0:
                            let limit = Int.random(in: 1...8, using: &random)
                            let r = try c.request(#"{"op":"query","collection":"items","where":[["g","==",\#(g)]],"orderBy":[["v","desc"]],"limit":\#(limit)}"#)
                            let docs = try Self.docs(r), seq = try Self.seq(r)
                            answers.update { $0.append(.top(g: g, limit: limit, ids: docs.map(\.id), values: docs.map(\.v), seq: seq)) }
                        case 1:
                            let v = Int.random(in: 0..<40, using: &random)
                            let r = try c.request(#"{"op":"query","collection":"items","where":[["v",">=",\#(v)]]}"#)
                            let ids = try Self.docs(r).map(\.id), seq = try Self.seq(r)
                            answers.update { $0.append(.atLeast(v: v, ids: ids, seq: seq)) }
                        case 2:
                            let r = try c.request(#"{"op":"count","collection":"items","where":[["g","==",\#(g)]]}"#)
                            let seq = try Self.seq(r)
                            answers.update { $0.append(.count(g: g, count: r["count"] as? Int ?? -1, seq: seq)) }
                        default:
                            let r = try c.request(#"{"op":"aggregate","query":{"collection":"items","where":[["g","==",\#(g)]]},"aggregations":{"s":{"sum":"v"}}}"#)
                            let sum = (r["result"] as? [String: Any])?["s"] as? Int ?? -1
                            let seq = try Self.seq(r)
                            answers.update { $0.append(.sum(g: g, sum: sum, seq: seq)) }
                        }
                    } catch {
                        failures.update { $0.append("reader \(reader): \(error)") }
                        return
                    }
                }
            }
        }
        // The writers stop once the readers are done.
        readers.wait()
        stop.update { $0 = true }
        writers.wait()
        #expect(failures.value.isEmpty, "\(failures.value)")
        // The top-N queries streamed their documents through the shared cache: it served readers.
        let stats = try setup.request(#"{"op":"stats"}"#)
        let hits = (stats["cache"] as? [String: Any])?["hits"] as? Int ?? 0
        #expect(hits > 100, "document cache hits during the run: \(hits) (\(stats))")

        // Replay the commits in seq order; check each answer against the state at its seq.
        let history = commits.value.sorted { $0.seq < $1.seq }
        let sorted = answers.value.sorted { $0.seq < $1.seq }
        #expect(sorted.count >= 1200)
        #expect(Set(history.map(\.seq)).count == history.count, "every commit has a seq of its own")
        var state: [String: (g: Int, v: Int)] = [:]
        var next = 0
        var checked = 0
        var seqsSeen = Set<Int>()
        for a in sorted {
            while next < history.count && history[next].seq <= a.seq {
                for w in history[next].writes { state[w.id] = w.data }
                next += 1
            }
            seqsSeen.insert(a.seq)
            let mismatch = Self.check(a, against: state)
            #expect(mismatch == nil, "at seq \(a.seq): \(mismatch ?? "")")
            if mismatch != nil { break }
            checked += 1
        }
        #expect(checked == sorted.count)
        // The answers saw the collection move: many distinct seqs, not one.
        #expect(seqsSeen.count > 50, "answers came from \(seqsSeen.count) distinct seqs")
    }

    /// Nil when `answer` is exactly what the model says; else what differs.
    static func check(_ answer: Answer, against state: [String: (g: Int, v: Int)]) -> String? {
        switch answer {
        case .top(let g, let limit, let ids, let values, _):
            // orderBy v desc, then the document name descending (the implicit order follows the last direction).
            let expected = state.filter { $0.value.g == g }
                .sorted { $0.value.v != $1.value.v ? $0.value.v > $1.value.v : $0.key > $1.key }
                .prefix(limit)
            guard expected.map(\.key) == ids, expected.map(\.value.v) == values else {
                return "top \(limit) of g=\(g): got \(Array(zip(ids, values))), the model has \(expected.map { ($0.key, $0.value.v) })"
            }
        case .atLeast(let v, let ids, _):
            let expected = state.filter { $0.value.v >= v }
                .sorted { $0.value.v != $1.value.v ? $0.value.v < $1.value.v : $0.key < $1.key }
                .map(\.key)
            guard expected == ids else { return "v >= \(v): got \(ids), the model has \(expected)" }
        case .count(let g, let count, _):
            let expected = state.values.filter { $0.g == g }.count
            guard expected == count else { return "count of g=\(g): got \(count), the model has \(expected)" }
        case .sum(let g, let sum, _):
            let expected = state.values.filter { $0.g == g }.reduce(0) { $0 + $1.v }
            guard expected == sum else { return "sum of v for g=\(g): got \(sum), the model has \(expected)" }
        }
        return nil
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func seq(_ r: [String: Any]) throws -> Int {
        guard r["ok"] as? Bool == true, let s = r["seq"] as? Int else { throw Failure(description: "no seq in \(r)") }
        return s
    }

    static func docs(_ r: [String: Any]) throws -> [(id: String, v: Int)] {
        guard r["ok"] as? Bool == true, let docs = r["docs"] as? [[String: Any]] else { throw Failure(description: "no docs in \(r)") }
        return docs.map { d in
            (d["id"] as? String ?? "?", ((d["data"] as? [String: Any])?["v"] as? Int) ?? -1)
        }
    }
}
