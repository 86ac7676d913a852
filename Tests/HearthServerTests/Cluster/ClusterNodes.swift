import Foundation
import HearthTesting

/// Several real `hearthd --postgres` processes over one fresh schema of the test cluster, each on a port of
/// its own that it advertises to the others (`--advertise`), with a short lease so failovers are quick.
final class ClusterNodes: @unchecked Sendable {
    let schema = PostgresTestCluster.freshSchema()
    let ports: [Int]
    let leaseMs: Int
    /// The database: the shared test cluster's, or a private one's.
    let dsn: String
    private(set) var nodes: [DaemonProcess] = []

    init(count: Int = 3, leaseMs: Int = 1500, dsn: String? = nil) throws {
        self.leaseMs = leaseMs
        self.dsn = try dsn ?? PostgresTestCluster.dsn()
        ports = try (0..<count).map { _ in try Self.freePort() }
        for i in 0..<count { nodes.append(try DaemonProcess(extraArgs: try args(i))) }
    }

    deinit {
        for n in nodes where n.isRunning { n.kill9() }
        if dsn == (try? PostgresTestCluster.dsn()) { try? PostgresTestCluster.dropSchema(schema) }
    }

    func args(_ i: Int) throws -> [String] {
        ["--postgres", dsn, "--postgres-schema", schema, "--port", "\(ports[i])",
         "--advertise", "127.0.0.1:\(ports[i])", "--node-name", "n\(i)", "--lease-ms", "\(leaseMs)",
         "--subscriber-budget", "67108864"]
    }

    subscript(i: Int) -> DaemonProcess { nodes[i] }

    /// The node's `stats.cluster`.
    func cluster(_ i: Int) throws -> [String: Any] {
        let c = try nodes[i].connect()
        return try c.request(#"{"op":"stats"}"#)["cluster"] as? [String: Any] ?? [:]
    }

    /// The committer's index, once one node says it is the committer and every running node follows it
    /// (polled: each poll is a round trip to every node).
    func committer(among: Set<Int>? = nil, timeout: Double = 30) throws -> Int {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            let running = nodes.indices.filter { nodes[$0].isRunning && among?.contains($0) != false }
            let views = try running.map { (i: $0, c: try cluster($0)) }
            if let leader = views.first(where: { $0.c["role"] as? String == "committer" }),
               views.allSatisfy({ $0.i == leader.i || $0.c["committer"] as? String == "n\(leader.i)" }) {
                return leader.i
            }
            usleep(20_000)
        }
        throw TestFailure("no committer that every node follows within \(timeout) s: \(try nodes.indices.filter { nodes[$0].isRunning && among?.contains($0) != false }.map { try cluster($0) })")
    }

    /// Waits until node `i` has published `seq` (`hello` with `minSeq` is answered once it has).
    func await(_ seq: Int, on i: Int) throws {
        let r = try nodes[i].connect().request(#"{"op":"hello","minSeq":\#(seq)}"#, timeout: 30)
        guard r.isOK else { throw TestFailure("n\(i) did not reach seq \(seq): \(r)") }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw TestFailure("cannot find a free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}

/// A listener's snapshots as a client keeps them: the result after each snapshot, and each snapshot's seq
/// and changes as the daemon sent them (canonical JSON, to compare across nodes).
struct ListenedQuery {
    /// Documents in result order: path and canonical JSON of the whole document.
    var rows: [(path: String, json: String)] = []
    var events: [(seq: Int, changes: String)] = []
    var states: [(seq: Int, rows: [String])] = []
    var firstSeq = 0

    /// Applies one snapshot line (`type` snapshot); throws when an index is out of range.
    mutating func apply(_ event: [String: Any]) throws {
        let seq = event["seq"] as? Int ?? -1
        let changes = event["changes"] as? [[String: Any]] ?? []
        if event["initial"] as? Bool == true { firstSeq = seq; rows = [] }
        for change in changes {
            let doc = change["doc"] as? [String: Any] ?? [:]
            let path = doc["path"] as? String ?? ""
            let json = canonical(doc)
            let old = change["oldIndex"] as? Int ?? -1, new = change["newIndex"] as? Int ?? -1
            switch change["type"] as? String {
            case "added":
                guard new >= 0, new <= rows.count else { throw TestFailure("added at \(new) of \(rows.count) at seq \(seq)") }
                rows.insert((path, json), at: new)
            case "removed":
                guard old >= 0, old < rows.count, rows[old].path == path else { throw TestFailure("removed \(path) at \(old) at seq \(seq): \(rows.map(\.path))") }
                rows.remove(at: old)
            default:
                guard old >= 0, old < rows.count, rows[old].path == path, new >= 0, new < rows.count + 1 else {
                    throw TestFailure("modified \(path) from \(old) to \(new) at seq \(seq): \(rows.map(\.path))")
                }
                rows.remove(at: old)
                rows.insert((path, json), at: new)
            }
        }
        events.append((seq, canonical(changes)))
        states.append((seq, rows.map(\.json)))
    }
}

/// JSON with sorted keys: equal values, equal text.
func canonical(_ value: Any) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else { return "\(value)" }
    return String(decoding: data, as: UTF8.self)
}

/// Writers under load: each writes its own document (`load/wN`, `{"v":i}` with i going up) through a random
/// node of those allowed, again and again, and remembers the last value acknowledged. A failed write (the
/// node is down, the committer changes) is not acknowledged, and the writer goes on with the next value.
final class ClusterLoad: @unchecked Sendable {
    let acked = Locked<[Int: Int]>([:])
    let acknowledged = Locked(0)
    let failed = Locked(0)
    let allowed: Locked<Set<Int>>
    private let stopped = Locked(false)
    private let group = DispatchGroup()

    init(_ c: ClusterNodes, writers: Int = 4) {
        allowed = Locked(Set(c.nodes.indices))
        for w in 0..<writers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                var conns: [Int: WireClient] = [:]
                var i = 0
                while !stopped.value {
                    i += 1
                    guard let node = allowed.value.randomElement() else { usleep(10_000); continue }
                    do {
                        let conn = try conns[node] ?? c[node].connect()
                        conns[node] = conn
                        let r = try conn.request(#"{"op":"set","path":"load/w\#(w)","data":{"v":\#(i)}}"#, timeout: 10)
                        if r.isOK {
                            acked.update { $0[w] = i }
                            acknowledged.update { $0 += 1 }
                        } else {
                            failed.update { $0 += 1 }
                            usleep(20_000)
                        }
                    } catch {
                        conns[node] = nil
                        failed.update { $0 += 1 }
                        usleep(20_000)
                    }
                }
            }
        }
    }

    /// Waits until `n` more writes are acknowledged than when called (a barrier on progress).
    func waitForProgress(_ n: Int, timeout: Double = 60) throws {
        let target = acknowledged.value + n
        let deadline = Date(timeIntervalSinceNow: timeout)
        while acknowledged.value < target {
            guard Date() < deadline else { throw TestFailure("writes stalled: \(acknowledged.value) of \(target) acknowledged, \(failed.value) failed") }
            usleep(5_000)
        }
    }

    func stop() {
        stopped.update { $0 = true }
        group.wait()
    }
}
