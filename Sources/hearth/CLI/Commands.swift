/// The `hearth` subcommands. Document subcommands build one request and hand it to `OneShot`; `shell` and
/// `bench` have their own drivers. Every subcommand accepts `--help` and the connection options.
enum Commands {
    /// `a,`b,c`,d` → `a`, `` `b,c` ``, `d`: field paths split at the commas outside backticks (a backtick-quoted
    /// name may hold a comma; a backslash escapes the next character inside one, as in a field path).
    static func fieldPathList(_ text: String) -> [String] {
        var out: [String] = []
        var current = ""
        var quoted = false, escaped = false
        for c in text {
            if escaped { current.append(c); escaped = false; continue }
            switch c {
            case "\\" where quoted: escaped = true; current.append(c)
            case "`": quoted.toggle(); current.append(c)
            case "," where !quoted: out.append(current); current = ""
            default: current.append(c)
            }
        }
        out.append(current)
        return out.filter { !$0.isEmpty }
    }

    static let jsonFlag = OptionSpec.flag("json", "Print the raw response line instead of readable text.")
    static let common = OptionSpec.connection + [jsonFlag]

    static let all: [Subcommand] = [
        Subcommand(name: "get", abstract: "Read one document (or several, with getAll).",
                   discussion: "Prints the document's path, create and update times, and its data. A missing document prints '<path>: not found' and exits 0.",
                   positionals: [PositionalSpec(name: "path", help: "Document path, e.g. customers/c1. Several paths read them in one getAll.", variadic: true)],
                   options: common) { a in
            try OneShot.run(RequestBuilder.get(a.positionals, id: 1), a)
        },
        Subcommand(name: "set", abstract: "Replace a document, or merge into it.",
                   positionals: [PositionalSpec(name: "path", help: "Document path."),
                                 PositionalSpec(name: "json", help: "The data, a JSON object (typed values like {\"$timestamp\":...} and sentinels like {\"$serverTimestamp\":true} pass through).")],
                   options: [.flag("merge", "Merge the given fields into the existing document."),
                             .value("merge-fields", "fields", "Merge only these comma-separated field paths (a comma inside backticks is part of a name: '`a,b`,c').")] + common) { a in
            let fields = a.string("merge-fields").map(Self.fieldPathList)
            if let fields, fields.isEmpty { throw UsageError("--merge-fields needs at least one field path.") }
            return try OneShot.run(RequestBuilder.set(path: a.positionals[0], data: a.positionals[1], merge: a.flag("merge"),
                                                      mergeFields: fields, id: 1), a)
        },
        Subcommand(name: "create", abstract: "Create a document; fails with ALREADY_EXISTS if it exists.",
                   positionals: [PositionalSpec(name: "path", help: "Document path."), PositionalSpec(name: "json", help: "The data, a JSON object.")],
                   options: common) { a in
            try OneShot.run(RequestBuilder.write("create", path: a.positionals[0], data: a.positionals[1], id: 1), a)
        },
        Subcommand(name: "update", abstract: "Change fields of an existing document; fails with NOT_FOUND if it is absent.",
                   discussion: "Keys of the JSON object are field paths: {\"address.city\":\"Paris\"} changes one nested field.",
                   positionals: [PositionalSpec(name: "path", help: "Document path."), PositionalSpec(name: "json", help: "Field paths and their new values, a JSON object.")],
                   options: common) { a in
            try OneShot.run(RequestBuilder.write("update", path: a.positionals[0], data: a.positionals[1], id: 1), a)
        },
        Subcommand(name: "delete", abstract: "Delete a document (succeeds when it is already absent); --recursive deletes a whole subtree.",
                   discussion: "With --recursive, PATH is a collection or a document: it and everything below it are deleted in batches (ordinary commits: listeners see them), with progress. Needs the admin when rules are enforced.",
                   positionals: [PositionalSpec(name: "path", help: "Document path (with --recursive: a collection or document path).")],
                   options: [.flag("recursive", "Delete the collection or document and everything below it, in batches."),
                             .value("batch-size", "n", "With --recursive: documents per commit (1-500, default 500).")] + common) { a in
            if a.flag("recursive") { return try AdminCommands.deleteRecursive(a) }
            if a.string("batch-size") != nil { throw UsageError("--batch-size needs --recursive.") }
            return try OneShot.run(RequestBuilder.delete(path: a.positionals[0], id: 1), a)
        },
        Subcommand(name: "add", abstract: "Create a document with a new 20-character ID in a collection.",
                   positionals: [PositionalSpec(name: "collection", help: "Collection path, e.g. customers."),
                                 PositionalSpec(name: "json", help: "The data, a JSON object.")], options: common) { a in
            try OneShot.run(RequestBuilder.add(collection: a.positionals[0], data: a.positionals[1], id: 1), a)
        },
        Subcommand(name: "commit", abstract: "Apply several writes atomically.",
                   discussion: "Example: hearth commit '[{\"op\":\"set\",\"path\":\"a/1\",\"data\":{\"n\":1}},{\"op\":\"delete\",\"path\":\"a/2\"}]'",
                   positionals: [PositionalSpec(name: "writes", help: "A JSON array of writes: {op: set|create|update|delete|verify, path, data, ...}.")],
                   options: common) { a in
            try OneShot.run(RequestBuilder.commit(writes: a.positionals[0], id: 1), a)
        },
        Subcommand(name: "query", abstract: "Run a query written as words.",
                   discussion: "Example: hearth query calls where customerId == c1 order by callDate desc limit 10\nValues are JSON (\"c1\", 30, true, [1,2], {\"$timestamp\":\"...\"}) or bare words (strings). Raw queries: hearth send '{\"op\":\"query\",...}'.",
                   positionals: [PositionalSpec(name: "query", help: QuerySyntax.usage, variadic: true)], options: common) { a in
            var words = ShortFormArguments(arguments: a.positionals)
            return try OneShot.run(RequestBuilder.query("query", &words, id: 1), a)
        },
        Subcommand(name: "count", abstract: "Count the results of a query written as words.",
                   positionals: [PositionalSpec(name: "query", help: QuerySyntax.usage, variadic: true)], options: common) { a in
            var words = ShortFormArguments(arguments: a.positionals)
            return try OneShot.run(RequestBuilder.query("count", &words, id: 1), a)
        },
        Subcommand(name: "listen", abstract: "Subscribe to a document or a query and print snapshots as they arrive.",
                   discussion: "A path with an even number of segments listens to that document; otherwise the words are a query: hearth listen calls where customerId == c1. Runs until --events snapshots were printed or it is interrupted.",
                   positionals: [PositionalSpec(name: "target", help: "PATH, or " + QuerySyntax.usage, variadic: true)],
                   options: [.value("events", "n", "Exit after this many pushed lines.")] + common) { a in
            var words = ShortFormArguments(arguments: a.positionals)
            return try ListenCommand.run(RequestBuilder.listen(&words, id: 1), a)
        },
        Subcommand(name: "ping", abstract: "Check that the daemon answers; prints its durable seq and the round trip.",
                   options: common) { a in
            try OneShot.run(RequestBuilder.bare("ping", id: 1), a)
        },
        Subcommand(name: "ops", abstract: "List the ops the daemon understands (the protocol's help op).",
                   options: common) { a in
            try OneShot.run(RequestBuilder.bare("help", id: 1), a)
        },
        Subcommand(name: "send", abstract: "Send one raw request line and print the response.",
                   discussion: "The line is sent verbatim, e.g. hearth send '{\"op\":\"get\",\"path\":\"a/b\",\"id\":7}'.",
                   positionals: [PositionalSpec(name: "line", help: "One JSON request object.")], options: common) { a in
            try OneShot.run(RequestBuilder.raw(a.positionals[0]), a)
        },
        Subcommand(name: "shell", abstract: "Interactive session: short forms or raw JSON lines; shows pushed updates as they arrive.",
                   discussion: "Type 'help' in the shell for its commands. Reads piped input too: echo 'get a/b' | hearth shell",
                   options: OptionSpec.connection + [.flag("json", "Print raw response lines instead of readable text.")]) { a in
            try Shell.run(a)
        },
        Subcommand(name: "migrate", abstract: "Data migrations: 'migrate departments' backfills departmentName/departmentId or drops the legacy name.", discussion: MigrateDepartments.discussion, positionals: [PositionalSpec(name: "migration", help: "The migration to run: departments.")], options: MigrateDepartments.specs) { a in try MigrateDepartments.run(a) },
        Subcommand(name: "check", abstract: "Check a stopped daemon's data dir for damage: checksums, SQLite integrity, index entries.",
                   discussion: CheckCommand.discussion, options: CheckCommand.specs) { a in
            try CheckCommand.run(a)
        },
        Subcommand(name: "rules", abstract: "Firestore Security Rules tools: 'rules check FILE' compiles a rules file offline; 'rules test CASES' runs allow/deny cases against a daemon.",
                   discussion: RulesCommand.discussion,
                   positionals: [PositionalSpec(name: "action", help: "check or test"),
                                 PositionalSpec(name: "file", help: "The rules file (check) or the JSON file of cases (test).", variadic: true)],
                   options: OptionSpec.connection) { a in
            try RulesCommand.run(a)
        },
        Subcommand(name: "backup", abstract: "Copy the daemon's store online into a new data directory, at one seq.",
                   discussion: BackupCommand.discussion,
                   positionals: [PositionalSpec(name: "dir", help: "The new data directory, on the daemon's host.")], options: common) { a in
            try BackupCommand.run(a)
        },
        Subcommand(name: "export", abstract: "Write documents as NDJSON (a header line with the seq, then one document per line).",
                   discussion: ExportCommand.discussion, options: ExportCommand.specs) { a in
            try ExportCommand.run(a)
        },
        Subcommand(name: "import", abstract: "Write the documents of an export file back, in batches; resumable.",
                   discussion: ImportCommand.discussion,
                   positionals: [PositionalSpec(name: "file", help: "The export file ('-': standard input).")],
                   options: ImportCommand.specs) { a in
            try ImportCommand.run(a)
        },
        Subcommand(name: "top", abstract: "Live view of the daemon's figures (rates, p50/p99, connections, commits, memory), refreshed every second.",
                   discussion: TopCommand.discussion,
                   options: [.flag("once", "Print one frame and exit (for scripts and tests)."),
                             .value("interval", "seconds", "Seconds between refreshes (default 1).")] + OptionSpec.connection) { a in
            try TopCommand.run(a)
        },
        Subcommand(name: "stats", abstract: "Print the daemon's figures once (the stats op).",
                   options: common) { a in
            try OneShot.run(RequestBuilder.bare("stats", id: 1), a)
        },
        Subcommand(name: "index", abstract: "Composite indexes: 'index create COLLECTION FIELD:MODE...', 'index list', 'index drop ID', 'index wait ID'.",
                   discussion: AdminCommands.indexDiscussion,
                   positionals: [PositionalSpec(name: "action", help: "create, list, drop or wait"),
                                 PositionalSpec(name: "args", help: "create: COLLECTION FIELD:asc|desc|array-contains ...; drop, wait: ID", optional: true, variadic: true)],
                   options: [.flag("collection-group", "create: a collection-group index (default: collection scope)."),
                             .value("wait-timeout", "seconds", "wait: give up after this many seconds (default 600).")] + common) { a in
            try AdminCommands.index(a)
        },
        Subcommand(name: "collections", abstract: "List the root collections, or the subcollections of a document.",
                   positionals: [PositionalSpec(name: "document", help: "A document path; without it, the root collections.", optional: true)],
                   options: common) { a in
            try AdminCommands.collections(a)
        },
        Subcommand(name: "ttl", abstract: "TTL policies: 'ttl set GROUP FIELD', 'ttl remove GROUP', 'ttl list'.",
                   discussion: "Documents of the collection group whose FIELD holds a timestamp in the past are deleted by the daemon some time after that moment (within about --ttl-sweep-ms), as ordinary deletes that listeners see.",
                   positionals: [PositionalSpec(name: "action", help: "set, remove or list"),
                                 PositionalSpec(name: "args", help: "set: GROUP FIELD; remove: GROUP", optional: true, variadic: true)],
                   options: common) { a in
            try AdminCommands.ttl(a)
        },
        Subcommand(name: "compact", abstract: "Give the space of deleted data back to the filesystem (online).",
                   options: common) { a in
            try AdminCommands.compact(a)
        },
        Subcommand(name: "bench", abstract: "Load generator: measure throughput and latency of the daemon.",
                   discussion: BenchOptions.discussion,
                   positionals: [PositionalSpec(name: "scenario", help: BenchOptions.scenarioHelp)],
                   options: BenchOptions.specs) { a in
            try BenchRunner.run(a)
        },
    ]
}
