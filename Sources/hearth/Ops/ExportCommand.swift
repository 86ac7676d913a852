#if canImport(Glibc)
import Glibc
#endif
import HearthModel
import HearthProtocol

/// `hearth export`: pages through the daemon's `export` op, all at one seq, and writes NDJSON: a header line
/// `{"hearthExport":1,"seq":N,"scope":{...},"exportedAt":...}`, then each document exactly as the daemon
/// sent it, `{"path","data","createTime","updateTime"}`, one per line (docs/operations.md "Export and
/// import"). One page is held at a time; a progress line goes to standard error when it is a terminal.
enum ExportCommand {
    static let discussion = """
        Writes NDJSON to standard output (or --output FILE): a header line with the seq the export holds, \
        then one document per line with its typed values in their wire forms. Every page is read from one \
        snapshot of the daemon's store, so the export is exactly the database as of that seq whatever is \
        written meanwhile. --at-seq N insists on seq N: the export fails unless the database is at N when \
        it starts (for exports that must match a backup or another export of a quiet database). \
        Admin only while rules are enforced.
        """

    static let specs: [OptionSpec] = [
        .value("collection", "path", "Export only the documents directly in this collection."),
        .value("collection-group", "id", "Export the documents of every collection with this ID."),
        .value("at-seq", "n", "Fail unless the export is taken at this seq."),
        .value("output", "file", "Write to this file (created 0600, replaced when complete) instead of standard output."),
        .value("page", "n", "Documents per page (default 1000, at most 10000)."),
    ] + OptionSpec.connection

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let collection = args.string("collection"), group = args.string("collection-group")
        if collection != nil && group != nil { throw UsageError("--collection and --collection-group cannot be combined.") }
        let page = try args.int("page", default: 1000, min: 1, max: 10_000)
        var atSeq: UInt64?
        if args.string("at-seq") != nil { atSeq = UInt64(try args.int("at-seq", default: 0, min: 0)) }
        let output = try ExportOutput(path: args.string("output"))
        let client = try options.connect()
        let progress = Console.isTerminal(2) ? CountProgress(what: "export") : nil
        var seq = atSeq
        var after: String?
        var count = 0
        var id = 0
        repeat {
            id += 1
            var w = JSONWriter(capacity: 256)
            w.beginObject()
            w.key("op"); w.string("export")
            w.key("id"); w.int(Int64(id))
            if let collection { w.key("collection"); w.string(collection) }
            if let group { w.key("collectionGroup"); w.string(group) }
            if let seq { w.key("seq"); w.uint(seq) }
            if let after { w.key("after"); w.string(after) }
            w.key("limit"); w.int(Int64(page))
            w.endObject()
            try client.send(line: w.bytes)
            var response: ServerResponse
            repeat { response = ServerResponse(line: try client.readLine(timeout: options.timeout)) } while response.isPush
            guard response.ok, let members = RawJSON.members(response.line) else {
                output.abandon()
                progress?.finish()
                Console.error(ResponseRenderer.renderError(response))
                return ExitCode.serverError
            }
            let line = response.line
            if id == 1 {
                let s = UInt64(response.root?["seq"]?.int64 ?? 0)
                seq = s
                try output.write(header(seq: s, collection: collection, group: group))
            }
            if let docs = members.first(where: { $0.key == "docs" }) {
                for r in RawJSON.elements(line, in: docs.value) {
                    try output.write(Array(line[r]))
                    count += 1
                }
            }
            after = response.root?["next"]?.string
            progress?.update(count)
        } while after != nil
        try output.finish()
        progress?.finish()
        if output.path != nil { Console.error("export: \(NumberText.grouped(count)) documents at seq \(seq ?? 0) written to \(output.path!)") }
        return ExitCode.ok
    }

    static func header(seq: UInt64, collection: String?, group: String?) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("hearthExport"); w.int(1)
        w.key("seq"); w.uint(seq)
        w.key("scope")
        w.beginObject()
        if let collection { w.key("collection"); w.string(collection) }
        if let group { w.key("collectionGroup"); w.string(group) }
        w.endObject()
        w.key("exportedAt"); w.string(Timestamp(micros: Int64(Clock.wallMicros())).rfc3339)
        w.key("version"); w.string(HearthCLI.version)
        w.endObject()
        return w.bytes
    }
}

/// Where an export goes: standard output, or a file written as `FILE.partial` (0600) and renamed to FILE
/// once complete, so an interrupted export never leaves a file that looks whole.
final class ExportOutput {
    let path: String?
    private let file: UnsafeMutablePointer<FILE>

    init(path: String?) throws {
        self.path = path
        guard let path else { file = fdopen(dup(1), "w")!; return }
        let fd = open(path + ".partial", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0, let f = fdopen(fd, "w") else {
            throw OpsError("cannot write \(path).partial: \(String(cString: strerror(errno)))")
        }
        file = f
    }

    /// One line (a newline is added).
    func write(_ line: [UInt8]) throws {
        let ok = line.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) == $0.count } && fputc(10, file) != EOF
        guard ok else { throw OpsError("writing the export: \(String(cString: strerror(errno)))") }
    }

    func finish() throws {
        guard fflush(file) == 0 else { throw OpsError("writing the export: \(String(cString: strerror(errno)))") }
        guard let path else { fclose(file); return }
        _ = fsync(fileno(file))
        fclose(file)
        guard rename(path + ".partial", path) == 0 else {
            throw OpsError("renaming \(path).partial to \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// An export that failed: a file output is removed.
    func abandon() {
        fflush(file)
        guard let path else { return }
        fclose(file)
        _ = unlink(path + ".partial")
    }
}

/// `\\r<what>: N documents (R/s)` on standard error, at most 5 times a second.
final class CountProgress {
    let what: String
    private let started = Clock.nanos()
    private var lastShown: UInt64 = 0

    init(what: String) { self.what = what }

    func update(_ count: Int, force: Bool = false) {
        let now = Clock.nanos()
        guard force || now - lastShown >= 200_000_000 else { return }
        lastShown = now
        let seconds = Double(now - started) / 1e9
        let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
        Console.status("\r\(what): \(NumberText.grouped(count)) documents (\(NumberText.grouped(rate))/s)   ")
    }

    func finish() { Console.status("\n") }
}

/// A local failure of an operations command (a file it cannot read or write, a malformed export file):
/// exit code 1 with the message.
struct OpsError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

extension Clock {
    /// Wall-clock time in microseconds since the Unix epoch.
    static func wallMicros() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000 &+ UInt64(ts.tv_nsec / 1000)
    }
}
