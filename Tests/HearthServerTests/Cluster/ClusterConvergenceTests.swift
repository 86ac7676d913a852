import Foundation
import HearthTesting
import Testing

extension ClusterSuites {

    /// Three real nodes over one PostgreSQL schema: random commits on random nodes (every write sent to a
    /// follower goes to the committer), random listeners on every node, and then: every snapshot of every
    /// listener is its query's result at the snapshot's seq, the same query's `(seq, changes)` stream is the same
    /// on every node, every acknowledged write is in the state at its seq, and a listener resumes on another node
    /// without a gap or a duplicate.
    @Suite(.serialized) struct ClusterConvergenceTests {
        /// A listened query, and what it must return from the documents of the collection (canonical JSON by path).
        struct Case: Sendable {
            let name: String
            let query: String
            let expected: @Sendable ([String: [String: Any]]) -> [String]
        }

        static func ordered(_ docs: [String: [String: Any]], where keep: ([String: Any]) -> Bool = { _ in true },
                            byN ascending: Bool?, limit: Int? = nil) -> [String] {
            let kept = docs.filter { keep(($0.value["data"] as? [String: Any]) ?? [:]) }
            let sorted = kept.sorted { a, b in
                guard let ascending else { return a.key < b.key }
                let na = (a.value["data"] as? [String: Any])?["n"] as? Int ?? 0, nb = (b.value["data"] as? [String: Any])?["n"] as? Int ?? 0
                if na != nb { return ascending ? na < nb : na > nb }
                return ascending ? a.key < b.key : a.key > b.key   // ties by name, in the last order's direction
            }
            let rows = sorted.map { canonical($0.value) }
            return limit.map { Array(rows.prefix($0)) } ?? rows
        }

        static let cases: [Case] = [
            Case(name: "all", query: #"{"collection":"c"}"#) { ordered($0, byN: nil) },
            Case(name: "g == 1", query: #"{"collection":"c","where":[["g","==",1]]}"#) {
                ordered($0, where: { $0["g"] as? Int == 1 }, byN: nil)
            },
            Case(name: "n >= 10 by n, limit 3", query: #"{"collection":"c","where":[["n",">=",10]],"orderBy":[["n","asc"]],"limit":3}"#) {
                ordered($0, where: { ($0["n"] as? Int ?? -1) >= 10 }, byN: true, limit: 3)
            },
            Case(name: "by n desc, limit 4", query: #"{"collection":"c","orderBy":[["n","desc"]],"limit":4}"#) {
                ordered($0, byN: false, limit: 4)
            },
        ]

        /// An acknowledged write: the seq it got, the document, and its update time (nil: deleted).
        struct Ack { let seq: Int; let path: String; let updateTime: String? }

        @Test func randomCommitsOnRandomNodesReachEveryListenerIdentically() throws {
            let c = try ClusterNodes()
            _ = try c.committer()
            // Every query listened to on every node, before any write.
            var listeners: [(node: Int, kase: Int, conn: WireClient, state: ListenedQuery)] = []
            for node in 0..<3 {
                for (k, kase) in Self.cases.enumerated() {
                    let conn = try c[node].connect()
                    try conn.send(#"{"op":"listen","id":"L","query":\#(kase.query)}"#)
                    #expect(try conn.readObject().isOK)
                    var state = ListenedQuery()
                    try state.apply(try conn.readObject())
                    listeners.append((node, k, conn, state))
                }
            }

            let acks = Locked<[Ack]>([])
            let failures = Locked<[String]>([])
            let group = DispatchGroup()
            for w in 0..<3 {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    do {
                        let conns = try (0..<3).map { try c[$0].connect() }
                        var rng = SystemRandomNumberGenerator()
                        for _ in 0..<90 {
                            let conn = conns[Int.random(in: 0..<3, using: &rng)]
                            let d = "c/d\(Int.random(in: 0..<12, using: &rng))", e = "c/d\(Int.random(in: 0..<12, using: &rng))"
                            let data = #"{"n":\#(Int.random(in: 0...20, using: &rng)),"g":\#(Int.random(in: 0...2, using: &rng)),"w":\#(w)}"#
                            let roll = Int.random(in: 0..<100, using: &rng)
                            let line: String
                            switch roll {
                            case 0..<40: line = #"{"op":"set","path":"\#(d)","data":\#(data)}"#
                            case 40..<60: line = #"{"op":"update","path":"\#(d)","data":{"n":{"$increment":1}}}"#
                            case 60..<72: line = #"{"op":"delete","path":"\#(d)"}"#
                            default:
                                line = #"{"op":"commit","writes":[{"op":"set","path":"\#(d)","data":\#(data)},{"op":"delete","path":"\#(e)"}]}"#
                            }
                            let r = try conn.request(line, timeout: 30)
                            guard r.isOK else {
                                if r.errorCode != "NOT_FOUND" { failures.update { $0.append("\(line): \(r)") } }
                                continue
                            }
                            let seq = r["seq"] as? Int ?? -1
                            if roll < 60 {
                                acks.update { $0.append(Ack(seq: seq, path: d, updateTime: r["updateTime"] as? String)) }
                            } else if roll < 72 {
                                acks.update { $0.append(Ack(seq: seq, path: d, updateTime: nil)) }
                            } else if d != e {
                                let results = r["results"] as? [[String: Any]] ?? []
                                acks.update { $0.append(Ack(seq: seq, path: d, updateTime: results.first?["updateTime"] as? String)) }
                                acks.update { $0.append(Ack(seq: seq, path: e, updateTime: nil)) }
                            }
                        }
                    } catch {
                        failures.update { $0.append("writer \(w): \(error)") }
                    }
                }
            }
            group.wait()
            #expect(failures.value.isEmpty, "\(failures.value)")
            let committer = try c.committer()
            let last = try c[committer].connect().request(#"{"op":"ping"}"#)["seq"] as? Int ?? 0
            #expect(acks.value.count > 100, "writes acknowledged: \(acks.value.count)")

            // Barrier: a hello waiting for the last seq, answered after every snapshot up to it.
            for i in listeners.indices {
                try listeners[i].conn.send(#"{"op":"hello","id":"B","minSeq":\#(last)}"#)
                while true {
                    let line = try listeners[i].conn.readObject(timeout: 30)
                    if line["id"] as? String == "B" { #expect(line.isOK, "\(line)"); break }
                    #expect(line["type"] as? String == "snapshot", "\(line)")
                    try listeners[i].state.apply(line)
                }
            }

            // The model: the whole collection as node 0's listener saw it after each of its snapshots.
            let model = listeners.first { $0.node == 0 && $0.kase == 0 }!.state.states.map { state in
                (seq: state.seq, docs: Dictionary(uniqueKeysWithValues: state.rows.map { json -> (String, [String: Any]) in
                    let doc = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] ?? [:]
                    return (doc["path"] as? String ?? "", doc)
                }))
            }
            func docs(at seq: Int) -> [String: [String: Any]] { model.last { $0.seq <= seq }?.docs ?? [:] }

            // Every snapshot of every listener is its query at its seq.
            var checked = 0
            for l in listeners {
                for state in l.state.states {
                    let expected = Self.cases[l.kase].expected(docs(at: state.seq))
                    #expect(state.rows == expected, "n\(l.node) \(Self.cases[l.kase].name) at seq \(state.seq)")
                    checked += 1
                }
            }
            // The same query's stream is the same on every node (after the latest first snapshot).
            for k in Self.cases.indices {
                let streams = listeners.filter { $0.kase == k }
                let from = streams.map(\.state.firstSeq).max() ?? 0
                let texts = streams.map { s in s.state.events.filter { $0.seq > from }.map { "\($0.seq) \($0.changes)" } }
                #expect(texts.allSatisfy { $0 == texts[0] }, "\(Self.cases[k].name): the streams differ between nodes")
                #expect(!texts[0].isEmpty)
            }
            // Every acknowledged write is in the state at its seq.
            for ack in acks.value {
                let doc = docs(at: ack.seq)[ack.path]
                if let t = ack.updateTime {
                    #expect(doc?["updateTime"] as? String == t, "\(ack.path) at seq \(ack.seq)")
                } else {
                    #expect(doc == nil, "\(ack.path) deleted at seq \(ack.seq)")
                }
            }
            // And every node answers the queries as the listeners hold them.
            for node in 0..<3 {
                let conn = try c[node].connect()
                for kase in Self.cases {
                    let r = try conn.request(#"{"op":"query",\#(kase.query.dropFirst())"#)
                    #expect(r["seq"] as? Int == last, "n\(node): \(r)")
                    #expect((r["docs"] as? [[String: Any]] ?? []).map { canonical($0) } == kase.expected(docs(at: last)), "n\(node) \(kase.name)")
                }
            }
            print("cluster convergence: \(acks.value.count) acknowledged writes through 3 nodes to seq \(last), \(checked) snapshots checked on 12 listeners")
        }

        @Test func aListenerResumesOnAnotherNodeWithoutGapOrDuplicate() throws {
            let c = try ClusterNodes()
            let committer = try c.committer()
            let first = (committer + 1) % 3, second = (committer + 2) % 3
            let writers = try (0..<3).map { try c[$0].connect() }
            for i in 0..<20 {
                #expect(try writers[i % 3].request(#"{"op":"set","path":"r/d\#(i)","data":{"n":\#(i)}}"#).isOK)
            }
            let listener = try c[first].connect()
            try listener.send(#"{"op":"listen","id":"L","query":{"collection":"r","orderBy":[["n","desc"]],"limit":8}}"#)
            #expect(try listener.readObject().isOK)
            var state = ListenedQuery()
            try state.apply(try listener.readObject())
            for i in 0..<15 {
                #expect(try writers[i % 3].request(#"{"op":"update","path":"r/d\#(i)","data":{"n":{"$increment":\#(10 + i)}}}"#).isOK)
            }
            var seen = try writers[committer].request(#"{"op":"ping"}"#)["seq"] as? Int ?? 0
            try listener.send(#"{"op":"hello","id":"B","minSeq":\#(seen)}"#)
            while true {
                let line = try listener.readObject()
                if line["id"] as? String == "B" { break }
                try state.apply(line)
            }
            seen = state.events.last?.seq ?? seen
            listener.shutdownWrite()

            // Meanwhile: more commits, through every node.
            for i in 0..<20 {
                let w = writers[i % 3]
                if i % 4 == 0 {
                    #expect(try w.request(#"{"op":"delete","path":"r/d\#(19 - i)"}"#).isOK)
                } else {
                    #expect(try w.request(#"{"op":"set","path":"r/e\#(i)","data":{"n":\#(i * 3)}}"#).isOK)
                }
            }
            let last = try writers[committer].request(#"{"op":"ping"}"#)["seq"] as? Int ?? 0

            // The listener comes back on another node, resuming after the last seq it saw.
            let again = try c[second].connect()
            try again.send(#"{"op":"listen","id":"R","query":{"collection":"r","orderBy":[["n","desc"]],"limit":8},"resumeAfter":\#(seen)}"#)
            #expect(try again.readObject().isOK)
            let resumed = try again.readObject()
            #expect(resumed["initial"] as? Bool == false && resumed["reset"] as? Bool != true, "\(resumed)")
            #expect((resumed["seq"] as? Int ?? 0) > seen)
            try state.apply(resumed)
            try again.send(#"{"op":"hello","id":"B","minSeq":\#(last)}"#)
            while true {
                let line = try again.readObject()
                if line["id"] as? String == "B" { break }
                try state.apply(line)
            }
            let seqs = state.events.map(\.seq)
            #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "snapshot seqs go up without a repeat: \(seqs)")
            let now = try again.request(#"{"op":"query","collection":"r","orderBy":[["n","desc"]],"limit":8}"#)
            #expect(now["seq"] as? Int == last)
            #expect(state.rows.map(\.json) == (now["docs"] as? [[String: Any]] ?? []).map { canonical($0) })
        }

        /// A recursive delete sent to a follower runs on the committer: its progress lines come back through the
        /// follower, and its answer waits until the follower has published the deletes.
        @Test func aRecursiveDeleteThroughAFollowerRelaysItsProgress() throws {
            let c = try ClusterNodes()
            let k = try c.committer()
            let f = try c[(k + 1) % 3].connect()
            let sets = (0..<30).map { #"{"op":"set","path":"logs/l\#($0)","data":{"n":\#($0)}}"# }.joined(separator: ",")
            #expect(try f.request(#"{"op":"commit","writes":[\#(sets)]}"#).isOK)
            try f.send(#"{"op":"deleteRecursive","id":"D","path":"logs","batchSize":10,"progress":true}"#)
            var progress: [Int] = []
            var answer: [String: Any] = [:]
            while answer.isEmpty {
                let line = try f.readObject(timeout: 30)
                if line["type"] as? String == "progress" {
                    #expect(line["id"] as? String == "D")
                    progress.append(line["deleted"] as? Int ?? -1)
                } else {
                    answer = line
                }
            }
            #expect(answer["id"] as? String == "D" && answer["deleted"] as? Int == 30 && answer["seq"] is Int, "\(answer)")
            #expect(progress == [10, 20, 30], "\(progress)")
            #expect(try f.request(#"{"op":"count","collection":"logs"}"#)["count"] as? Int == 0, "read on the follower after the answer")
        }
    }
}
