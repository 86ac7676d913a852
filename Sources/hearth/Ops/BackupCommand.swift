#if canImport(Glibc)
import Glibc
#endif
import HearthProtocol

/// `hearth backup DIR`: asks the daemon for an online backup into DIR (on the daemon's host; a relative
/// DIR is made absolute against the current directory), shows its progress on a terminal, and prints the
/// seq the backup holds.
enum BackupCommand {
    static let discussion = """
        The daemon copies its store, as of one seq, into DIR while it keeps serving: the result is a data \
        directory 'hearthd --data-dir DIR' starts on as it is. DIR is on the daemon's host (it writes the \
        files) and must be new or hold no store (no hearth.db, no LOCK); a relative DIR is taken from this shell's current directory. \
        Admin only while rules are enforced. Restore: stop the daemon, move the data directory away, move \
        DIR in its place, start (docs/operations.md "Backup and restore").
        """

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let dir = absolute(args.positionals[0])
        let client = try options.connect()
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string("backup")
        w.key("id"); w.int(1)
        w.key("dir"); w.string(dir)
        w.endObject()
        try client.send(line: w.bytes)
        let showProgress = Console.isTerminal(2) && !args.flag("json")
        // Progress lines arrive while pages are copied, but the wait for the applier before the copy and the
        // last sync may take minutes on a large store: the longest silence allowed is --timeout when given,
        // else 600 s.
        let silence = args.string("timeout") != nil ? options.timeout : max(options.timeout, 600)
        while true {
            let response = ServerResponse(line: try client.readLine(timeout: silence))
            if response.isPush {
                if showProgress, let done = response.root?["done"]?.int64, let total = response.root?["total"]?.int64 {
                    let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
                    Console.status("\rbackup: \(NumberText.fixed(percent, 1))% (\(NumberText.grouped(Int(done)))/\(NumberText.grouped(Int(total))) pages)")
                }
                continue
            }
            if showProgress { Console.status("\n") }
            if args.flag("json") {
                Console.line(response.text)
                return response.ok ? ExitCode.ok : ExitCode.serverError
            }
            guard response.ok, let root = response.root else {
                Console.error(ResponseRenderer.renderError(response))
                return ExitCode.serverError
            }
            let seq = root["seq"]?.int64 ?? 0
            let bytes = Int(root["bytes"]?.int64 ?? 0)
            let micros = Double(root["micros"]?.int64 ?? 0)
            Console.line("backup: \(dir) holds seq \(seq) (\(NumberText.mebibytes(bytes)), \(NumberText.fixed(micros / 1e6, 2)) s)")
            return ExitCode.ok
        }
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(cString: buffer)
        return cwd.hasSuffix("/") ? cwd + path : cwd + "/" + path
    }
}
