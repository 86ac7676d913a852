#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything `hearthd` can be told on its command line. Defaults are the documented ones.
public struct ServerConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 7411
    public var dataDir = "./data"
    /// Longest accepted request line; a longer one is answered with RESOURCE_EXHAUSTED and discarded.
    public var maxLineBytes = 16 << 20
    /// Output above which the server stops reading a connection's requests until it drains.
    public var outputHighWater = 4 << 20
    /// Unsent output above which a subscriber's listeners stop sending lines and coalesce their changes.
    public var subscriberBudget = 1 << 20
    /// How long a subscriber may stay over its budget before it is sent RESOURCE_EXHAUSTED and closed.
    public var slowSubscriberTimeoutMs: UInt64 = 30_000
    /// How long a shutdown waits for in-flight commits and pending output.
    public var shutdownGraceMs: UInt64 = 5000
    /// Change-log retention for listeners resuming from an older seq.
    public var retentionSeconds: Int64 = 24 * 3600
    public var retentionBytes: Int64 = 256 << 20
    /// Bytes of recently read documents kept in memory (0: none).
    public var cacheBytes = 64 << 20
    /// Reader threads for reads that may be large (queries that can return or examine many documents,
    /// counts, aggregations, large getAll), each on its own read transaction, so none holds the loop.
    public var readers = ServerConfig.defaultReaders
    /// The largest response a read may produce; a larger result is refused with RESOURCE_EXHAUSTED (use
    /// `limit` and a cursor to page through it).
    public var maxResponseBytes = 64 << 20

    /// Connections served at once; more are answered with RESOURCE_EXHAUSTED and closed.
    public var maxConnections = 10_000
    /// Connections served at once from one client address (0: no limit of its own).
    public var maxConnectionsPerAddress = 2_000
    /// Who may do what: rules, tokens, the admin key, protected mode (docs/security.md).
    public var security = SecuritySettings()
    /// Bytes of unfinished request lines held across all connections.
    public var inputBudget = 256 << 20
    /// How long a request line may stay unfinished before the connection is closed (0: forever).
    public var lineTimeoutMs: UInt64 = 60_000
    /// How long a connection without listeners may stay silent before it is closed (0: forever, the
    /// default: pooled clients and subscribers are idle by design).
    public var idleTimeoutMs: UInt64 = 0

    /// TLS: certificate, key, optional client CA and port (see `TLSSettings`); nil serves plain text only.
    public var tls: TLSSettings?
    /// One node of several over a shared store (`--postgres`): its name, address and the committer's lease.
    public var cluster: ClusterSettings?

    var budgetLimits: ConnectionBudget.Limits {
        .init(maxConnections: maxConnections, maxPerAddress: maxConnectionsPerAddress, inputBytes: inputBudget,
              lineTimeoutMs: lineTimeoutMs, idleTimeoutMs: idleTimeoutMs)
    }

    /// The number of online cores, at least 2.
    public static var defaultReaders: Int { max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
    /// Disk space held back in `<data-dir>/RESERVE` and released when the disk fills, so deletes can still
    /// commit (0: no reserve).
    public var diskReserveBytes = 8 << 20
    /// Requests taking at least this long are logged as slow (0: none).
    public var slowRequestMicros: UInt64 = 0
    /// Serve Prometheus metrics over HTTP on this port (nil: not served; 0: a free port).
    public var metricsPort: Int?
    public var metricsHost = "127.0.0.1"
    /// Where `/metrics` is served, when `metricsPort` is set.
    public var metricsAddress: ListenAddress? {
        metricsPort.map { ListenAddress(host: metricsHost, port: $0, tls: false) }
    }
    /// How often the TTL sweeper looks for expired documents.
    public var ttlSweepIntervalMs: UInt64 = 60_000

    public init() {}
}

/// The version `hearthd --version` and the start-up line print.
public enum HearthVersion {
    public static let string = "0.1.0"
}
