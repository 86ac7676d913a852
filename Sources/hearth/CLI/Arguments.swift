/// A command-line mistake: reported as `Error: <message>` plus the command's usage line, exit code 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// One option of a subcommand: `--name <value>` (or `--name=<value>`), or a flag `--name` when
/// `valueName` is nil. `short` is an optional one-letter alias (`-j`).
struct OptionSpec: Sendable {
    let name: String
    let short: Character?
    let valueName: String?
    let help: String

    static func value(_ name: String, _ valueName: String, _ help: String, short: Character? = nil) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, help: help)
    }

    static func flag(_ name: String, _ help: String, short: Character? = nil) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help)
    }

    /// `--host` / `--port` / `--timeout`, the credentials (`--token`, `--token-file`, `--admin-key-file`) and
    /// the TLS flags, accepted by every subcommand that talks to the daemon.
    static let connection: [OptionSpec] = [
        .value("host", "host", "Daemon address: an IP literal, localhost or a host name that resolves, with :PORT or not; several nodes of one database comma-separated, the first that accepts is used (default: $HEARTH_HOST, else 127.0.0.1)."),
        .value("port", "port", "Daemon port (default: $HEARTH_PORT, else 7411)."),
        .value("timeout", "seconds", "How long to wait to connect and for each response (default: 10)."),
    ] + Credentials.specs + TLSOptions.specs
}

/// A positional argument. A variadic one takes every remaining positional (at least one unless optional).
struct PositionalSpec: Sendable {
    let name: String
    let help: String
    var optional = false
    var variadic = false
}

/// The result of parsing: positionals in order, option values by long name, flags that were given.
/// Accessors convert and validate, throwing `UsageError` with the option's name in the message.
struct ParsedArguments {
    var positionals: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func string(_ name: String) -> String? { values[name] }

    func int(_ name: String, default def: Int, min: Int = 0, max: Int = Int.max) throws(UsageError) -> Int {
        guard let text = values[name] else { return def }
        guard let v = Int(text), v >= min, v <= max else {
            throw UsageError("--\(name) must be a whole number from \(min) to \(max == Int.max ? "∞" : String(max)) (got '\(text)')")
        }
        return v
    }

    /// A number from `min` to `max`: give durations a `max` (a day, a week) so that their conversions to the
    /// system's units (milliseconds in 32 bits, microseconds, nanoseconds in 64 bits) cannot overflow.
    func double(_ name: String, default def: Double?, min: Double = 0, max: Double = 1e9) throws(UsageError) -> Double? {
        guard let text = values[name] else { return def }
        guard let v = Double(text), v.isFinite, v >= min, v <= max else {
            throw UsageError("--\(name) must be a number from \(NumberText.plain(min)) to \(NumberText.plain(max)) (got '\(text)')")
        }
        return v
    }
}

/// Parses `args` against `options` and `positionals` in swift-argument-parser style: `--name value`,
/// `--name=value`, short aliases, `--` ends options, `-h`/`--help` anywhere asks for help.
/// Returns nil when help was asked for.
func parseArguments(_ args: [String], options: [OptionSpec], positionals: [PositionalSpec]) throws(UsageError) -> ParsedArguments? {
    var parsed = ParsedArguments()
    var i = 0
    var onlyPositionals = false
    while i < args.count {
        let arg = args[i]
        i += 1
        if onlyPositionals || !arg.hasPrefix("-") || arg == "-" || isNumberLike(arg) {
            parsed.positionals.append(arg)
            continue
        }
        if arg == "--" { onlyPositionals = true; continue }
        if arg == "-h" || arg == "--help" { return nil }
        var name: String
        var inline: String?
        if arg.hasPrefix("--") {
            name = String(arg.dropFirst(2))
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
        } else {
            guard arg.count == 2, let spec = options.first(where: { $0.short == arg.last }) else {
                throw UsageError("Unknown option '\(arg)'.")
            }
            name = spec.name
        }
        guard let spec = options.first(where: { $0.name == name }) else {
            throw UsageError("Unknown option '--\(name)'.")
        }
        if let valueName = spec.valueName {
            if let inline {
                parsed.values[name] = inline
            } else if i < args.count {
                parsed.values[name] = args[i]
                i += 1
            } else {
                throw UsageError("Missing value for '--\(name) <\(valueName)>'.")
            }
        } else {
            if inline != nil { throw UsageError("Flag '--\(name)' takes no value.") }
            parsed.flags.insert(name)
        }
    }
    try checkPositionals(parsed.positionals, positionals)
    return parsed
}

private func isNumberLike(_ arg: String) -> Bool {
    guard arg.count > 1, arg.first == "-" else { return false }
    return Double(arg) != nil
}

private func checkPositionals(_ given: [String], _ specs: [PositionalSpec]) throws(UsageError) {
    let required = specs.filter { !$0.optional }.count
    let variadic = specs.contains { $0.variadic }
    if given.count < required {
        let missing = specs.filter { !$0.optional }[given.count]
        throw UsageError("Missing expected argument '<\(missing.name)>'.")
    }
    if !variadic && given.count > specs.count {
        throw UsageError("Unexpected argument '\(given[specs.count])'.")
    }
}
