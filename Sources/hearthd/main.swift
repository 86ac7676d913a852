// hearthd: the Hearth daemon. Composition root: parses flags, opens the embedded SQLite store, runs the server.
#if canImport(Glibc)
import Glibc
#endif
import CMalloc
import HearthModel
import HearthCheck
import HearthServer
import HearthStorage
import HearthStoragePostgres
import HearthStorageSQLite

let usage = """
usage: hearthd [options]

Serves Hearth's newline-delimited JSON protocol over TCP (see docs/protocol.md).

options:
  --host ADDR              address to listen on (default 127.0.0.1)
  --port N                 TCP port (default 7411; 0 picks a free one, printed on start)
  --data-dir DIR           where the SQLite store lives (default ./data; created if missing); the node's
                           own LOCK when the store is in PostgreSQL
  --postgres DSN           keep the store in PostgreSQL instead (a libpq connection string or postgresql://
                           URI; also $HEARTH_POSTGRES); tables are created when missing (docs/storage.md)
  --postgres-schema NAME   the PostgreSQL schema holding the tables (default hearth)
  --advertise HOST:PORT    with --postgres: where the other nodes reach this one to forward writes while it is
                           the committer (default: none, and then only it takes writes while it commits)
  --node-name NAME         with --postgres: this node's name in logs and in the committer's lease (default:
                           the --advertise address, else the host name and process ID)
  --lease-ms N             with --postgres: how long the committer's lease lasts unrenewed (default 5000); a
                           frozen committer is replaced after this long
  --max-line-bytes N       longest accepted request line (default 16777216)
  --output-high-water N    bytes of unsent output at which a connection's reading pauses (default 4194304)
  --retention-seconds N    change-log retention by age, for resuming listeners (default 86400)
  --retention-bytes N      change-log retention by size (default 268435456)
  --cache-mb N             memory for recently read documents, in MiB (default 64; 0 disables)
  --max-connections N      connections served at once (default 10000; capped by the open-file limit)
  --max-connections-per-address N
                           connections served at once from one client address (default 2000; 0: no limit)
  --input-budget N         bytes of unfinished request lines across all connections (default 268435456)
  --line-timeout-ms N      how long a request line may stay unfinished (not counting while the daemon holds
                           the connection's reading for its own requests) before its connection is closed
                           (default 60000; 0: forever)
  --idle-timeout-ms N      close connections without listeners that send nothing and take less than 64 KiB
                           of their output for N ms, and are owed no answer (default 0: never)
  --readers N              reader threads: queries, counts, aggregations, uncached gets (default: cores, at least 2)
  --max-response-bytes N   largest response a read may produce (default 67108864); larger: RESOURCE_EXHAUSTED
  --subscriber-budget N    unsent bytes above which a subscriber's listeners coalesce (default 1048576)
  --slow-subscriber-timeout-ms N
                           how long a subscriber may stay over budget before it is closed (default 30000)
  --shutdown-grace-ms N    how long SIGTERM/SIGINT wait for in-flight commits and output (default 5000)
  --disk-reserve-mb N      disk space held back in DIR/RESERVE so deletes still commit when the disk is
                           full (default 8; 0 keeps none)
  --tls-cert FILE          serve TLS: the PEM certificate chain (server certificate first); needs --tls-key
  --tls-key FILE           the certificate's PEM private key
  --tls-client-ca FILE     require client certificates signed by these PEM CAs (mutual TLS)
  --tls-port N             serve TLS on N and plain text on --port, which then listens on loopback only
                           (default: --port serves TLS, and nothing serves plain text)
  --tls-handshake-timeout MS
                           close a connection whose TLS handshake has not finished after MS ms (default 10000;
                           0: never)
  --rules FILE             Firestore Security Rules that judge every read, write, query and listener
                           (docs/security.md); SIGHUP and the rules op reload it
  --auth-secret-file FILE  verify HS256 tokens with the secret in FILE (at least 32 bytes)
  --auth-jwks FILE         verify RS256/ES256 tokens with the public keys of a JWKS document
  --auth-issuer ISS        tokens must carry this iss claim
  --auth-audience AUD      tokens must carry this aud claim
  --auth-clock-skew S      seconds of clock difference allowed for exp, nbf and iat (default 60)
  --admin-key-file FILE    a hello with the key in FILE (at least 32 bytes) is the admin: rules do not apply
  --max-auth-failures N    failed hellos an address may make per minute before its hellos are refused
                           (default 20; 0: no limit)
  --insecure-open          serve a non-loopback --host without --rules (everyone gets full access)
  --log-level LEVEL        debug, info, warn or error: the least severe lines logged (default info)
  --log-format FORMAT      text (default) or json: one JSON object per line with time, level, msg and fields
  --slow-ms N              log a warning for every request that takes N ms or more (default 0: none)
  --metrics-port N         serve Prometheus metrics over HTTP at /metrics on this port (default: none; 0 picks
                           a free one, printed on start)
  --metrics-host ADDR      address for --metrics-port (default 127.0.0.1)
  --ttl-sweep-ms N         how often the TTL sweeper looks for expired documents (default 60000)
  --check                  check the store first (as hearth check does); refuse to start if it is damaged
  --quiet                  log warnings and errors only (--log-level warn)
  --version                print the version and exit
  --help                   print this help and exit

Signals: SIGTERM and SIGINT stop accepting, finish in-flight commits, flush output and close the store.
SIGHUP logs that it arrived and reloads what can be reloaded (the TLS certificate, key and client CA: new
connections use them, open ones keep theirs; a file that does not load keeps the old ones); it never stops the
daemon.
One daemon per data directory: DIR/LOCK is locked while it runs, and a second one is refused.
"""

/// The log format, known before the other flags are read so that an error about them is in it too.
let logFormat: Logger.Format = {
    let all = Array(CommandLine.arguments.dropFirst())
    for (i, a) in all.enumerated() {
        if a.hasPrefix("--log-format=") { return Logger.Format(name: String(a.dropFirst(13))) ?? .text }
        if a == "--log-format", i + 1 < all.count { return Logger.Format(name: all[i + 1]) ?? .text }
    }
    return .text
}()

/// An error line on stderr, even with --quiet, with its time like every log line.
func report(_ message: String) {
    var line = Array(Logger.line(.error, message, [], format: logFormat, time: Logger.now()).utf8)
    _ = line.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    report(message)
    exit(2)
}

var config = ServerConfig()
var logLevel = Logger.Level.info
var checkFirst = false
// The PostgreSQL store, when chosen: the flag, else the environment.
var postgresDSN: String? = getenv("HEARTH_POSTGRES").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
var postgresSchema = PostgresStore.defaultSchema
var advertise: String?
var nodeName: String?
var leaseMs = ClusterSettings.defaultLeaseMs
// TLS flags, checked together once all flags are read.
var tlsCert: String?
var tlsKey: String?
var tlsClientCA: String?
var tlsPort: Int?
var tlsHandshakeTimeoutMs: UInt64 = 10_000
var args = CommandLine.arguments.dropFirst()[...]

func fileValue(_ flag: String, _ text: String?) -> String {
    guard let text, !text.isEmpty else { fail("\(flag) needs a file") }
    return text
}

func intValue(_ flag: String, _ text: String?, min: Int = 0) -> Int {
    guard let text, let v = Int(text), v >= min else { fail("\(flag) needs a whole number >= \(min)") }
    return v
}

while let arg = args.popFirst() {
    var name = arg
    var inline: String?
    if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
        name = String(arg[..<eq])
        inline = String(arg[arg.index(after: eq)...])
    }
    func value() -> String? { inline ?? args.popFirst() }
    switch name {
    case "--help", "-h": print(usage); exit(0)
    case "--version": print("hearthd \(HearthVersion.string)"); exit(0)
    case "--host": guard let v = value(), !v.isEmpty else { fail("--host needs an address") }; config.host = v
    case "--port":
        let p = intValue("--port", value())
        guard p <= 65535 else { fail("--port must be at most 65535") }
        config.port = p
    case "--data-dir": guard let v = value(), !v.isEmpty else { fail("--data-dir needs a directory") }; config.dataDir = v
    case "--postgres": guard let v = value(), !v.isEmpty else { fail("--postgres needs a libpq connection string") }; postgresDSN = v
    case "--postgres-schema":
        guard let v = value(), !v.isEmpty, v.utf8.count <= 63 else { fail("--postgres-schema needs a schema name of 1 to 63 bytes") }
        postgresSchema = v
    case "--advertise":
        guard let v = value(), let colon = v.lastIndex(of: ":"), let p = Int(v[v.index(after: colon)...]), p > 0, p <= 65535,
              colon != v.startIndex else { fail("--advertise needs HOST:PORT") }
        advertise = v
    case "--node-name": guard let v = value(), !v.isEmpty, v.utf8.count <= 200 else { fail("--node-name needs a name of 1 to 200 bytes") }; nodeName = v
    case "--lease-ms": leaseMs = intValue("--lease-ms", value(), min: 300)
    case "--max-line-bytes": config.maxLineBytes = intValue("--max-line-bytes", value(), min: 1024)
    case "--output-high-water": config.outputHighWater = intValue("--output-high-water", value(), min: 4096)
    case "--retention-seconds": config.retentionSeconds = Int64(intValue("--retention-seconds", value()))
    case "--retention-bytes": config.retentionBytes = Int64(intValue("--retention-bytes", value()))
    case "--cache-mb":
        let mb = intValue("--cache-mb", value())
        guard mb <= 1 << 20 else { fail("--cache-mb must be at most 1048576") }
        config.cacheBytes = mb << 20
    case "--max-connections": config.maxConnections = intValue("--max-connections", value(), min: 1)
    case "--max-connections-per-address": config.maxConnectionsPerAddress = intValue("--max-connections-per-address", value())
    case "--rules": config.security.rulesFile = fileValue("--rules", value())
    case "--auth-secret-file": config.security.authSecretFile = fileValue("--auth-secret-file", value())
    case "--auth-jwks": config.security.authJWKSFile = fileValue("--auth-jwks", value())
    case "--auth-issuer": guard let v = value(), !v.isEmpty else { fail("--auth-issuer needs the iss value") }; config.security.authIssuer = v
    case "--auth-audience": guard let v = value(), !v.isEmpty else { fail("--auth-audience needs the aud value") }; config.security.authAudience = v
    case "--auth-clock-skew": config.security.authClockSkewSeconds = Int64(intValue("--auth-clock-skew", value()))
    case "--admin-key-file": config.security.adminKeyFile = fileValue("--admin-key-file", value())
    case "--max-auth-failures": config.security.maxAuthFailuresPerMinute = intValue("--max-auth-failures", value())
    case "--insecure-open": config.security.insecureOpen = true
    case "--input-budget": config.inputBudget = intValue("--input-budget", value(), min: 65536)
    case "--line-timeout-ms": config.lineTimeoutMs = UInt64(intValue("--line-timeout-ms", value()))
    case "--idle-timeout-ms": config.idleTimeoutMs = UInt64(intValue("--idle-timeout-ms", value()))
    case "--readers":
        let n = intValue("--readers", value(), min: 1)
        guard n <= 256 else { fail("--readers must be at most 256") }
        config.readers = n
    case "--max-response-bytes": config.maxResponseBytes = intValue("--max-response-bytes", value(), min: 65536)
    case "--subscriber-budget": config.subscriberBudget = intValue("--subscriber-budget", value(), min: 1024)
    case "--slow-subscriber-timeout-ms": config.slowSubscriberTimeoutMs = UInt64(intValue("--slow-subscriber-timeout-ms", value(), min: 1))
    case "--shutdown-grace-ms": config.shutdownGraceMs = UInt64(intValue("--shutdown-grace-ms", value()))
    case "--disk-reserve-mb":
        let mb = intValue("--disk-reserve-mb", value())
        guard mb <= 1 << 20 else { fail("--disk-reserve-mb must be at most 1048576") }
        config.diskReserveBytes = mb << 20
    case "--log-level":
        let v = value() ?? ""
        guard let level = Logger.Level(name: v) else {
            fail("--log-level must be debug, info, warn or error (got \"\(v)\")")
        }
        logLevel = level
    case "--quiet", "-q": logLevel = .warn
    case "--log-format":
        let v = value() ?? ""
        guard Logger.Format(name: v) != nil else { fail("--log-format must be text or json (got \"\(v)\")") }
    case "--slow-ms": config.slowRequestMicros = UInt64(intValue("--slow-ms", value())) * 1000
    case "--metrics-port":
        let p = intValue("--metrics-port", value())
        guard p <= 65535 else { fail("--metrics-port must be at most 65535") }
        config.metricsPort = p
    case "--ttl-sweep-ms": config.ttlSweepIntervalMs = UInt64(intValue("--ttl-sweep-ms", value(), min: 10))
    case "--metrics-host": guard let v = value(), !v.isEmpty else { fail("--metrics-host needs an address") }; config.metricsHost = v
    case "--check": checkFirst = true
    case "--tls-cert": guard let v = value(), !v.isEmpty else { fail("--tls-cert needs a PEM file") }; tlsCert = v
    case "--tls-key": guard let v = value(), !v.isEmpty else { fail("--tls-key needs a PEM file") }; tlsKey = v
    case "--tls-client-ca": guard let v = value(), !v.isEmpty else { fail("--tls-client-ca needs a PEM file") }; tlsClientCA = v
    case "--tls-port":
        let p = intValue("--tls-port", value())
        guard p <= 65535 else { fail("--tls-port must be at most 65535") }
        tlsPort = p
    case "--tls-handshake-timeout": tlsHandshakeTimeoutMs = UInt64(intValue("--tls-handshake-timeout", value()))
    default: fail("unknown option \(arg) (see --help)")
    }
}

switch (tlsCert, tlsKey) {
case let (cert?, key?):
    if let tlsPort, tlsPort == config.port, tlsPort != 0 {
        fail("--tls-port \(tlsPort) is also --port: TLS and plain text need two ports")
    }
    config.tls = TLSSettings(certificateFile: cert, keyFile: key, clientCAFile: tlsClientCA, port: tlsPort,
                             handshakeTimeoutMs: tlsHandshakeTimeoutMs)
case (_?, nil): fail("--tls-cert needs --tls-key (the certificate's private key)")
case (nil, _?): fail("--tls-key needs --tls-cert (the certificate it belongs to)")
case (nil, nil):
    if tlsClientCA != nil { fail("--tls-client-ca needs --tls-cert and --tls-key (client certificates are checked over TLS)") }
    if tlsPort != nil { fail("--tls-port needs --tls-cert and --tls-key") }
}

if postgresDSN == nil && (advertise != nil || nodeName != nil) {
    fail("--advertise and --node-name name a node of several over PostgreSQL: they need --postgres")
}
if postgresDSN != nil {
    var host = [CChar](repeating: 0, count: 256)
    gethostname(&host, host.count - 1)
    let name = nodeName ?? advertise ?? "\(String(cString: host))/\(getpid())"
    config.cluster = ClusterSettings(node: ClusterNode(name: name, address: advertise), leaseMs: leaseMs)
    if checkFirst { fail("--check reads the embedded store's files; a PostgreSQL store is checked by PostgreSQL (amcheck, data checksums)") }
    // The reserve keeps room on the embedded store's disk; PostgreSQL's disk is PostgreSQL's.
    config.diskReserveBytes = 0
}

// A daemon must not inherit a blocked signal mask (a parent's worker thread may have spawned it with
// SIGTERM blocked, which would make it unstoppable); start from an empty mask. SIGHUP is ignored until the loop
// watches it (its default action would end the daemon).
var emptyMask = sigset_t()
sigemptyset(&emptyMask)
pthread_sigmask(SIG_SETMASK, &emptyMask, nil)
signal(SIGHUP, SIG_IGN)

let logger = Logger(minimum: logLevel, format: logFormat)

let retention = RetentionPolicy(maxAgeMicros: config.retentionSeconds * 1_000_000, maxBytes: config.retentionBytes)
// Protected mode, before anything is bound or opened.
if let problem = config.security.protectionProblem(host: config.host) { fail(problem) }
do {
    // The rules, token keys, admin key and certificates, then listen: a start that cannot serve must not
    // create or change anything in the data directory.
    let access = try AccessControl(config.security)
    let tls = try config.tls.map { settings throws(HearthError) in try ServerTLS(settings) }
    let socket = try ServerSocket(addresses: config.listenAddresses, metrics: config.metricsAddress)
    // Then the store, which creates the directory if needed and locks it (a second daemon stops here).
    let store: any DocumentStore
    var nodeLock: DataDirectoryLock?
    if let postgresDSN {
        // The node's own directory is locked as the embedded store's is: one daemon per data directory.
        nodeLock = try DataDirectoryLock.creating(config.dataDir)
        // The stores this node served are recorded in its directory: one that is gone is refused, not recreated.
        let records = try PostgresStoreRecords(directory: config.dataDir)
        let postgres = try PostgresStore(dsn: postgresDSN, schema: postgresSchema, retention: retention, clustered: true,
                                         records: records)
        let seq = try postgres.lastSeq()
        let node = config.cluster!.node
        logger.info("store: PostgreSQL at \(postgres.serverDescription), schema \(postgresSchema), seq \(seq); node \(node.name)\(node.address.map { " advertised at \($0)" } ?? " (not advertised)")")
        store = postgres
    } else {
        let sqlite = try SQLiteStore(directory: config.dataDir, retention: retention)
        if let recovery = sqlite.recovery, let line = recovery.summary {
            if recovery.tearDescription != nil { logger.warn(line) } else { logger.info(line) }
        }
        if checkFirst, !(try StoreCheck(store: sqlite, dataDir: config.dataDir).beforeServing(log: { logger.info($0) }, report: report)) {
            sqlite.close()
            exit(1)
        }
        store = sqlite
    }
    let server = try Server(config: config, store: store, logger: logger, socket: socket, access: access, tls: tls)
    // Every allocation of the process goes through jemalloc (CMalloc links it; docs/operations.md, "Memory
    // allocator"): said with the other start-up lines, so that an operator can tell a build without it. Its
    // background threads return freed pages to the kernel while the daemon idles, unless MALLOC_CONF says
    // otherwise.
    let serves = hearth_allocator_serves_malloc()
    if let version = hearth_allocator_version(), serves != 0 {
        let operatorChose = getenv("MALLOC_CONF").map { String(cString: $0).contains("background_thread") } ?? false
        let purging = operatorChose ? "as MALLOC_CONF sets"
            : hearth_allocator_start_background_threads() == 0 ? "background purging" : "no background purging (could not start its threads)"
        logger.info("allocator: jemalloc \(String(cString: version)), \(purging)\(serves == 1 ? "" : " (unchecked: no statistics)")")
    } else {
        logger.warn("allocator: jemalloc does not serve malloc in this process (another allocator was preloaded?)")
    }
    try server.run()
    signal(SIGHUP, SIG_IGN)
    store.close()
    nodeLock?.release()
    logger.info("stopped")
} catch let error as HearthError {
    fail("cannot start: \(error.message)")
} catch {
    fail("cannot start: \(error)")
}
