import Foundation
import HearthTesting
import Testing

/// `hearth` authenticates every connection: a hello with the token or admin key is the first line of each
/// one (one-shots, shell, migrate, every bench connection), taken from --token / --token-file /
/// --admin-key-file or HEARTH_TOKEN / HEARTH_ADMIN_KEY. Checked against a scripted daemon that records
/// each connection's lines exactly, accepts one token and one admin key, and refuses anything else with
/// UNAUTHENTICATED.
@Suite(.serialized) final class CLIAuthTests {
    static let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
    static let expired = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.ZXhwaXJlZA"
    /// An admin key with characters JSON must escape.
    static let adminKey = #"0123456789abcdef0123456789"quote\slash"#
    let daemon: HelloFakeDaemon
    let dir: URL

    init() throws {
        daemon = try HelloFakeDaemon(token: Self.token, adminKey: Self.adminKey)
        dir = try OpenSSLCommand.temporaryDirectory()
    }

    deinit {
        daemon.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    func file(_ name: String, _ contents: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func hearth(_ args: [String], env: [String: String] = [:], stdin: String? = nil) throws -> CLIProcess.Result {
        try CLIProcess.run(args + ["--port", String(daemon.port)], stdin: stdin, environment: env)
    }

    static let tokenHello = #"{"op":"hello","token":"\#(token)"}"#
    static let adminHello = #"{"op":"hello","adminKey":"0123456789abcdef0123456789\"quote\\slash"}"#

    @Test func tokenFromFileFlagOrEnvironmentIsSentFirst() throws {
        let tokenFile = try file("token", Self.token + "\n")
        let runs: [([String], [String: String])] = [
            (["ping", "--token-file", tokenFile], [:]),
            (["ping"], ["HEARTH_TOKEN": Self.token]),
            (["ping", "--token", Self.token], [:]),
            // A flag wins over the environment.
            (["ping", "--token-file", tokenFile], ["HEARTH_ADMIN_KEY": "something-else-entirely-0123456789"]),
        ]
        for (args, env) in runs {
            let before = daemon.connections.count
            let r = try hearth(args, env: env)
            #expect(r.status == 0, "\(args) \(env): \(r.stderr)")
            let conns = daemon.connections.dropFirst(before)
            #expect(conns.count == 1)
            #expect(conns.first?.first == Self.tokenHello, "\(args) \(env)")
            #expect(conns.first?.dropFirst().first?.contains(#""op":"ping""#) == true)
        }
    }

    @Test func adminKeyIsEscapedAndSentFirst() throws {
        let keyFile = try file("admin.key", Self.adminKey + "\r\n")
        for (args, env) in [(["get", "a/b", "--admin-key-file", keyFile], [String: String]()),
                            (["get", "a/b"], ["HEARTH_ADMIN_KEY": Self.adminKey])] {
            let before = daemon.connections.count
            let r = try hearth(args, env: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == "a/b: not found\n")
            let lines = daemon.connections[before]
            #expect(lines.count == 2)
            #expect(lines.first == Self.adminHello)
        }
    }

    @Test func withoutCredentialsNoHelloIsSent() throws {
        let r = try hearth(["ping"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = try #require(daemon.connections.last)
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""op":"ping""#) == true)
    }

    @Test func aRefusedHelloIsPrintedAndExitsOne() throws {
        let r = try hearth(["set", "a/b", #"{"x":1}"#], env: ["HEARTH_TOKEN": Self.expired])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr == "error: the daemon refused the hello: UNAUTHENTICATED: expired: token expired at 1767225600, now 1767229200 (clock skew 60 s) (hello with the token from HEARTH_TOKEN)\n")
        // Nothing was sent after the refused hello.
        #expect(daemon.connections.last == [#"{"op":"hello","token":"\#(Self.expired)"}"#])
    }

    @Test func credentialMistakesAreUsageErrors() throws {
        let empty = try file("empty", "\n")
        let twoLines = try file("two", Self.token + "\n" + Self.token + "\n")
        let spaced = try file("spaced", "Bearer " + Self.token)
        let table: [([String], [String: String], String)] = [
            (["ping", "--token", Self.token, "--token-file", empty], [:], "Error: Give only one of --token, --token-file."),
            (["ping", "--token-file", "/nonexistent/t"], [:], "Error: cannot read --token-file /nonexistent/t: No such file or directory."),
            (["ping", "--token-file", empty], [:], "Error: --token-file \(empty) is empty."),
            (["ping", "--token-file", twoLines], [:], "Error: --token-file \(twoLines) holds a control character (a second line?); expected one token."),
            (["ping", "--token-file", spaced], [:], "does not look like a token"),
            (["ping"], ["HEARTH_TOKEN": Self.token, "HEARTH_ADMIN_KEY": Self.adminKey], "Error: Both HEARTH_TOKEN and HEARTH_ADMIN_KEY are set"),
        ]
        let before = daemon.connections.count
        for (args, env, says) in table {
            let r = try hearth(args, env: env)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(says), "\(args): \(r.stderr)")
        }
        #expect(daemon.connections.count == before, "no connection is opened for a usage error")
    }

    @Test func shellAndListenSendTheHelloFirst() throws {
        let tokenFile = try file("token", Self.token)
        let before = daemon.connections.count
        let shell = try hearth(["shell", "--token-file", tokenFile], stdin: "ping\nget a/b\n")
        #expect(shell.status == 0, "\(shell.stderr)")
        let lines = daemon.connections[before]
        #expect(lines.count == 3)
        #expect(lines.first == Self.tokenHello)
        #expect(lines.dropFirst().first?.contains(#""op":"ping""#) == true)

        let listen = try hearth(["listen", "a/b", "--events", "1", "--token-file", tokenFile])
        #expect(listen.status == 0, "\(listen.stderr)")
        let listenLines = try #require(daemon.connections.last)
        #expect(listenLines.first == Self.tokenHello)
        #expect(listenLines.dropFirst().first?.contains(#""op":"listen""#) == true)
    }

    @Test func migrateSendsTheHelloFirst() throws {
        let keyFile = try file("admin.key", Self.adminKey)
        let before = daemon.connections.count
        let r = try hearth(["migrate", "departments", "--step", "backfill", "--admin-key-file", keyFile])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = daemon.connections[before]
        #expect(lines.first == Self.adminHello)
        #expect(lines.dropFirst().first?.contains(#""op":"query""#) == true)
    }

    @Test func everyBenchConnectionSendsTheHelloFirst() throws {
        let tokenFile = try file("token", Self.token)
        let before = daemon.connections.count
        let r = try hearth(["bench", "ping", "--requests", "60", "--connections", "3", "--threads", "2", "--json",
                            "--token-file", tokenFile])
        #expect(r.status == 0, "\(r.stderr)")
        let conns = Array(daemon.connections.dropFirst(before))
        #expect(conns.count == 3)
        for lines in conns {
            #expect(lines.first == Self.tokenHello)
            #expect(lines.dropFirst().allSatisfy { $0.contains(#""op":"ping""#) })
        }
        #expect(conns.map { $0.count - 1 }.reduce(0, +) == 60)

        let refused = try hearth(["bench", "ping", "--requests", "10", "--connections", "2"], env: ["HEARTH_TOKEN": Self.expired])
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("the daemon refused the hello: UNAUTHENTICATED: expired: token expired at 1767225600"), "\(refused.stderr)")
    }
}

/// A scripted stand-in for hearthd for the CLI's hellos: records every line of every connection (in
/// order of acceptance), answers `hello` with `auth` for the one good token / admin key and UNAUTHENTICATED
/// for anything else, refuses requests on a connection whose hello failed, and answers `ping`, `get`,
/// `query`, `listen` (with one snapshot) and anything else with plain successes.
final class HelloFakeDaemon: @unchecked Sendable {
    let port: Int
    private let listenFD: Int32
    private let token: String
    private let adminKey: String
    private let lock = NSLock()
    private var recorded: [[String]] = []
    private var stopping = false

    init(token: String, adminKey: String) throws {
        self.token = token
        self.adminKey = adminKey
        listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = listenFD
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, len) == 0 && listen(fd, 64) == 0 && getsockname(fd, p, &len) == 0
            }
        }
        guard ok else { throw TestFailure("fake daemon cannot listen") }
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Every connection's lines so far, in the order the connections were accepted.
    var connections: [[String]] { lock.withLock { recorded } }

    func stop() {
        lock.withLock { stopping = true }
        shutdown(listenFD, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while !lock.withLock({ stopping }) {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { continue }
            let index = lock.withLock { recorded.append([]); return recorded.count - 1 }
            Thread.detachNewThread { [self] in serve(fd, index) }
        }
        close(listenFD)
    }

    private func serve(_ fd: Int32, _ index: Int) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var helloState: Bool?  // nil: no hello yet; false: refused
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { return }
            buffer += chunk[0..<n]
            var out = ""
            while let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                lock.withLock { recorded[index].append(line) }
                out += answer(line, &helloState) + "\n"
            }
            if !out.isEmpty {
                let bytes = Array(out.utf8)
                var sent = 0
                while sent < bytes.count {
                    let m = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    guard m > 0 else { return }
                    sent += m
                }
            }
        }
    }

    private func answer(_ line: String, _ helloState: inout Bool?) -> String {
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
              let op = obj["op"] as? String else {
            return #"{"ok":false,"error":{"code":"INVALID_ARGUMENT","message":"not a request"}}"#
        }
        var head = "{"
        if let id = obj["id"], let data = try? JSONSerialization.data(withJSONObject: [id]) {
            head += #""id":"# + String(decoding: data.dropFirst().dropLast(), as: UTF8.self) + ","
        }
        func refuse(_ message: String) -> String { head + #""ok":false,"error":{"code":"UNAUTHENTICATED","message":"\#(message)"}}"# }
        let okHello = head + #""ok":true,"version":"0.1.0","seq":0,"history":"0000000000000001""#
        switch op {
        case "hello":
            if let t = obj["token"] as? String {
                helloState = t == token
                return t == token ? okHello + #","auth":{"uid":"alice","admin":false,"expiresAt":1767225600}}"#
                    : refuse("expired: token expired at 1767225600, now 1767229200 (clock skew 60 s)")
            }
            if let k = obj["adminKey"] as? String {
                helloState = k == adminKey
                return k == adminKey ? okHello + #","auth":{"admin":true}}"# : refuse("bad_admin_key: the admin key does not match")
            }
            return okHello + "}"
        default:
            if helloState == false { return refuse("the connection has not authenticated") }
            switch op {
            case "ping": return head + #""ok":true,"seq":0}"#
            case "get": return head + #""ok":true,"doc":null}"#
            case "query": return head + #""ok":true,"docs":[],"seq":0}"#
            case "listen":
                return head + #""ok":true,"sub":"1","history":"0000000000000001"}"# + "\n"
                    + #"{"type":"snapshot","sub":"1","seq":0,"initial":true,"doc":null}"#
            default: return head + #""ok":true}"#
            }
        }
    }
}
