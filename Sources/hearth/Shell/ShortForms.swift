/// What one shell line asks for.
enum ShellAction {
    case send(ClientRequest)
    case help
    case quit
    case nothing
}

/// The words of a short form after its name. `word` takes the next whitespace-separated token; `json`
/// takes the rest of the line (JSON may contain spaces).
///
/// From a shell line, `rest` is the whole line. From a command line (`init(arguments:)`), the arguments the
/// shell already split come one at a time: each is split into words in turn, except that a value which
/// starts an argument is that whole argument (`where name == 'Ada Lovelace'` compares with "Ada
/// Lovelace"), so the shell's quotes keep a value with spaces together.
struct ShortFormArguments {
    var rest: Substring
    /// Command-line arguments not yet moved into `rest`.
    private var pending: ArraySlice<String> = []

    init(rest: Substring) { self.rest = rest }

    init(arguments: [String]) {
        rest = ""
        pending = arguments[...]
    }

    /// True when `rest` holds only spaces; moves the next command-line argument into it when there is one.
    /// Returns whether that happened (so the next token starts an argument).
    mutating func refill() -> Bool {
        rest = rest.drop { $0 == " " || $0 == "\t" }
        guard rest.isEmpty else { return false }
        while let next = pending.popFirst() {
            rest = Substring(next)
            if !next.isEmpty { return true }
        }
        return false
    }

    /// A value (see `QuerySyntax`): a whole command-line argument when one starts here and is not JSON
    /// (JSON is read by `token()`, which may stop before the end of the argument), else nil.
    mutating func wholeArgumentValue() -> String? {
        guard refill() else { return nil }
        let text = String(rest)
        let first = text.first ?? " "
        if "{[\"".contains(first) { return nil }
        if !text.contains(" ") && !text.contains("\t") { return nil }
        rest = rest[rest.endIndex...]
        return text
    }

    /// The next token, or a usage error naming `what`.
    mutating func word(_ what: String) throws(UsageError) -> String {
        guard let w = optionalWord() else { throw UsageError("missing \(what)") }
        return w
    }

    mutating func optionalWord() -> String? {
        _ = refill()
        guard !rest.isEmpty else { return nil }
        let end = rest.firstIndex { $0 == " " || $0 == "\t" } ?? rest.endIndex
        let w = String(rest[..<end])
        rest = rest[end...]
        return w
    }

    /// Every remaining token.
    mutating func words() -> [String] {
        var all: [String] = []
        while let w = optionalWord() { all.append(w) }
        return all
    }

    /// The rest of the line, trimmed; a usage error naming `what` when empty.
    mutating func json(_ what: String) throws(UsageError) -> String {
        let text = ([String(rest)] + pending).joined(separator: " ").trimmingSpaces
        rest = rest[rest.endIndex...]
        pending = []
        guard !text.isEmpty else { throw UsageError("missing \(what)") }
        return text
    }

    /// Removes a trailing ` flag` (like `--merge`) and reports whether it was there.
    mutating func takeTrailingFlag(_ flag: String) -> Bool {
        let trimmed = Substring(rest.trimmingSpaces)
        guard trimmed.hasSuffix(" " + flag) || trimmed == flag else { return false }
        rest = trimmed.dropLast(flag.count)
        return true
    }

    func expectEnd() throws(UsageError) {
        let extra = ([String(rest)] + pending).joined(separator: " ").trimmingSpaces
        if !extra.isEmpty { throw UsageError("unexpected '\(extra)'") }
    }
}

/// One short form of the shell: `get customers/c1` instead of `{"op":"get","path":"customers/c1"}`.
/// `build` turns the words after the name into an action, using `id` for the request.
struct ShortForm: Sendable {
    let name: String
    let usage: String
    let summary: String
    let build: @Sendable (inout ShortFormArguments, Int) throws(UsageError) -> ShellAction
}

/// The shell's short forms, in help order. New ops slot in as entries here (a name, a usage line and a
/// builder from the words to a request); `query`, `count` and `listen` share `QuerySyntax`, and pushed
/// snapshots are printed by `ResponseRenderer.renderPush`.
enum ShortForms {
    static let all: [ShortForm] = [
        ShortForm(name: "get", usage: "get PATH [PATH...]", summary: "read documents") { a, id throws(UsageError) in
            let paths = a.words()
            guard !paths.isEmpty else { throw UsageError("missing PATH") }
            return .send(RequestBuilder.get(paths, id: id))
        },
        ShortForm(name: "set", usage: "set PATH JSON [--merge]", summary: "replace (or merge into) a document") { a, id throws(UsageError) in
            let path = try a.word("PATH")
            let merge = a.takeTrailingFlag("--merge")
            return .send(try RequestBuilder.set(path: path, data: try a.json("JSON"), merge: merge, id: id))
        },
        ShortForm(name: "create", usage: "create PATH JSON", summary: "create a document that must not exist") { a, id throws(UsageError) in
            let path = try a.word("PATH")
            return .send(try RequestBuilder.write("create", path: path, data: try a.json("JSON"), id: id))
        },
        ShortForm(name: "update", usage: "update PATH JSON", summary: "change fields (keys are field paths)") { a, id throws(UsageError) in
            let path = try a.word("PATH")
            return .send(try RequestBuilder.write("update", path: path, data: try a.json("JSON"), id: id))
        },
        ShortForm(name: "delete", usage: "delete PATH", summary: "delete a document") { a, id throws(UsageError) in
            let path = try a.word("PATH")
            try a.expectEnd()
            return .send(RequestBuilder.delete(path: path, id: id))
        },
        ShortForm(name: "add", usage: "add COLLECTION JSON", summary: "create a document with a new ID") { a, id throws(UsageError) in
            let collection = try a.word("COLLECTION")
            return .send(try RequestBuilder.add(collection: collection, data: try a.json("JSON"), id: id))
        },
        ShortForm(name: "commit", usage: "commit [WRITE, ...]", summary: "apply a JSON array of writes atomically") { a, id throws(UsageError) in
            .send(try RequestBuilder.commit(writes: try a.json("JSON array of writes"), id: id))
        },
        ShortForm(name: "query", usage: "query " + QuerySyntax.usage, summary: "run a query") { a, id throws(UsageError) in
            .send(try RequestBuilder.query("query", &a, id: id))
        },
        ShortForm(name: "count", usage: "count COLLECTION [where ...]", summary: "count a query's results") { a, id throws(UsageError) in
            .send(try RequestBuilder.query("count", &a, id: id))
        },
        ShortForm(name: "listen", usage: "listen PATH | listen COLLECTION [where ...]", summary: "subscribe; snapshots are printed as they arrive") { a, id throws(UsageError) in
            .send(try RequestBuilder.listen(&a, id: id))
        },
        ShortForm(name: "unlisten", usage: "unlisten SUB", summary: "end a subscription") { a, id throws(UsageError) in
            let sub = try a.word("SUB")
            try a.expectEnd()
            return .send(RequestBuilder.unlisten(sub: sub, id: id))
        },
        ShortForm(name: "ping", usage: "ping", summary: "check the daemon answers") { a, id throws(UsageError) in
            try a.expectEnd()
            return .send(RequestBuilder.bare("ping", id: id))
        },
        ShortForm(name: "ops", usage: "ops", summary: "list the daemon's ops") { a, id throws(UsageError) in
            try a.expectEnd()
            return .send(RequestBuilder.bare("help", id: id))
        },
        ShortForm(name: "help", usage: "help", summary: "show this help") { _, _ throws(UsageError) in .help },
        ShortForm(name: "quit", usage: "quit | exit", summary: "leave (Ctrl-D too)") { _, _ throws(UsageError) in .quit },
        ShortForm(name: "exit", usage: "", summary: "") { _, _ throws(UsageError) in .quit },
    ]

    /// Interprets one line: `{...}` is sent verbatim; otherwise the first word names a short form.
    static func parse(_ line: String, id: Int) throws(UsageError) -> ShellAction {
        let text = line.trimmingSpaces
        if text.isEmpty || text.hasPrefix("#") { return .nothing }
        if text.hasPrefix("{") { return .send(try RequestBuilder.raw(text)) }
        var args = ShortFormArguments(rest: Substring(text))
        let name = args.optionalWord()!
        guard let form = all.first(where: { $0.name == name }) else {
            throw UsageError("unknown command '\(name)' (type 'help')")
        }
        do {
            return try form.build(&args, id)
        } catch {
            throw UsageError("\(error.message); usage: \(form.usage)")
        }
    }

    static var helpText: String {
        var text = "Type a short form, or a raw JSON request starting with '{' (sent verbatim; add an \"id\" if you want one).\n\nShort forms:\n"
        for f in all where !f.usage.isEmpty { text += HelpFormat.row(f.usage, f.summary) }
        text += "\nExamples:\n  set customers/c1 {\"fullName\":\"Ada\",\"visits\":1}\n  update customers/c1 {\"visits\":{\"$increment\":1}}\n"
        text += "  query calls where customerId == c1 order by callDate desc limit 10\n"
        text += "  listen calls where customerId == c1\n"
        text += "  {\"op\":\"get\",\"path\":\"customers/c1\",\"id\":\"x\"}\n"
        text += "Pushed updates (lines with a \"type\") are printed as they arrive."
        return text
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line breaks.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}
