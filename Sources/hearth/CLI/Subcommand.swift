/// One `hearth` subcommand: its name, help texts, accepted arguments and what it runs.
/// `run` returns the exit code; a thrown `UsageError` exits 2, a thrown `ClientError` exits 3.
struct Subcommand: Sendable {
    let name: String
    let abstract: String
    var discussion: String = ""
    var positionals: [PositionalSpec] = []
    var options: [OptionSpec] = []
    let run: @Sendable (ParsedArguments) throws -> Int32

    /// Options including `-h, --help`, in help order.
    var allOptions: [OptionSpec] { options + [.flag("help", "Show help information.", short: "h")] }

    var usageLine: String {
        var parts = ["hearth", name]
        for p in positionals {
            var text = "<\(p.name)>"
            if p.variadic { text += " ..." }
            parts.append(p.optional ? "[\(text)]" : text)
        }
        if options.count > 5 {
            parts.append("[<options>]")
        } else {
            for o in options { parts.append("[--\(o.name)\(o.valueName.map { " <\($0)>" } ?? "")]") }
        }
        return parts.joined(separator: " ")
    }

    /// The full `--help` text.
    var helpText: String {
        var text = "OVERVIEW: \(abstract)\n"
        if !discussion.isEmpty { text += "\n" + discussion + "\n" }
        text += "\nUSAGE: \(usageLine)\n"
        if !positionals.isEmpty {
            text += "\nARGUMENTS:\n"
            for p in positionals { text += HelpFormat.row("<\(p.name)>", p.help) }
        }
        text += "\nOPTIONS:\n"
        for o in allOptions {
            var left = o.short.map { "-\($0), " } ?? ""
            left += "--\(o.name)"
            if let v = o.valueName { left += " <\(v)>" }
            text += HelpFormat.row(left, o.help)
        }
        return text
    }
}

enum HelpFormat {
    /// One two-column help row: the left column padded to 26 characters (or on its own line if longer).
    static func row(_ left: String, _ right: String) -> String {
        let width = 26
        if left.count + 2 >= width { return "  \(left)\n" + String(repeating: " ", count: width + 2) + right + "\n" }
        return "  " + left + String(repeating: " ", count: width - left.count) + right + "\n"
    }
}
