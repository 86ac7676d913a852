#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel
import HearthProtocol

/// `hearth migrate departments`: the backfill and cleanup steps of the `name` → `departmentName` rename
/// (docs/guides/departments.md). Pages through the collection in document-ID order with `startAfter`
/// cursors; each page's changes go out as ONE `commit` of `update`s, each guarded by the `updateTime` the
/// page read, so a document edited concurrently is never overwritten: the commit fails with
/// FAILED_PRECONDITION, the page is re-read and retried (at most `maxAttempts` times).
enum MigrateDepartments {
    enum Step: String { case backfill, dropLegacy = "drop-legacy" }

    static let maxAttempts = 5
    static let maxPage = 500 // one commit per page: pages stay short so other writers are not held up

    static let discussion = """
    Steps of the name -> departmentName rename (see docs/guides/departments.md):
      backfill     copy name into departmentName where it is missing, and set departmentId to the
                   document ID where it is missing.
      drop-legacy  remove name where departmentName is present and equal to it; documents where the two
                   differ (or departmentName is missing) are listed and left alone.
    Pages through the collection by document ID; each page is one commit whose updates carry an updateTime
    precondition, so a concurrent edit is never overwritten (the page is re-read and retried).
    Example: hearth migrate departments --step backfill --dry-run
    Exit codes: 0 done, 1 server error (the resume command is printed), 2 usage, 3 connection failure,
    130 interrupted (after the current page; the resume command is printed).
    """

    static let specs: [OptionSpec] = [
        .value("step", "step", "backfill or drop-legacy (required)."),
        .value("collection", "path", "Collection to migrate (default: departments)."),
        .value("page", "n", "Documents per page and per commit, 1 to 500 (default: 200)."),
        .flag("dry-run", "Report what would change without writing."),
        .value("resume-after", "id", "Start after this document ID (as printed when a run stops)."),
    ] + OptionSpec.connection

    struct Settings {
        var step: Step
        var collection: String
        var page: Int
        var dryRun: Bool
        var resumeAfter: String?
        var connection: ConnectionOptions
    }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard args.positionals.count == 1, args.positionals[0] == "departments" else {
            throw UsageError("Unknown migration '\(args.positionals.joined(separator: " "))'; the only one is 'departments'.")
        }
        guard let stepText = args.string("step") else { throw UsageError("Missing '--step backfill|drop-legacy'.") }
        guard let step = Step(rawValue: stepText) else {
            throw UsageError("--step must be backfill or drop-legacy (got '\(stepText)').")
        }
        let collection = args.string("collection") ?? "departments"
        let segments = collection.split(separator: "/", omittingEmptySubsequences: false)
        guard !collection.isEmpty, segments.count % 2 == 1, !segments.contains(where: { $0.isEmpty }) else {
            throw UsageError("--collection must be a collection path such as departments (got '\(collection)').")
        }
        let page = try args.int("page", default: 200, min: 1, max: maxPage)
        if let r = args.string("resume-after"), r.isEmpty { throw UsageError("--resume-after must not be empty.") }
        let settings = Settings(step: step, collection: collection, page: page, dryRun: args.flag("dry-run"),
                                resumeAfter: args.string("resume-after"), connection: try ConnectionOptions(args))
        var migration = Migration(settings: settings)
        return try migration.run()
    }
}

/// SIGINT sets a flag; the migration stops after the page in progress.
nonisolated(unsafe) private var interrupted: sig_atomic_t = 0

/// One document of a page, as far as the migration cares.
struct PageDocument {
    let id: String
    let updateTime: String
    let name: Value?
    let departmentName: Value?
    let hasDepartmentId: Bool
}

/// What one page will write, or would write in a dry run.
struct PagePlan {
    var writes: [[UInt8]] = []
    var changedIDs: [String] = []
    /// drop-legacy: documents left alone, with why.
    var skipped: [String] = []
}

struct Migration {
    let settings: MigrateDepartments.Settings
    private var nextRequestId: Int64 = 1

    init(settings: MigrateDepartments.Settings) { self.settings = settings }

    private var verb: String { settings.dryRun ? "would update" : "updated" }

    mutating func run() throws -> Int32 {
        let client = try settings.connection.connect()
        var handler = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in interrupted = 1 }
        sigaction(SIGINT, &handler, nil)

        var after = settings.resumeAfter
        var pageNumber = 0
        var scanned = 0, changed = 0, retries = 0
        var skipped: [String] = []
        let mode = settings.dryRun ? " (dry run: nothing is written)" : ""
        Console.line("migrate \(settings.collection): step \(settings.step.rawValue), \(settings.page) per page" +
                     (after.map { ", resuming after \($0)" } ?? "") + mode)
        Console.flush()
        while true {
            pageNumber += 1
            var attempt = 0
            var docs: [PageDocument]
            var plan: PagePlan
            while true {
                attempt += 1
                do {
                    docs = try readPage(client, after: after)
                } catch let error as ServerFailure {
                    return fail("page \(pageNumber): query failed: \(error.code): \(error.message)", resumeAfter: after)
                }
                plan = self.plan(docs)
                if settings.dryRun || plan.writes.isEmpty { break }
                if attempt == 1 { TestHook.beforeFirstCommit(settings.connection) }
                guard let failure = try commit(client, plan.writes) else { break }
                let retryable = ["FAILED_PRECONDITION", "ABORTED", "NOT_FOUND"].contains(failure.code)
                guard retryable, attempt < MigrateDepartments.maxAttempts else {
                    return fail("page \(pageNumber): commit failed after \(attempt) attempt(s): \(failure.code): \(failure.message)",
                                resumeAfter: after)
                }
                retries += 1
                Console.line("page \(pageNumber): \(failure.code) (a document changed since it was read); re-reading the page, attempt \(attempt + 1) of \(MigrateDepartments.maxAttempts)")
                Console.flush()
            }
            guard let last = docs.last else { pageNumber -= 1; break }
            scanned += docs.count
            changed += plan.changedIDs.count
            skipped += plan.skipped
            for s in plan.skipped { Console.line("  left alone: \(s)") }
            if settings.dryRun && !plan.changedIDs.isEmpty {
                Console.line("  would update: " + plan.changedIDs.joined(separator: " "))
            }
            Console.line("page \(pageNumber): \(docs.count) scanned, \(plan.changedIDs.count) \(verb), last id \(last.id)")
            Console.flush()
            after = last.id
            if docs.count < settings.page { break }
            if interrupted != 0 {
                Console.error("interrupted after page \(pageNumber) (last id \(last.id)).")
                Console.error("resume with: \(resumeCommand(after: last.id))")
                return 130
            }
        }
        let leftAlone = settings.step == .dropLegacy ? ", \(skipped.count) left alone" : ""
        Console.line("done\(settings.dryRun ? " (dry run)" : ""): \(pageNumber) page(s), \(scanned) scanned, \(changed) \(verb)" +
                     "\(leftAlone), \(retries) retried page(s)")
        return ExitCode.ok
    }

    /// Prints the error and the command that continues after the last completed page; exit 1.
    private func fail(_ message: String, resumeAfter: String?) -> Int32 {
        Console.error("error: \(message)")
        if let resumeAfter {
            Console.error("resume with: \(resumeCommand(after: resumeAfter))")
        } else {
            Console.error("no page was completed; rerun: \(resumeCommand(after: nil))")
        }
        return ExitCode.serverError
    }

    func resumeCommand(after: String?) -> String {
        var parts = ["hearth", "migrate", "departments", "--step", settings.step.rawValue]
        if settings.collection != "departments" { parts += ["--collection", shellQuote(settings.collection)] }
        if settings.page != 200 { parts += ["--page", String(settings.page)] }
        if settings.dryRun { parts.append("--dry-run") }
        if settings.connection.host != "127.0.0.1" { parts += ["--host", shellQuote(settings.connection.host)] }
        if settings.connection.port != 7411 { parts += ["--port", String(settings.connection.port)] }
        if let tls = settings.connection.tls { parts += tls.arguments.map(shellQuote) }
        if let after { parts += ["--resume-after", shellQuote(after)] }
        return parts.joined(separator: " ")
    }

    private func shellQuote(_ s: String) -> String {
        let safe = s.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 95 || c == 46 || c == 47
        }
        return safe ? s : "'" + s.replacingOccurrences("'", "'\\''") + "'"
    }

    // MARK: Requests

    struct ServerFailure: Error { let code: String; let message: String }

    private mutating func requestId() -> Int64 {
        defer { nextRequestId += 1 }
        return nextRequestId
    }

    /// Sends one request and returns its response (pushed lines are skipped; none are expected).
    private func roundTrip(_ client: BlockingClient, _ line: [UInt8]) throws(ClientError) -> ServerResponse {
        try client.send(line: line)
        while true {
            let response = ServerResponse(line: try client.readLine(timeout: settings.connection.timeout))
            if !response.isPush { return response }
        }
    }

    /// The next page: documents ordered by `__name__` after `after`.
    private mutating func readPage(_ client: BlockingClient, after: String?) throws -> [PageDocument] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string("query")
        w.key("id"); w.int(requestId())
        w.key("collection"); w.string(settings.collection)
        w.key("orderBy"); w.beginArray(); w.string("__name__"); w.endArray()
        if let after { w.key("startAfter"); w.beginArray(); w.string(after); w.endArray() }
        w.key("limit"); w.int(Int64(settings.page))
        w.endObject()
        let response = try roundTrip(client, w.bytes)
        guard response.ok, let list = response.root?["docs"], list.isArray else {
            throw ServerFailure(code: response.errorCode, message: response.errorMessage)
        }
        var docs: [PageDocument] = []
        for doc in list.elements {
            guard let id = doc["id"]?.string, let updateTime = doc["updateTime"]?.string else {
                throw ServerFailure(code: "MALFORMED_RESPONSE", message: "a document without id or updateTime")
            }
            let data = doc["data"]
            func field(_ key: String) throws -> Value? {
                guard let ref = data?[key] else { return nil }
                do { return try ValueCodec.decodeValue(ref, path: "\(id).\(key)") } catch {
                    throw ServerFailure(code: "MALFORMED_RESPONSE", message: error.message)
                }
            }
            docs.append(PageDocument(id: id, updateTime: updateTime, name: try field("name"),
                                     departmentName: try field("departmentName"),
                                     hasDepartmentId: data?["departmentId"] != nil))
        }
        return docs
    }

    /// Sends the page's writes as one commit; nil on success, else the server's error.
    private mutating func commit(_ client: BlockingClient, _ writes: [[UInt8]]) throws -> ServerFailure? {
        var w = JSONWriter(capacity: 256 * writes.count)
        w.beginObject()
        w.key("op"); w.string("commit")
        w.key("id"); w.int(requestId())
        w.key("writes"); w.beginArray()
        for write in writes { w.raw(write) }
        w.endArray()
        w.endObject()
        let response = try roundTrip(client, w.bytes)
        return response.ok ? nil : ServerFailure(code: response.errorCode, message: response.errorMessage)
    }

    // MARK: Planning

    func plan(_ docs: [PageDocument]) -> PagePlan {
        var plan = PagePlan()
        for doc in docs {
            switch settings.step {
            case .backfill:
                let copyName = doc.departmentName == nil ? doc.name : nil
                let setId = !doc.hasDepartmentId
                guard copyName != nil || setId else { continue }
                plan.writes.append(update(doc) { w in
                    if let copyName { w.key("departmentName"); w.value(copyName) }
                    if setId { w.key("departmentId"); w.string(doc.id) }
                })
                plan.changedIDs.append(doc.id)
            case .dropLegacy:
                guard let name = doc.name else { continue }
                guard let departmentName = doc.departmentName else {
                    plan.skipped.append("\(doc.id): departmentName is missing (run --step backfill first); name=\(render(name))")
                    continue
                }
                guard departmentName == name else {
                    plan.skipped.append("\(doc.id): name=\(render(name)) differs from departmentName=\(render(departmentName))")
                    continue
                }
                plan.writes.append(update(doc) { w in
                    w.key("name"); w.beginObject(); w.key("$delete"); w.bool(true); w.endObject()
                })
                plan.changedIDs.append(doc.id)
            }
        }
        return plan
    }

    /// `{"op":"update","path":...,"data":{...},"precondition":{"updateTime":...}}`.
    private func update(_ doc: PageDocument, _ data: (inout JSONWriter) -> Void) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("op"); w.string("update")
        w.key("path"); w.string(settings.collection + "/" + doc.id)
        w.key("data"); w.beginObject(); data(&w); w.endObject()
        w.key("precondition"); w.beginObject(); w.key("updateTime"); w.string(doc.updateTime); w.endObject()
        w.endObject()
        return w.bytes
    }

    private func render(_ v: Value) -> String {
        var w = JSONWriter(capacity: 64)
        w.value(v)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

/// Test hook: `HEARTH_MIGRATE_TEST_BEFORE_COMMIT` holds one raw request line that is sent on a second
/// connection once, after the first page was read and before its first commit — a concurrent edit at the
/// worst moment, to exercise the updateTime preconditions and the page retry. Unset in normal use.
enum TestHook {
    nonisolated(unsafe) private static var used = false

    static func beforeFirstCommit(_ options: ConnectionOptions) {
        guard !used, let raw = getenv("HEARTH_MIGRATE_TEST_BEFORE_COMMIT") else { return }
        used = true
        let line = String(cString: raw)
        guard !line.isEmpty, let client = try? options.connect() else { return }
        try? client.send(line: line)
        _ = try? client.readLine(timeout: options.timeout)
    }
}
