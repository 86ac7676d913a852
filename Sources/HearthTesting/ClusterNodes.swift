import Foundation

/// Several real `hearthd --postgres` processes over one fresh schema of the test cluster, each on a port of
/// its own that it advertises to the others (`--advertise`), with a short lease so failovers are quick.
public final class ClusterNodes: @unchecked Sendable {
    public let schema = PostgresTestCluster.freshSchema()
    public private(set) var ports: [Int]
    public let leaseMs: Int
    /// The database: the shared test cluster's, or a private one's.
    public let dsn: String
    public private(set) var nodes: [DaemonProcess] = []

    /// Flags every node gets besides the cluster's own (rules, keys).
    public let extraArgs: [String]

    public init(count: Int = 3, leaseMs: Int = 1500, dsn: String? = nil, extraArgs: [String] = []) throws {
        self.leaseMs = leaseMs
        self.extraArgs = extraArgs
        self.dsn = try dsn ?? PostgresTestCluster.dsn()
        ports = Array(repeating: 0, count: count)
        for i in 0..<count { nodes.append(try launch(i)) }
    }

    deinit {
        for n in nodes where n.isRunning { n.kill9() }
        if dsn == (try? PostgresTestCluster.dsn()) { try? PostgresTestCluster.dropSchema(schema) }
    }

    public func args(_ i: Int) throws -> [String] {
        ["--postgres", dsn, "--postgres-schema", schema, "--port", "\(ports[i])",
         "--advertise", "127.0.0.1:\(ports[i])", "--node-name", "n\(i)", "--lease-ms", "\(leaseMs)",
         "--subscriber-budget", "67108864"] + extraArgs
    }

    public subscript(i: Int) -> DaemonProcess { nodes[i] }

    /// Starts node `i` again (after a kill) as a new process on a new port it advertises: its old port may
    /// have been handed to another process meanwhile. Tried up to three times.
    public func restart(_ i: Int) throws { nodes[i] = try launch(i) }

    /// Node `i` on a free port (another one if a process takes it first), up to three tries.
    private func launch(_ i: Int) throws -> DaemonProcess {
        var failure: Error?
        for _ in 0..<3 {
            ports[i] = try Self.freePort()
            do { return try DaemonProcess(extraArgs: try args(i)) } catch { failure = error }
        }
        throw failure!
    }

    /// The node's `stats.cluster` (as the admin when the nodes have an admin key); where `stats` is refused
    /// (rules without an admin key), the role and committer its log last named.
    public func cluster(_ i: Int) throws -> [String: Any] {
        let c = try nodes[i].connect()
        if let k = extraArgs.firstIndex(of: "--admin-key-file"), k + 1 < extraArgs.count {
            let key = try String(contentsOfFile: extraArgs[k + 1], encoding: .utf8).trimmingCharacters(in: .newlines)
            _ = try c.call(["op": "hello", "adminKey": key])
        }
        if let cluster = try c.request(#"{"op":"stats"}"#)["cluster"] as? [String: Any] { return cluster }
        var role: [String: Any] = [:]
        for line in nodes[i].log.split(separator: "\n") {
            if line.contains(" is the committer, term ") {
                role = ["role": "committer", "committer": "n\(i)"]
            } else if let r = line.range(of: "following committer ") {
                role = ["role": "follower", "committer": String(line[r.upperBound...].prefix { $0 != " " })]
            } else if line.contains("lost the committer's lease") {
                role = ["role": "follower"]
            }
        }
        return role
    }

    /// The committer's index, once one node says it is the committer and every running node follows it.
    /// Between looks it waits until some daemon logs again (every node logs "cluster: …" when it is elected,
    /// becomes the committer, steps down, or follows a new committer).
    public func committer(among: Set<Int>? = nil, timeout: Double = 30) throws -> Int {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            let running = nodes.indices.filter { nodes[$0].isRunning && among?.contains($0) != false }
            let mark = DaemonProcess.loggedSoFar   // before asking, so no line is missed
            let views = try running.map { (i: $0, c: try cluster($0)) }
            if let leader = views.first(where: { $0.c["role"] as? String == "committer" }),
               views.allSatisfy({ $0.i == leader.i || $0.c["committer"] as? String == "n\(leader.i)" }) {
                return leader.i
            }
            DaemonProcess.waitForAnyLog(after: mark, until: deadline)
        }
        throw TestFailure("no committer that every node follows within \(timeout) s: \(try nodes.indices.filter { nodes[$0].isRunning && among?.contains($0) != false }.map { try cluster($0) })")
    }

    /// Waits until node `i` has published `seq` (`hello` with `minSeq` is answered once it has).
    public func await(_ seq: Int, on i: Int) throws {
        let r = try nodes[i].connect().request(#"{"op":"hello","minSeq":\#(seq)}"#, timeout: 30)
        guard r.isOK else { throw TestFailure("n\(i) did not reach seq \(seq): \(r)") }
    }

    public static func freePort() throws -> Int {
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

