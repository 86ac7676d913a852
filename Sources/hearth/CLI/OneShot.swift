/// Where to reach the daemon, how, and who to be there: `--host`, `--port` (else `HEARTH_HOST`,
/// `HEARTH_PORT`, else 127.0.0.1:7411), `--timeout`, TLS (`TLSOptions`), and the credentials (`Credentials`: `--token`, `--token-file`, `--admin-key-file`, `HEARTH_TOKEN`,
/// `HEARTH_ADMIN_KEY`).
struct ConnectionOptions {
    var host = "127.0.0.1"
    var port = 7411
    /// Every address `--host` named (`HOST[:PORT]`, comma-separated: several nodes of one database), the
    /// first being `host:port`; a connection goes to the first that accepts.
    var addresses: [(host: String, port: Int)] = [("127.0.0.1", 7411)]
    var timeout = 10.0
    var credentials = Credentials.anonymous
    /// Nil: plain text.
    var tls: TLSOptions?

    init(_ args: ParsedArguments, environment: (String) -> String? = Credentials.environment) throws(UsageError) {
        let envHost = environment("HEARTH_HOST").flatMap { $0.isEmpty ? nil : $0 }
        var defaultPort = 7411
        if let text = environment("HEARTH_PORT"), !text.isEmpty {
            guard let p = Int(text), (1...65535).contains(p) else {
                throw UsageError("HEARTH_PORT must be a port from 1 to 65535, got '\(text)'.")
            }
            defaultPort = p
        }
        port = try args.int("port", default: defaultPort, min: 1, max: 65535)
        if let h = args.string("host") ?? envHost {
            guard !h.isEmpty else { throw UsageError("--host must not be empty.") }
            addresses = try h.split(separator: ",", omittingEmptySubsequences: false).map { (entry) throws(UsageError) in
                try Self.address(String(entry), defaultPort: port)
            }
        } else {
            addresses = [(host, port)]
        }
        (host, port) = addresses[0]
        timeout = try args.double("timeout", default: 10, min: 0.001, max: 86_400) ?? 10
        credentials = try Credentials(args)
        tls = try TLSOptions(args)
    }

    /// Connects (with TLS when asked) and, with credentials, sends the hello first and waits for its answer
    /// (`HelloRefused` when the daemon says no); the client's `identity` is the uid (or "admin") the daemon
    /// confirmed.
    func connect() throws -> BlockingClient {
        var failure: ClientError?
        for a in addresses {
            let client: BlockingClient
            do throws(ClientError) {
                client = try BlockingClient(host: a.host, port: a.port, timeout: timeout, tls: try tls?.makeContext())
            } catch {
                failure = error
                continue   // the next node
            }
            client.identity = try credentials.authenticate(client, timeout: timeout)
            return client
        }
        throw failure!
    }

    /// One `--host` entry: `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT` (a bare IPv6 literal takes `defaultPort`).
    static func address(_ entry: String, defaultPort: Int) throws(UsageError) -> (host: String, port: Int) {
        guard !entry.isEmpty else { throw UsageError("--host has an empty address in '\(entry)'.") }
        var host = entry, port = defaultPort
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else { throw UsageError("--host: '\(entry)' lacks its ']'.") }
            host = String(entry[entry.index(after: entry.startIndex)..<close])
            let rest = entry[entry.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()), (1...65535).contains(p) else {
                    throw UsageError("--host: '\(entry)' must be [ADDRESS] or [ADDRESS]:PORT.")
                }
                port = p
            }
        } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") {
            guard let p = Int(entry[entry.index(after: colon)...]), (1...65535).contains(p) else {
                throw UsageError("--host: the port in '\(entry)' must be from 1 to 65535.")
            }
            host = String(entry[..<colon])
            port = p
        }
        guard !host.isEmpty else { throw UsageError("--host: '\(entry)' has no address.") }
        return (host, port)
    }
}

/// Runs one request: connect, send, wait for its response (skipping pushed lines), print it.
/// Readable output goes to stdout and errors to stderr; `--json` prints the raw response line instead.
/// Exit code 0 for `"ok":true`, 1 for a server error; connection problems throw `ClientError` (exit 3).
enum OneShot {
    static func run(_ request: ClientRequest, _ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let client = try options.connect()
        let start = Clock.nanos()
        try client.send(line: request.line)
        while true {
            let response = ServerResponse(line: try client.readLine(timeout: options.timeout))
            if response.isPush { continue }
            let elapsed = Clock.nanos() - start
            if args.flag("json") {
                Console.line(response.text)
                return response.ok ? ExitCode.ok : ExitCode.serverError
            }
            if response.ok {
                Console.line(ResponseRenderer.render(response, for: request, elapsedNanos: elapsed))
                return ExitCode.ok
            }
            Console.error(ResponseRenderer.renderError(response))
            return ExitCode.serverError
        }
    }
}

/// `hearth listen`: subscribes, prints the response, then every pushed line as it arrives, until
/// `--events` pushed lines were printed (forever by default; Ctrl-C ends it) or the connection closes.
enum ListenCommand {
    static func run(_ request: ClientRequest, _ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let limit = try args.int("events", default: Int.max, min: 1)
        let json = args.flag("json")
        let client = try options.connect()
        let start = Clock.nanos()
        try client.send(line: request.line)
        var answered = false
        var events = 0
        while events < limit {
            let line = try client.readLine(timeout: answered ? 1e9 : options.timeout)
            let response = ServerResponse(line: line)
            if response.isPush {
                Console.line(json ? response.text : ResponseRenderer.renderPush(response))
                Console.flush()
                events += 1
                continue
            }
            guard !answered else { continue }
            answered = true
            if !response.ok {
                Console.error(json ? response.text : ResponseRenderer.renderError(response))
                return ExitCode.serverError
            }
            Console.line(json ? response.text : ResponseRenderer.render(response, for: request, elapsedNanos: Clock.nanos() - start))
            Console.flush()
        }
        return ExitCode.ok
    }
}
