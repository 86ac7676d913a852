#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthProtocol

/// Who `hearth` says it is: a signed token (JWT) or the admin key, sent as the first line of every
/// connection (`{"op":"hello","token":"..."}` / `{"op":"hello","adminKey":"..."}`), or nothing at all.
///
/// Taken from, in order: `--token`, `--token-file`, `--admin-key-file` (at most one of them), then the
/// environment (`HEARTH_TOKEN`, `HEARTH_ADMIN_KEY`; not both). Files are read whole, less one trailing
/// line break. `--token` exists for quick tests; files and the environment keep the secret out of the
/// process list.
struct Credentials: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case anonymous
        case token(String)
        case adminKey(String)
    }

    let kind: Kind
    /// Where it came from, for messages: "--token-file t.jwt", "HEARTH_TOKEN".
    let source: String

    static let anonymous = Credentials(kind: .anonymous, source: "")

    static let specs: [OptionSpec] = [
        .value("token", "jwt", "Authenticate with this signed token (JWT). Visible to other users: prefer --token-file or HEARTH_TOKEN."),
        .value("token-file", "file", "Authenticate with the token in this file (default: $HEARTH_TOKEN)."),
        .value("admin-key-file", "file", "Authenticate as admin with the key in this file (default: $HEARTH_ADMIN_KEY)."),
    ]

    init(kind: Kind, source: String) {
        self.kind = kind
        self.source = source
    }

    init(_ args: ParsedArguments, environment: (String) -> String? = Credentials.environment) throws(UsageError) {
        let given = ["token", "token-file", "admin-key-file"].filter { args.string($0) != nil }
        guard given.count <= 1 else {
            throw UsageError("Give only one of " + given.map { "--\($0)" }.joined(separator: ", ") + ".")
        }
        if let token = args.string("token") {
            self.init(kind: .token(try Credentials.checked(token, "--token", isToken: true)), source: "--token")
        } else if let path = args.string("token-file") {
            let source = "--token-file \(path)"
            self.init(kind: .token(try Credentials.checked(try Credentials.read(path, source), source, isToken: true)), source: source)
        } else if let path = args.string("admin-key-file") {
            let source = "--admin-key-file \(path)"
            self.init(kind: .adminKey(try Credentials.checked(try Credentials.read(path, source), source, isToken: false)), source: source)
        } else {
            let token = environment("HEARTH_TOKEN").flatMap { $0.isEmpty ? nil : $0 }
            let adminKey = environment("HEARTH_ADMIN_KEY").flatMap { $0.isEmpty ? nil : $0 }
            switch (token, adminKey) {
            case (nil, nil):
                self = .anonymous
            case (let token?, nil):
                self.init(kind: .token(try Credentials.checked(token, "HEARTH_TOKEN", isToken: true)), source: "HEARTH_TOKEN")
            case (nil, let key?):
                self.init(kind: .adminKey(try Credentials.checked(key, "HEARTH_ADMIN_KEY", isToken: false)), source: "HEARTH_ADMIN_KEY")
            case (.some, .some):
                throw UsageError("Both HEARTH_TOKEN and HEARTH_ADMIN_KEY are set; unset one, or pass --token-file or --admin-key-file.")
            }
        }
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// The hello line (without `\n`), or nil when anonymous.
    var helloLine: [UInt8]? {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op")
        w.string("hello")
        switch kind {
        case .anonymous: return nil
        case .token(let t): w.key("token"); w.string(t)
        case .adminKey(let k): w.key("adminKey"); w.string(k)
        }
        w.endObject()
        return w.bytes
    }

    /// What it is, for messages: "token from HEARTH_TOKEN", "admin key from --admin-key-file k".
    var describe: String {
        switch kind {
        case .anonymous: return "no credentials"
        case .token: return "token from \(source)"
        case .adminKey: return "admin key from \(source)"
        }
    }

    /// Sends the hello on `client` and waits for its answer; nothing when anonymous. Returns the identity the
    /// daemon confirmed ("alice", "admin"), or throws `HelloRefused` with the daemon's error.
    @discardableResult
    func authenticate(_ client: BlockingClient, timeout: Double) throws -> String? {
        guard let line = helloLine else { return nil }
        try client.send(line: line)
        while true {
            let response = ServerResponse(line: try client.readLine(timeout: timeout))
            if response.isPush { continue }
            guard response.ok else {
                throw HelloRefused(code: response.errorCode, message: response.errorMessage, credentials: self)
            }
            let auth = response.root?["auth"]
            if auth?["admin"]?.bool == true { return "admin" }
            return auth?["uid"]?.string
        }
    }

    /// A token is one line of printable ASCII without spaces; an admin key one line without control characters.
    private static func checked(_ value: String, _ source: String, isToken: Bool) throws(UsageError) -> String {
        guard !value.isEmpty else { throw UsageError("\(source) is empty.") }
        for scalar in value.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                throw UsageError("\(source) holds a control character (a second line?); expected one \(isToken ? "token" : "key").")
            }
            if isToken && (scalar == " " || scalar.value > 0x7E) {
                throw UsageError("\(source) does not look like a token (JWTs are printable ASCII without spaces).")
            }
        }
        return value
    }

    /// The file's text less one trailing line break.
    private static func read(_ path: String, _ source: String) throws(UsageError) -> String {
        guard let f = fopen(path, "rb") else { throw UsageError("cannot read \(source): \(String(cString: strerror(errno))).") }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            bytes += chunk[0..<n]
            guard bytes.count <= 64 * 1024 else { throw UsageError("\(source) is larger than 64 KiB; expected one token or key.") }
            if n < chunk.count { break }
        }
        if ferror(f) != 0 { throw UsageError("cannot read \(source): \(String(cString: strerror(errno))).") }
        if bytes.last == 10 { bytes.removeLast(); if bytes.last == 13 { bytes.removeLast() } }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw UsageError("\(source) is not UTF-8 text.") }
        return text
    }
}

/// The daemon answered the hello with an error (UNAUTHENTICATED: expired, bad signature...). Exit code 1.
struct HelloRefused: Error, CustomStringConvertible {
    let code: String
    let message: String
    let credentials: Credentials

    var description: String { "\(code): \(message) (hello with the \(credentials.describe))" }
}
