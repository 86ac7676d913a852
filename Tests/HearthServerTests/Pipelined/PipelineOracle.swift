import Foundation

/// A model of a tiny collection and the checker of everything a set of pipelining connections saw.
///
/// `PipelineWorkload` makes random bursts of lines (sets, creates, deletes, increments, multi-write commits,
/// listens on shared queries with and without limits, document listens, queries, unlistens of subscriptions
/// the connection will own); a driver (in-process or over TCP) sends them, several lines per write, and feeds
/// every line each connection received to `PipelineOracle`. At the end the oracle rebuilds the database after
/// every acknowledged commit, in seq order, and checks:
///
/// - responses come in request order, one per request, and every seq from 1 to the last is acknowledged;
/// - every query result and every listener snapshot equals the query evaluated on the model at the seq it
///   carries, order included (a hand-written evaluator, independent of the server's);
/// - every change's indices are valid for the view it applies to (removed/modified name the row at
///   `oldIndex`, added/modified land at `newIndex`), and `size` is the view's size;
/// - a listener gets a snapshot for every commit that changes its result (none skipped), seqs increase,
///   and its last view is the result at the final seq; nothing arrives for a subscription after its
///   unlisten is answered;
/// - a connection reads its own writes: a read's seq is at least that of every write it sent before.
struct PipelineOracle {
    typealias Doc = [String: Int]
    typealias State = [String: Doc]

    struct Spec: Sendable {
        let name: String
        let json: String
        let evaluate: @Sendable (State) -> [(String, Doc)]
    }

    /// The queries listeners and reads use (listeners on equal queries share a view on the server).
    static let queries: [Spec] = [
        Spec(name: "all", json: #"{"collection":"c"}"#) { s in
            s.keys.sorted().map { ($0, s[$0]!) }
        },
        Spec(name: "g==1", json: #"{"collection":"c","where":[["g","==",1]]}"#) { s in
            s.keys.sorted().filter { s[$0]!["g"] == 1 }.map { ($0, s[$0]!) }
        },
        Spec(name: "top3", json: #"{"collection":"c","orderBy":[["n","desc"]],"limit":3}"#) { s in
            Array(s.keys.filter { s[$0]!["n"] != nil }.sorted { a, b in
                let x = s[a]!["n"]!, y = s[b]!["n"]!
                return x != y ? x > y : a > b
            }.prefix(3).map { ($0, s[$0]!) })
        },
        Spec(name: "n>=3 first2", json: #"{"collection":"c","where":[["n",">=",3]],"orderBy":[["n","asc"]],"limit":2}"#) { s in
            Array(s.keys.filter { (s[$0]!["n"] ?? Int.min) >= 3 }.sorted { a, b in
                let x = s[a]!["n"]!, y = s[b]!["n"]!
                return x != y ? x < y : a < b
            }.prefix(2).map { ($0, s[$0]!) })
        },
    ]

    static let paths = (0..<6).map { "c/d\($0)" }

    /// What a request line does, as the oracle needs to know it.
    enum Sent {
        case write(id: String, ops: [WriteOp])
        case query(id: String, spec: Int)
        case listenQuery(id: String, spec: Int, sub: String)
        case listenDoc(id: String, path: String, sub: String)
        case unlisten(id: String, sub: String)
        case ping(id: String)

        var id: String {
            switch self {
            case .write(let id, _), .query(let id, _), .listenQuery(let id, _, _), .listenDoc(let id, _, _),
                 .unlisten(let id, _), .ping(let id): return id
            }
        }
    }

    enum WriteOp {
        case set(String, Doc), create(String, Doc), delete(String), increment(String, Int)
    }

    /// What one connection sent and received; touched by one thread at a time (the driver's, then the
    /// checker's after a join).
    final class Connection: @unchecked Sendable {
        var sent: [Sent] = []
        var received: [[String: Any]] = []
    }

    var connections: [Connection]
    var failures: [String] = []
    /// What the last `check` covered: acknowledged commits, refused writes, query results, listener
    /// snapshots, subscriptions.
    private(set) var counts = (commits: 0, refused: 0, queries: 0, snapshots: 0, listeners: 0)

    init(connections: Int) { self.connections = (0..<connections).map { _ in Connection() } }

    mutating func fail(_ s: String) { if failures.count < 20 { failures.append(s) } }

    // MARK: Checking

    struct Ack { let seq: Int; let ops: [WriteOp] }

    /// Runs every check; the failures name what went wrong (empty when everything held).
    mutating func check() -> [String] {
        // 1. Pair responses with requests; collect acknowledged commits.
        var acks: [Int: [WriteOp]] = [:]
        struct Read { let conn: Int; let sent: Sent; let response: [String: Any]; let index: Int; let minSeq: Int }
        var reads: [Read] = []
        for (ci, c) in connections.enumerated() {
            let responses = c.received.enumerated().filter { $0.element["ok"] != nil }
            guard responses.count == c.sent.count else {
                fail("connection \(ci): \(c.sent.count) requests, \(responses.count) responses"); continue
            }
            var ownSeq = 0
            for (k, (index, r)) in responses.enumerated() {
                let s = c.sent[k]
                guard (r["id"] as? String) == s.id else { fail("connection \(ci): response \(k) has id \(r["id"] ?? "none"), expected \(s.id)"); continue }
                switch s {
                case .write(_, let ops):
                    guard r["ok"] as? Bool == true else { counts.refused += 1; continue }   // refused (precondition): changes nothing
                    let seq = r["seq"] as! Int
                    if acks[seq] != nil { fail("seq \(seq) acknowledged twice") }
                    acks[seq] = ops
                    ownSeq = max(ownSeq, seq)
                default:
                    guard r["ok"] as? Bool == true else { fail("connection \(ci): \(s.id) failed: \(r)"); continue }
                    reads.append(Read(conn: ci, sent: s, response: r, index: index, minSeq: ownSeq))
                }
            }
        }
        let last = acks.keys.max() ?? 0
        counts.commits = acks.count
        for s in 1...max(1, last) where last > 0 && acks[s] == nil { fail("seq \(s) was never acknowledged") }

        // 2. The model after every seq.
        var states: [State] = [[:]]
        var state: State = [:]
        if last > 0 {
            for s in 1...last {
                for op in acks[s] ?? [] {
                    switch op {
                    case .set(let p, let d), .create(let p, let d): state[p] = d
                    case .delete(let p): state[p] = nil
                    case .increment(let p, let k): state[p]?["n", default: 0] += k
                    }
                }
                states.append(state)
            }
        }
        func at(_ seq: Int) -> State? {
            guard seq >= 0, seq < states.count else { return nil }
            return states[seq]
        }

        // 3. Query results.
        for r in reads {
            guard case .query(let id, let spec) = r.sent else { continue }
            let seq = r.response["seq"] as? Int ?? -1
            guard let st = at(seq) else { fail("\(id): seq \(seq) out of range"); continue }
            if seq < r.minSeq { fail("\(id): read at seq \(seq) before its own write at \(r.minSeq)") }
            let docs = (r.response["docs"] as? [[String: Any]] ?? []).map(Self.row)
            let want = Self.queries[spec].evaluate(st)
            counts.queries += 1
            if !Self.same(docs, want) { fail("\(id) \(Self.queries[spec].name) at seq \(seq): got \(Self.show(docs)), expected \(Self.show(want))") }
        }

        // 4. Listeners (each query's result at each seq computed once).
        var results: [[[(String, Doc)]?]] = Self.queries.map { _ in Array(repeating: nil, count: states.count) }
        for (ci, c) in connections.enumerated() {
            var listens: [String: (sent: Sent, minSeq: Int)] = [:]
            for r in reads where r.conn == ci {
                switch r.sent {
                case .listenQuery(_, _, let sub), .listenDoc(_, _, let sub):
                    if (r.response["sub"] as? String) != sub { fail("connection \(ci): listen \(r.sent.id) got sub \(r.response["sub"] ?? "none"), expected \(sub)") }
                    listens[sub] = (r.sent, r.minSeq)
                default: break
                }
            }
            var unlistenedAt: [String: Int] = [:]      // sub -> index of its unlisten response
            var responseIndex = 0
            for (i, line) in c.received.enumerated() where line["ok"] != nil {
                if responseIndex < c.sent.count, case .unlisten(_, let sub) = c.sent[responseIndex] { unlistenedAt[sub] = i }
                responseIndex += 1
            }
            var eventsBySub: [String: [(offset: Int, element: [String: Any])]] = [:]
            for (i, line) in c.received.enumerated() where line["ok"] == nil {
                eventsBySub[line["sub"] as? String ?? "", default: []].append((i, line))
            }
            for (sub, info) in listens {
                counts.listeners += 1
                let events = eventsBySub[sub] ?? []
                if let cut = unlistenedAt[sub], events.contains(where: { $0.offset > cut }) {
                    fail("connection \(ci) sub \(sub): an event after its unlisten was answered")
                }
                checkListener(ci, sub, info.sent, minSeq: info.minSeq, events: events.map(\.element),
                              ended: unlistenedAt[sub] != nil, states: states, results: &results)
            }
        }
        return failures
    }

    private mutating func checkListener(_ ci: Int, _ sub: String, _ sent: Sent, minSeq: Int, events: [[String: Any]],
                                        ended: Bool, states: [State], results: inout [[[(String, Doc)]?]]) {
        let label = "connection \(ci) sub \(sub) (\(sent.id))"
        guard let first = events.first else { fail("\(label): no first snapshot"); return }
        guard first["initial"] as? Bool == true else { fail("\(label): first snapshot not initial: \(first)"); return }
        if (first["seq"] as? Int ?? -1) < minSeq { fail("\(label): first snapshot at \(first["seq"] ?? "?") before its own write at \(minSeq)") }
        var lastSeq = -1
        counts.snapshots += events.count
        switch sent {
        case .listenDoc(_, let path, _):
            var current: Doc?
            for e in events {
                guard e["type"] as? String == "snapshot", let seq = e["seq"] as? Int, seq < states.count else { fail("\(label): bad event \(e)"); return }
                if seq <= lastSeq { fail("\(label): seq went from \(lastSeq) to \(seq)"); return }
                if lastSeq >= 0 {
                    for s in lastSeq..<seq where states[s][path] != current { fail("\(label): missed the change at seq \(s)"); return }
                }
                let doc = e["doc"] as? [String: Any]
                current = doc.map { Self.row($0).1 }
                if current != states[seq][path] { fail("\(label) at seq \(seq): got \(String(describing: current)), expected \(String(describing: states[seq][path]))"); return }
                lastSeq = seq
            }
            if !ended, lastSeq >= 0, current != states.last![path] { fail("\(label): ends at \(String(describing: current)), expected \(String(describing: states.last![path]))") }
        case .listenQuery(_, let spec, _):
            let q = Self.queries[spec]
            func result(_ seq: Int) -> [(String, Doc)] {
                if let r = results[spec][seq] { return r }
                let r = q.evaluate(states[seq])
                results[spec][seq] = r
                return r
            }
            var view: [(String, Doc)] = []
            for e in events {
                guard e["type"] as? String == "snapshot", let seq = e["seq"] as? Int, seq < states.count else { fail("\(label): bad event \(e)"); return }
                if seq <= lastSeq { fail("\(label): seq went from \(lastSeq) to \(seq)"); return }
                if lastSeq >= 0 {
                    for s in lastSeq..<seq where !Self.same(result(s), view) {
                        fail("\(label) \(q.name): missed the change at seq \(s) (snapshots at \(lastSeq) and \(seq))"); return
                    }
                }
                if e["reset"] as? Bool == true { view = [] }
                for ch in e["changes"] as? [[String: Any]] ?? [] {
                    let type = ch["type"] as? String ?? ""
                    let row = Self.row(ch["doc"] as? [String: Any] ?? [:])
                    let oldIndex = ch["oldIndex"] as? Int ?? -2, newIndex = ch["newIndex"] as? Int ?? -2
                    switch type {
                    case "removed", "modified":
                        guard oldIndex >= 0, oldIndex < view.count, view[oldIndex].0 == row.0 else {
                            fail("\(label) at seq \(seq): \(type) \(row.0) at oldIndex \(oldIndex) of \(Self.show(view))"); return
                        }
                        view.remove(at: oldIndex)
                        if type == "removed" { guard newIndex == -1 else { fail("\(label): removed with newIndex \(newIndex)"); return }; continue }
                    case "added":
                        guard oldIndex == -1 else { fail("\(label): added with oldIndex \(oldIndex)"); return }
                    default:
                        fail("\(label): change type \(type)"); return
                    }
                    guard newIndex >= 0, newIndex <= view.count else { fail("\(label) at seq \(seq): \(type) \(row.0) at newIndex \(newIndex) of \(view.count)"); return }
                    view.insert(row, at: newIndex)
                }
                if (e["size"] as? Int) != view.count { fail("\(label) at seq \(seq): size \(e["size"] ?? "none") but \(view.count) rows"); return }
                let want = result(seq)
                if !Self.same(view, want) { fail("\(label) \(q.name) at seq \(seq): has \(Self.show(view)), expected \(Self.show(want))"); return }
                lastSeq = seq
            }
            if !ended, !Self.same(view, result(states.count - 1)) {
                fail("\(label) \(q.name): ends with \(Self.show(view)) at seq \(lastSeq), expected \(Self.show(result(states.count - 1))) at seq \(states.count - 1)")
            }
        default:
            break
        }
    }

    static func row(_ doc: [String: Any]) -> (String, Doc) {
        let data = doc["data"] as? [String: Any] ?? [:]
        var d: Doc = [:]
        for (k, v) in data { if let i = v as? Int { d[k] = i } }
        return (doc["path"] as? String ?? "?", d)
    }

    static func same(_ a: [(String, Doc)], _ b: [(String, Doc)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    static func show(_ rows: [(String, Doc)]) -> String {
        let parts = rows.map { (path: String, doc: Doc) -> String in
            let fields = doc.keys.sorted().map { k in "\(k)=\(doc[k]!)" }.joined(separator: ",")
            return "\(path.dropFirst(2)){\(fields)}"
        }
        return "[" + parts.joined(separator: " ") + "]"
    }
}

/// Random bursts of pipelined lines for the oracle, reproducible from a seed.
struct PipelineWorkload {
    var rng: SplitMix
    /// Per connection: subscriptions it will own (in order), and the next subscription id it will get.
    private var subs: [[String]]
    private var nextSub: [Int]
    private var nextID: [Int]

    init(seed: UInt64, connections: Int) {
        rng = SplitMix(seed: seed)
        subs = Array(repeating: [], count: connections)
        nextSub = Array(repeating: 1, count: connections)
        nextID = Array(repeating: 0, count: connections)
    }

    private mutating func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
    private mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

    private mutating func doc() -> PipelineOracle.Doc { ["n": int(7), "g": int(3)] }

    private func json(_ d: PipelineOracle.Doc) -> String { "{\"n\":\(d["n"]!),\"g\":\(d["g"]!)}" }

    private mutating func writeOp() -> (PipelineOracle.WriteOp, String) {
        let p = pick(PipelineOracle.paths)
        switch int(10) {
        case 0..<4: let d = doc(); return (.set(p, d), #"{"op":"set","path":"\#(p)","data":\#(json(d))}"#)
        case 4..<5: let d = doc(); return (.create(p, d), #"{"op":"create","path":"\#(p)","data":\#(json(d))}"#)
        case 5..<7: return (.delete(p), #"{"op":"delete","path":"\#(p)"}"#)
        default:
            let k = int(5) - 2
            return (.increment(p, k), #"{"op":"update","path":"\#(p)","data":{"n":{"$increment":\#(k)}}}"#)
        }
    }

    /// A burst of 1 to 5 lines for connection `c`, as the oracle records them and as bytes to send.
    mutating func burst(for c: Int) -> [(PipelineOracle.Sent, String)] {
        var out: [(PipelineOracle.Sent, String)] = []
        for _ in 0..<(1 + int(5)) {
            nextID[c] += 1
            let id = "\(c)-\(nextID[c])"
            let roll = int(100)
            if roll < 40 {
                let (op, line) = writeOp()
                out.append((.write(id: id, ops: [op]), String(line.dropLast()) + #","id":"\#(id)"}"#))
            } else if roll < 52 {
                var ops: [PipelineOracle.WriteOp] = [], parts: [String] = []
                var used = Set<String>()
                for _ in 0..<(2 + int(3)) {
                    let (op, line) = writeOp()
                    let p: String
                    switch op { case .set(let x, _), .create(let x, _), .delete(let x), .increment(let x, _): p = x }
                    guard used.insert(p).inserted else { continue }
                    ops.append(op)
                    parts.append(line)
                }
                out.append((.write(id: id, ops: ops), #"{"op":"commit","writes":[\#(parts.joined(separator: ","))],"id":"\#(id)"}"#))
            } else if roll < 62 {
                let spec = int(PipelineOracle.queries.count)
                out.append((.query(id: id, spec: spec), String(PipelineOracle.queries[spec].json.dropLast()) + #","op":"query","id":"\#(id)"}"#))
            } else if roll < 80 {
                let sub = String(nextSub[c]); nextSub[c] += 1; subs[c].append(sub)
                let spec = int(PipelineOracle.queries.count)
                out.append((.listenQuery(id: id, spec: spec, sub: sub), #"{"op":"listen","query":\#(PipelineOracle.queries[spec].json),"id":"\#(id)"}"#))
            } else if roll < 88 {
                let sub = String(nextSub[c]); nextSub[c] += 1; subs[c].append(sub)
                let p = pick(PipelineOracle.paths)
                out.append((.listenDoc(id: id, path: p, sub: sub), #"{"op":"listen","path":"\#(p)","id":"\#(id)"}"#))
            } else if !subs[c].isEmpty {
                let sub = subs[c].remove(at: int(subs[c].count))
                out.append((.unlisten(id: id, sub: sub), #"{"op":"unlisten","sub":"\#(sub)","id":"\#(id)"}"#))
            } else {
                out.append((.ping(id: id), #"{"op":"ping","id":"\#(id)"}"#))
            }
        }
        return out
    }

    /// A final barrier line for connection `c`.
    mutating func ping(for c: Int) -> (PipelineOracle.Sent, String) {
        nextID[c] += 1
        let id = "\(c)-\(nextID[c])"
        return (.ping(id: id), #"{"op":"ping","id":"\#(id)"}"#)
    }
}

/// A small, fast, seedable generator (SplitMix64), so a failing seed can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Seeds for a randomized test: `count` by default, `HEARTH_PIPELINE_SEEDS=N` for more, and
/// `HEARTH_PIPELINE_SEED=S` to replay one.
func pipelineSeeds(default count: Int) -> [UInt64] {
    let env = ProcessInfo.processInfo.environment
    if let one = env["HEARTH_PIPELINE_SEED"].flatMap(UInt64.init) { return [one] }
    let n = env["HEARTH_PIPELINE_SEEDS"].flatMap(Int.init) ?? count
    return (0..<UInt64(n)).map { $0 &* 7919 &+ 1 }
}
