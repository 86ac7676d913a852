/// One `JSONParser` per thread, for Sendable entry points (like `FieldsJSON`) that cannot carry a parser.
/// Only `FieldsJSON` uses it, and never while refs from an earlier parse on it are still in use.
enum ThreadParser {
    private static let parsers = PerThread { JSONParser() }

    /// This thread's parser (created on first use, released when the thread exits).
    static var current: JSONParser { parsers.current }
}
