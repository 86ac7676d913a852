#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// The PostgreSQL stores a node has served, kept in its data directory (`postgres-stores`): for each database
/// and schema, the history ID of the store found there. A store's schema that is later missing, holds no
/// Hearth tables, or holds another history was lost (dropped, renamed, or dropped and made again); opening it
/// is refused with DATA_LOSS (`PostgresSchema.prepare`) instead of serving an empty store under the old
/// name, as the embedded store's `commit.log` does for a lost `hearth.db`.
///
/// The file is text, one store per line: `<history ID> <database> <schema>`, the two names percent-encoded
/// (every byte but ASCII letters, digits, `_`, `-` and `.`), after `#` comment lines. An operator who means to
/// start a new store where a lost one was removes its line (or the file). It is replaced whole (written
/// beside, synced, renamed, the directory synced), so a crash leaves the old or the new file.
public struct PostgresStoreRecords: Sendable {
    public static let fileName = "postgres-stores"

    /// `<directory>/postgres-stores`.
    public let path: String
    private let directory: String
    private var stores: [Key: UInt64]

    /// The names as bytes: PostgreSQL compares identifiers byte for byte, where Swift's `String` equality
    /// would take two canonically equivalent names (precomposed é and e + accent) for one.
    struct Key: Hashable, Sendable {
        let database: [UInt8]
        let schema: [UInt8]
        init(database: String, schema: String) {
            self.database = Array(database.utf8)
            self.schema = Array(schema.utf8)
        }
    }

    /// Reads the records in `directory` (none when the file does not exist). A line that is not a record is
    /// an error naming the file and the line.
    public init(directory: String) throws(HearthError) {
        self.directory = directory
        path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        stores = [:]
        guard let text = try Self.readFile(path) else { return }
        // Lines split at each newline byte (a "\r\n" is one Character, so splitting Characters would not).
        for (n, raw) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var bytes = Array(raw)
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            let line = Substring(String(decoding: bytes, as: UTF8.self))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 3, let history = UInt64(parts[0]),
                  let database = Self.decode(parts[1]), let schema = Self.decode(parts[2]) else {
                throw HearthError(.internal, "storage: \(path) line \(n + 1) is not `<history ID> <database> <schema>`: \(String(line.prefix(200)).debugDescription)")
            }
            stores[Key(database: database, schema: schema)] = history
        }
    }

    /// The history ID of the store this node served in `schema` of `database`, if it served one.
    public func history(database: String, schema: String) -> UInt64? { stores[Key(database: database, schema: schema)] }

    /// Records that this node serves the store of `history` in `schema` of `database` (nothing to write when
    /// it is recorded already).
    public mutating func record(history: UInt64, database: String, schema: String) throws(HearthError) {
        let key = Key(database: database, schema: schema)
        guard stores[key] != history else { return }
        stores[key] = history
        var text = """
            # The PostgreSQL stores this node has served: history ID, database, schema (percent-encoded).
            # hearthd refuses to start when such a schema is missing or holds another store (it was dropped or
            # renamed). Remove a store's line to let a new, empty store start in its place.

            """
        for (k, h) in stores.sorted(by: { $0.key.database.lexicographicallyPrecedes($1.key.database)
                                             || ($0.key.database == $1.key.database && $0.key.schema.lexicographicallyPrecedes($1.key.schema)) }) {
            text += "\(h) \(Self.encode(k.database)) \(Self.encode(k.schema))\n"
        }
        try Self.replace(path, with: Array(text.utf8), directory: directory)
    }

    // MARK: The file

    private static func readFile(_ path: String) throws(HearthError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("cannot open \(path)", errno)
        }
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read \(path)", errno)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > 1 << 20 { throw HearthError(.internal, "storage: \(path) is over 1 MiB; it is not a list of stores") }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw HearthError(.internal, "storage: \(path) is not UTF-8 text")
        }
        return text
    }

    private static func replace(_ path: String, with bytes: [UInt8], directory: String) throws(HearthError) {
        let partial = path + ".partial"
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("cannot create \(partial)", errno) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = errno
                _ = close(fd)
                _ = unlink(partial)
                throw failure("cannot write \(partial)", e)
            }
            done += n
        }
        guard fsync(fd) == 0 else {
            let e = errno
            _ = close(fd)
            _ = unlink(partial)
            throw failure("cannot sync \(partial)", e)
        }
        _ = close(fd)
        guard rename(partial, path) == 0 else {
            let e = errno
            _ = unlink(partial)
            throw failure("cannot rename \(partial) to \(path)", e)
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw failure("cannot open \(directory) to sync it", errno) }
        defer { _ = close(dir) }
        guard fsync(dir) == 0 else { throw failure("cannot sync \(directory)", errno) }
    }

    private static func failure(_ what: String, _ code: Int32) -> HearthError {
        HearthError(.unavailable, "storage: \(what): \(String(cString: strerror(code)).lowercased())")
    }

    // MARK: Names

    private static func plain(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D || b == 0x2E
    }

    static func encode(_ name: [UInt8]) -> String {
        var out = ""
        for b in name {
            if plain(b) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(b >> 4)], hex[Int(b & 15)]], as: UTF8.self)
            }
        }
        return out.isEmpty ? "%" : out   // "%" alone: the empty name (a database is never unnamed; kept total)
    }

    static func decode(_ text: Substring) -> String? {
        if text == "%" { return "" }
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let u = text.utf8
        while i < u.endIndex {
            let b = u[i]
            if b == UInt8(ascii: "%") {
                let h = u.index(after: i)
                guard h < u.endIndex, u.index(after: h) < u.endIndex,
                      let hi = hexValue(u[h]), let lo = hexValue(u[u.index(after: h)]) else { return nil }
                bytes.append(hi << 4 | lo)
                i = u.index(h, offsetBy: 2)
            } else {
                guard plain(b) else { return nil }
                bytes.append(b)
                i = u.index(after: i)
            }
        }
        guard !bytes.isEmpty else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
