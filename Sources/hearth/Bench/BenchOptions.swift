import HearthCrypto
import HearthLoop

/// Everything `hearth bench` was asked to do, validated. See `specs` for the flags and their defaults.
struct BenchOptions: Sendable {
    var scenario = "get"
    var host = "127.0.0.1"
    var port = 7411
    /// Every node `--host` named (comma-separated `HOST:PORT`): connections are spread over them in turn.
    var addresses: [(host: String, port: Int)] = [("127.0.0.1", 7411)]
    /// The next address a connection goes to.
    private let nextAddress = AddressTurn()
    /// Sent in a hello first on every connection (`--token-file`, `HEARTH_TOKEN`...).
    var credentials = Credentials.anonymous
    /// With `--tls`: every connection speaks TLS made from this context (to Redis too, with `listen --redis-port`).
    var tls: TLSContext?
    var connections = 50
    var pipeline = 1
    var threads = 1
    /// Measured seconds, and the hard time limit of the measured phase when `requests` is set.
    var duration = 10.0
    var requests: Int?
    var warmup = 1.0
    var docSize = 300
    var keys = 10_000
    /// Total requests per second across all connections (fixed-rate mode), nil for closed loop.
    var rate: Double?
    var readPercent = 80
    var collection = "bench"
    var json = false
    var serverPID: Int32?
    var allowRemote = false
    var skipLoad = false
    var seed: UInt64 = 1
    /// How long to wait for in-flight responses after sending stops.
    var drainSeconds = 5.0
    /// listen: subscriber connections, each with one listener.
    var listeners = 1000
    /// listen: run the same fan-out against Redis pub/sub on this port.
    var redisPort: Int?
    /// listen: the node the writers connect to (default: the `--host` nodes in turn, as the subscribers).
    var writerAddress: (host: String, port: Int)?
    /// listen: idle listeners only, held for --duration (memory per listener connection).
    var idle = false
    /// timeline: followers of the author, each with a live feed listener.
    var followers = 1000
    /// departments: number of departments joined at random.
    var departments = 100
    /// callrecords: call records loaded before measuring.
    var preload = 20_000

    var documents: BenchDocuments { BenchDocuments(collection: collection, keys: keys, docSize: docSize) }

    static let scenarioHelp = "One of: " + ScenarioTable.all.map(\.name).joined(separator: ", ") + "."

    static var discussion: String {
        var text = "Scenarios:\n"
        for s in ScenarioTable.all { text += HelpFormat.row(s.name, s.summary) }
        text += """

        Each connection keeps --pipeline requests in flight (closed loop), or with --rate sends at fixed
        intervals and measures latency from each request's scheduled time (no coordinated omission).
        The run stops after --requests measured requests or --duration seconds, whichever comes first.
        Only loopback hosts are allowed unless --allow-remote.
        """
        return text
    }

    static let specs: [OptionSpec] = [
        .value("connections", "n", "Connections (default: 50).", short: "c"),
        .value("pipeline", "n", "Requests in flight per connection (default: 1).", short: "P"),
        .value("threads", "n", "Client event loops, each on its own thread (default: 1).", short: "t"),
        .value("duration", "seconds", "Measured time (default: 10; the hard limit with --requests, default 60 then).", short: "d"),
        .value("requests", "n", "Stop after this many measured requests.", short: "n"),
        .value("warmup", "seconds", "Unmeasured time before measuring (default: 1; 0 with --requests)."),
        .value("rate", "per-second", "Fixed-rate mode: total requests per second across all connections."),
        .value("doc-size", "bytes", "Size of each document's data as JSON (default: 300; minimum \(BenchDocuments.minimumSize))."),
        .value("keys", "n", "Key space size (default: 10000)."),
        .value("read-percent", "0-100", "Share of gets in the mixed scenario (default: 80)."),
        .value("collection", "name", "Collection the documents live in (default: bench)."),
        .flag("no-load", "Skip loading the key space (it is already there)."),
        .value("seed", "n", "Seed of the key choice (default: 1)."),
        .value("server-pid", "pid", "The daemon's PID for CPU/RSS figures (default: found by its listening port)."),
        .flag("allow-remote", "Allow a non-loopback --host."),
        .flag("json", "Print one JSON object with the results."),
        .value("listeners", "n", "listen: subscriber connections, one listener each (default: 1000)."),
        .value("writer-host", "host:port", "listen: the node the writers connect to (default: the --host nodes in turn): subscribers on other nodes measure commit -> delivery across nodes."),
        .value("redis-port", "port", "listen: run the same fan-out against Redis pub/sub on this loopback port (over TLS with --tls)."),
        .flag("idle", "listen: only open idle listeners and hold them for --duration (memory per listener)."),
        .value("followers", "n", "timeline: followers of the author, one feed listener each (default: 1000)."),
        .value("departments", "n", "departments: departments to join (default: 100; users: --keys)."),
        .value("preload", "n", "callrecords: call records loaded before measuring (default: 20000)."),
    ] + OptionSpec.connection.filter { $0.name != "timeout" }.map { spec in
        // The bench's connections are opened by the event loop, which takes addresses, not names.
        spec.name == "host" ? .value("host", "host", "Daemon address: an IP literal or localhost, with :PORT or not; several nodes of one database comma-separated, connections spread over them in turn (default: 127.0.0.1).") : spec
    }

    init(_ args: ParsedArguments) throws(UsageError) {
        scenario = args.positionals[0]
        guard ScenarioTable.find(scenario) != nil else {
            throw UsageError("Unknown scenario '\(scenario)'. \(BenchOptions.scenarioHelp)")
        }
        let connection = try ConnectionOptions(args)
        host = connection.host
        port = connection.port
        addresses = connection.addresses
        credentials = connection.credentials
        if let options = connection.tls {
            do { tls = try options.makeContext() } catch { throw UsageError(error.description) }
        }
        connections = try args.int("connections", default: 50, min: 1, max: 10_000)
        pipeline = try args.int("pipeline", default: 1, min: 1, max: 4096)
        threads = min(connections, try args.int("threads", default: 1, min: 1, max: 64))
        if args.string("requests") != nil { requests = try args.int("requests", default: 0, min: 1) }
        duration = try args.double("duration", default: requests == nil ? 10 : 60, min: 0.001, max: 7 * 86_400)!
        warmup = try args.double("warmup", default: requests == nil ? 1 : 0, max: 86_400)!
        rate = try args.double("rate", default: nil, min: 0.001)
        docSize = try args.int("doc-size", default: 300, min: BenchDocuments.minimumSize, max: 16 * 1024 * 1024)
        keys = try args.int("keys", default: 10_000, min: 1, max: 1_000_000_000)
        readPercent = try args.int("read-percent", default: 80, min: 0, max: 100)
        collection = args.string("collection") ?? "bench"
        guard !collection.isEmpty, !collection.contains("/"), !collection.contains("\""), !collection.contains("\\") else {
            throw UsageError("--collection must be a plain collection ID.")
        }
        seed = UInt64(try args.int("seed", default: 1, min: 0))
        if args.string("server-pid") != nil { serverPID = Int32(try args.int("server-pid", default: 0, min: 1, max: Int(Int32.max))) }
        json = args.flag("json")
        skipLoad = args.flag("no-load")
        allowRemote = args.flag("allow-remote")
        listeners = try args.int("listeners", default: 1000, min: 1, max: 100_000)
        if args.string("redis-port") != nil { redisPort = try args.int("redis-port", default: 6379, min: 1, max: 65535) }
        if let w = args.string("writer-host") { writerAddress = try ConnectionOptions.address(w, defaultPort: port) }
        idle = args.flag("idle")
        followers = try args.int("followers", default: 1000, min: 1, max: 999_999)
        departments = try args.int("departments", default: 100, min: 1, max: 1_000_000)
        preload = try args.int("preload", default: 20_000, min: 0, max: 100_000_000)
        if !allowRemote, let remote = addresses.first(where: { !BenchOptions.isLoopback($0.host) }) {
            throw UsageError("--host \(remote.host) is not a loopback address; pass --allow-remote to load a remote daemon.")
        }
    }

    /// Opens one connection to the daemon: TCP, then the TLS handshake with `--tls`.
    /// Opens a connection to the daemon (or to `port`) with TLS when `--tls`, and says hello with the run's
    /// credentials (or `credentials`, e.g. none for Redis) before handing it over.
    func connect(on loop: EventLoop, port: Int? = nil, to address: (host: String, port: Int)? = nil, credentials: Credentials? = nil,
                 _ done: @escaping (Result<TCPConnection, BenchConnectFailure>) -> Void) {
        let to: (host: String, port: Int) = address ?? port.map { (host, $0) } ?? nextAddress.take(addresses)
        BenchHello.connect(loop, host: to.host, port: to.port, credentials: credentials ?? self.credentials, tls: tls, done)
    }

    /// What the report names: `host:port`, or every node.
    var target: String { addresses.map { "\($0.host):\($0.port)" }.joined(separator: ",") }

    /// 127.0.0.0/8, ::1 and localhost.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// Hands out addresses in turn (shared by the copies of the options the bench's threads hold).
final class AddressTurn: Sendable {
    private let next = Guarded(0)

    func take(_ addresses: [(host: String, port: Int)]) -> (host: String, port: Int) {
        next.withLock { n in
            defer { n += 1 }
            return addresses[n % addresses.count]
        }
    }
}
