#if canImport(Glibc)
import Glibc
#endif
import HearthProtocol

/// `hearth import FILE`: writes the documents of an export file (`ExportCommand`'s NDJSON) back in
/// batches of `commit`s, a few in flight at once, each document's `data` sent exactly as the file holds
/// it. Resumable: after every acknowledged batch a checkpoint file (`FILE.checkpoint`, or `--checkpoint`)
/// records how many document lines are durable; `--resume` skips them. The checkpoint is removed once
/// the whole file is in.
enum ImportCommand {
    static let discussion = """
        Reads an export file (the header line, then one {"path","data",...} per line; '-' reads standard \
        input) and writes the documents in atomic batches. --mode overwrite (the default) replaces \
        documents that exist; --mode create refuses them (ALREADY_EXISTS ends the import). Documents get \
        new create and update times (the commit's); their data is written exactly as in the file. \
        After each acknowledged batch the checkpoint file records the lines done; after an interruption, \
        run the same command with --resume to go on from there (in create mode, documents of the batch \
        that was in flight and already written are skipped and counted). --rate N paces the import at \
        about N documents a second.
        """

    /// The most bytes of documents one commit carries: half the daemon's default --max-line-bytes (16 MiB), so
    /// a batch's line stays within it with room for the largest document (1 MiB) on top.
    static let maxBatchBytes = 8 << 20

    static let specs: [OptionSpec] = [
        .value("mode", "mode", "overwrite (default): set each document; create: fail on a document that exists."),
        .value("batch", "n", "Documents per commit (default 500, at most 500; a batch also ends before 8 MiB)."),
        .value("rate", "n", "At most about N documents a second (default: as fast as the daemon takes them)."),
        .flag("resume", "Go on from the checkpoint of an interrupted import of the same file."),
        .value("checkpoint", "file", "The checkpoint file (default: FILE.checkpoint)."),
    ] + OptionSpec.connection

    static let inFlight = 4

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let path = args.positionals[0]
        let mode = args.string("mode") ?? "overwrite"
        guard mode == "overwrite" || mode == "create" else { throw UsageError("--mode must be overwrite or create, not '\(mode)'.") }
        let batchSize = try args.int("batch", default: 500, min: 1, max: 500)
        let rate = try args.double("rate", default: nil, min: 1)
        let stdin = path == "-"
        let checkpointPath = args.string("checkpoint") ?? (stdin ? nil : path + ".checkpoint")
        if args.flag("resume") && checkpointPath == nil { throw UsageError("--resume needs a file (or --checkpoint), not standard input.") }
        let checkpoint = checkpointPath.map { ImportCheckpoint(path: $0) }
        var skip = 0
        if let checkpoint {
            let saved = try checkpoint.load()
            if args.flag("resume") {
                skip = saved ?? 0
            } else if saved != nil {
                throw UsageError("\(checkpoint.path) holds the checkpoint of an interrupted import: pass --resume to go on, or delete it to start over.")
            }
        }
        let reader = try LineReader(path: stdin ? nil : path)
        guard let headerLine = try reader.next() else { throw OpsError("\(path) is empty: an export file starts with its header line") }
        let parser = JSONParser()
        guard let header = try? parser.parse(headerLine), header["hearthExport"]?.int64 == 1 else {
            throw OpsError("\(path):1: not a Hearth export header (expected {\"hearthExport\":1,\"seq\":...})")
        }
        let client = try options.connect()
        let progress = Console.isTerminal(2) ? CountProgress(what: "import") : nil
        var session = ImportSession(client: client, timeout: options.timeout, op: mode == "create" ? "create" : "set")
        if skip > 0 { session.tolerantBatches = inFlight }
        var lineNumber = 1
        var documents = 0
        var batch: [ImportSession.Document] = []
        var batchBytes = 0
        let started = Clock.nanos()
        func flush(endingAt end: Int) throws {
            guard !batch.isEmpty else { return }
            try session.send(batch, endsAt: end)
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
            while session.pending >= inFlight { try session.receiveOne() }
            if let done = session.durable, let checkpoint { try checkpoint.save(done) }
            progress?.update(session.durable ?? 0)
            if let rate {
                let due = Double(documents - skip) / rate
                let elapsed = Double(Clock.nanos() - started) / 1e9
                if due > elapsed { usleep(UInt32(min(due - elapsed, 60) * 1e6)) }
            }
        }
        while let line = try reader.next() {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            documents += 1
            if documents <= skip { continue }
            guard let members = RawJSON.members(line), (try? parser.parse(line)) != nil,
                  let p = members.first(where: { $0.key == "path" }), let d = members.first(where: { $0.key == "data" }),
                  line[d.value.lowerBound] == UInt8(ascii: "{"), line[p.value.lowerBound] == UInt8(ascii: "\"") else {
                throw OpsError("\(path):\(lineNumber): not a document line (expected {\"path\":...,\"data\":{...},...})")
            }
            // A commit is one request line: a batch also ends before it would outgrow `maxBatchBytes` (large
            // documents), so that its line stays within the daemon's --max-line-bytes.
            let bytes = line[p.value].count + line[d.value].count + 40
            if !batch.isEmpty && batchBytes + bytes > Self.maxBatchBytes { try flush(endingAt: documents - 1) }
            batch.append(.init(path: Array(line[p.value]), data: Array(line[d.value]), line: lineNumber))
            batchBytes += bytes
            if batch.count >= batchSize { try flush(endingAt: documents) }
        }
        try flush(endingAt: documents)
        while session.pending > 0 { try session.receiveOne() }
        progress?.update(session.durable ?? documents, force: true)
        progress?.finish()
        try checkpoint?.remove()
        let written = documents - skip - session.alreadyPresent
        var summary = "import: \(NumberText.grouped(written)) documents written"
        if skip > 0 { summary += " after the \(NumberText.grouped(skip)) of the checkpoint" }
        if session.alreadyPresent > 0 { summary += ", \(NumberText.grouped(session.alreadyPresent)) already present (skipped)" }
        Console.error(summary)
        return ExitCode.ok
    }
}
