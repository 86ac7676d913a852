#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthCheck
import HearthStorageSQLite

/// `hearth check`: checks a stopped daemon's data directory offline (HearthCheck's `StoreCheck`, the same check
/// `hearthd --check` runs at start). Prints each problem on stdout, then a summary; progress goes to stderr
/// when it is a terminal. Exit codes: 0 no damage, 1 damage found, 2 usage, 3 the store could not be opened or
/// read.
enum CheckCommand {
    static let discussion = """
        Checks the store in a data directory while hearthd is stopped: SQLite's integrity check, every \
        document's and every change-log entry's checksum, that every document decodes, and that index \
        entries and documents agree (every entry points at an existing document that produces it, every \
        document has its entries). Prints each problem with the document it concerns, then a summary. \
        Exit code 0 when no damage is found, 1 when some is, 3 when the store cannot be opened. The store is \
        opened as hearthd opens it: a store of an older schema version is upgraded first, and commits its \
        commit log holds that hearth.db lacks (a crash) are applied, as the next start would (a log damaged \
        before its end makes the open fail: exit 3); nothing else is written. See docs/operations.md.
        """

    static let specs: [OptionSpec] = [
        .value("data-dir", "dir", "The data directory hearthd was started with (default: ./data)."),
        .flag("quiet", "Print nothing but problems and the summary (no progress, even on a terminal).", short: "q"),
    ]

    static func run(_ a: ParsedArguments) throws -> Int32 {
        let dir = a.string("data-dir") ?? "./data"
        let file = dir + "/" + SQLiteStore.fileName
        // Opening would create an empty store: a missing one is an error here (DATA_LOSS, as the daemon says,
        // when the directory's commit log shows it held one).
        guard access(file, F_OK) == 0 else {
            if let lost = SQLiteStore.refusalOfANewStore(file, in: dir, creating: false), lost.code == .dataLoss {
                Console.error("error: cannot open \(file): \(lost)")
            } else {
                Console.error("error: no Hearth store in \(dir) (\(file) does not exist)")
            }
            return ExitCode.connection
        }
        let store: SQLiteStore
        // Never creates a store: a database without one is refused (DATA_LOSS when the directory held one).
        do { store = try SQLiteStore(directory: dir, creating: false) } catch {
            Console.error("error: cannot open \(file): \(error)")
            return ExitCode.connection
        }
        defer { store.close() }
        // Opening applied whatever the commit log held that hearth.db lacked, as a start of the daemon would.
        if let line = store.recovery?.summary { Console.error(line) }
        let showProgress = !a.flag("quiet") && Console.isTerminal(2)
        var lastPhase: StoreCheck.Phase?
        let progress: StoreCheck.Progress? = showProgress ? { phase, done, total in
            if let last = lastPhase, last != phase { Console.status("\n") }
            lastPhase = phase
            let percent = total > 0 ? done * 100 / total : 100
            Console.status("\r\u{1B}[Kchecking \(phase.rawValue): \(NumberText.grouped(done)) of \(NumberText.grouped(total)) (\(percent)%)")
        } : nil
        let report: CheckReport
        do { report = try StoreCheck(store: store, dataDir: dir).run(progress: progress) } catch {
            if showProgress { Console.status("\n") }
            Console.error("error: the check of \(file) stopped: \(error)")
            return ExitCode.connection
        }
        if showProgress { Console.status("\n") }
        for p in report.problems { Console.line("DAMAGE \(p)") }
        if report.unlistedProblems > 0 { Console.line("DAMAGE and \(report.unlistedProblems) more problems not listed") }
        Console.line("\(file): \(report.summary)")
        return report.isClean ? ExitCode.ok : ExitCode.serverError
    }
}
