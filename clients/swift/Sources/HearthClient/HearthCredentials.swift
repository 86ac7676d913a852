import Foundation

/// Who a `Hearth` instance is (Firebase Auth's role for Firestore): sent in a `hello` as the first line of
/// every connection, the first one and each reconnect, before any request or listener goes out on it.
public enum HearthCredentials: Sendable {
    /// No hello: the connection is anonymous.
    case none
    /// A signed token (JWT), e.g. a Firebase ID token. Prefer `.tokenProvider` for tokens that expire.
    case token(String)
    /// A closure asked for a token on every connect and reconnect (and by `authenticate()`), as Firebase's
    /// auth integration asks for a fresh ID token; it may refresh one that is about to expire.
    case tokenProvider(@Sendable () async throws -> String)
    /// A file holding a token, read on every connect (a rotated file is picked up); one trailing line break
    /// is ignored.
    case tokenFile(String)
    /// The admin key (backends and tools; rules do not apply to it).
    case adminKey(String)
    /// A file holding the admin key, read on every connect.
    case adminKeyFile(String)
    /// `HEARTH_TOKEN`, else `HEARTH_ADMIN_KEY`, else none; read when the instance is made (the default).
    case environment

    /// `.environment` turned into what it stands for.
    func resolved(_ env: [String: String] = ProcessInfo.processInfo.environment) -> Result<HearthCredentials, HearthError> {
        guard case .environment = self else { return .success(self) }
        let token = env["HEARTH_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let key = env["HEARTH_ADMIN_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (token, key) {
        case (nil, nil): return .success(.none)
        case (let t?, nil): return .success(.token(t))
        case (nil, let k?): return .success(.adminKey(k))
        case (.some, .some):
            return .failure(.invalid("both HEARTH_TOKEN and HEARTH_ADMIN_KEY are set; unset one or set HearthSettings.credentials"))
        }
    }

    var isAnonymous: Bool { if case .none = self { return true } else { return false } }

    /// The hello's credential field (`token` or `adminKey`), computed for one connect: files are read and
    /// the provider is called (off the caller's queue). `done` may run on any thread.
    func helloFields(_ done: @escaping @Sendable (Result<[String: JSON], HearthError>) -> Void) {
        switch self {
        case .none, .environment: done(.success([:]))
        case .token(let t): done(Self.field("token", t, "the token"))
        case .adminKey(let k): done(Self.field("adminKey", k, "the admin key"))
        case .tokenFile(let path): done(Self.read(path).flatMap { Self.field("token", $0, "token file \(path)") })
        case .adminKeyFile(let path): done(Self.read(path).flatMap { Self.field("adminKey", $0, "admin key file \(path)") })
        case .tokenProvider(let provider):
            Task {
                do {
                    done(Self.field("token", try await provider(), "the token provider's token"))
                } catch {
                    done(.failure(HearthError(.unauthenticated, "the token provider failed: \(error)")))
                }
            }
        }
    }

    private static func field(_ name: String, _ value: String, _ what: String) -> Result<[String: JSON], HearthError> {
        if value.isEmpty { return .failure(.invalid("\(what) is empty")) }
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return .failure(.invalid("\(what) holds a control character (a second line?)"))
        }
        return .success([name: .string(value)])
    }

    private static func read(_ path: String) -> Result<String, HearthError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(.invalid("cannot read \(path)"))
        }
        guard var text = String(data: data, encoding: .utf8) else { return .failure(.invalid("\(path) is not UTF-8 text")) }
        if text.hasSuffix("\r\n") { text.removeLast() } else if text.hasSuffix("\n") { text.removeLast() }
        return .success(text)
    }
}
