import HearthCrypto

/// The admin key (`--admin-key-file`): a shared secret that backends and tools present in
/// `{"op":"hello","adminKey":"..."}` to act as admin (rules do not apply to them). The file's text, less
/// one trailing line break, is the key: at least 32 bytes of UTF-8 without control characters (it travels
/// in a JSON string and in the `HEARTH_ADMIN_KEY` environment variable). Make one with
/// `openssl rand -hex 32 > admin.key`.
public struct AdminKey: Sendable {
    public static let minimumBytes = 32
    private let bytes: [UInt8]

    public init(_ key: [UInt8]) throws(AuthConfigError) {
        guard key.count >= AdminKey.minimumBytes else {
            throw AuthConfigError("the admin key is \(key.count) bytes; it needs at least \(AdminKey.minimumBytes)")
        }
        let text = String(decoding: key, as: UTF8.self)
        guard Array(text.utf8) == key else { throw AuthConfigError("the admin key is not UTF-8 text") }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw AuthConfigError("the admin key contains a control character (line break, tab, ...)")
        }
        bytes = key
    }

    /// Reads `--admin-key-file`.
    public static func load(file path: String) throws(AuthConfigError) -> AdminKey {
        let key = try SecretFile.secret(path, minimumBytes: minimumBytes)
        do { return try AdminKey(key) } catch { throw AuthConfigError("\(path): \(error.message)") }
    }

    /// The key itself, for a node that presents it to another node of its cluster (its followers speak for
    /// their clients to the committer as the admin).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// True when `candidate` is the key; compared in constant time.
    public func matches(_ candidate: String) -> Bool {
        ConstantTime.equal(Array(candidate.utf8), bytes)
    }
}
