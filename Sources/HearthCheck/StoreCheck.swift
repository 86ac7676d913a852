#if canImport(Glibc)
import Glibc
#endif
import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage
import HearthStorageSQLite

/// One problem a check found.
public struct CheckProblem: Sendable, Equatable, CustomStringConvertible {
    public enum Area: String, Sendable {
        case sqlite = "sqlite"
        case document = "document"
        case changeLog = "change log"
        case index = "index"
        case catalog = "index catalog"
    }

    public var area: Area
    /// The document the problem concerns, when there is one (a damaged document, a change-log entry of it, an
    /// index entry pointing at it or one it lacks).
    public var path: String?
    public var message: String

    public var description: String { "\(area.rawValue): \(message)" }
}

/// What a check found: the problems (each naming its document when there is one) and what it looked at.
public struct CheckReport: Sendable {
    public var problems: [CheckProblem] = []
    /// Problems beyond the first `StoreCheck.maxProblems`, counted only.
    public var unlistedProblems = 0
    public var documents = 0
    public var changes = 0
    public var indexEntries = 0
    public var declaredIndexes = 0
    /// Entries of dropped indexes that the daemon has not removed yet (not damage).
    public var awaitingPurge = 0
    /// Where the index catalog came from: "store", "indexes.json (not imported yet)", or "none".
    public var catalogSource = "none"

    public var isClean: Bool { problems.isEmpty && unlistedProblems == 0 }

    /// The documents named by problems, sorted, each once.
    public var damagedPaths: [String] { Array(Set(problems.compactMap(\.path))).sorted() }

    /// One paragraph for people.
    public var summary: String {
        var text = "\(documents) documents, \(changes) change-log entries, \(indexEntries) index entries, "
        text += "\(declaredIndexes) declared indexes (catalog: \(catalogSource))"
        if awaitingPurge > 0 { text += ", \(awaitingPurge) entries of dropped indexes awaiting removal" }
        if isClean { return text + ": no damage found" }
        let count = problems.count + unlistedProblems
        text += ": \(count) problem\(count == 1 ? "" : "s")"
        let paths = damagedPaths
        if !paths.isEmpty {
            let shown = paths.prefix(20).joined(separator: ", ")
            text += "; documents concerned: \(shown)\(paths.count > 20 ? " and \(paths.count - 20) more" : "")"
        }
        return text
    }
}

/// The consistency check of a stopped (or just opened) store, shared by `hearth check` and `hearthd --check`:
///
/// 1. SQLite's `PRAGMA integrity_check` (the file's own structure);
/// 2. the index catalog (checksum, decodes) — or, for a store whose catalog was never imported, the
///    `indexes.json` beside it;
/// 3. every document row: its checksum, and that its data is a servable encoding (one JSON object, valid
///    UTF-8, no raw line break) that decodes;
/// 4. index entries against documents, both ways: every document has every entry the engine maintains for
///    it (`IndexAudit.keys`, entries of a still-building index may be missing) and each points at it; and when
///    the entries are more than those found, every entry points at an existing document that produces its
///    key (entries of dropped indexes still being removed are counted apart, not as damage);
/// 5. every change-log row: its checksum, and that each image decodes.
///
/// It reads one consistent snapshot (`SQLiteInspection`), changes nothing, and reports every problem with the
/// document it concerns.
public final class StoreCheck {
    public enum Phase: String, Sendable {
        case sqlite = "SQLite integrity check"
        case documents = "documents and their index entries"
        case indexEntries = "index entries"
        case changeLog = "change log"
    }

    /// Called now and then with the phase and how far it got (`done` of `total` rows).
    public typealias Progress = (_ phase: Phase, _ done: Int, _ total: Int) -> Void

    /// Problems listed in a report; more are counted.
    public static let maxProblems = 10_000

    private let store: SQLiteStore
    private let dataDir: String
    private let json = FieldsJSON()

    /// A check of `store`, which lives in `dataDir` (where an `indexes.json` not imported yet may lie).
    public init(store: SQLiteStore, dataDir: String) {
        self.store = store
        self.dataDir = dataDir
    }

    public func run(progress: Progress? = nil) throws(HearthError) -> CheckReport {
        let inspection = try SQLiteInspection(store)
        defer { inspection.close() }
        var run = Run(inspection: inspection, json: json, progress: progress)
        let counts = try inspection.counts()
        run.report.documents = counts.documents
        run.report.changes = counts.changes
        run.report.indexEntries = counts.indexEntries

        progress?(.sqlite, 0, 1)
        for line in try inspection.integrityCheck() { run.add(.sqlite, nil, line) }
        progress?(.sqlite, 1, 1)

        run.catalog = loadCatalog(inspection, &run)
        run.report.declaredIndexes = run.catalog.indexes.count

        try run.checkDocuments(total: counts.documents)
        if counts.indexEntries != run.matchedEntries { try run.checkEntries(total: counts.indexEntries) }
        try run.checkChangeLog(total: counts.changes)
        return run.report
    }

    /// The catalog the daemon would use: the store's, else an `indexes.json` it would import.
    private func loadCatalog(_ inspection: SQLiteInspection, _ run: inout Run) -> IndexCatalog {
        do {
            if let data = try inspection.indexCatalog() {
                run.report.catalogSource = "store"
                do { return try IndexCatalogJSON.decode(data) } catch {
                    run.add(.catalog, nil, "the index catalog is damaged in storage (it does not decode: \(error.message))")
                    return IndexCatalog()
                }
            }
        } catch {
            run.add(.catalog, nil, error.message)
            return IndexCatalog()
        }
        let file = dataDir + "/indexes.json"
        do {
            guard let catalog = try IndexCatalogJSON.load(file: file) else { return IndexCatalog() }
            run.report.catalogSource = "indexes.json (not imported yet)"
            return catalog
        } catch {
            run.report.catalogSource = "indexes.json (not imported yet)"
            run.add(.catalog, nil, error.message)   // names the file
            return IndexCatalog()
        }
    }
}

/// The state of one check run.
private struct Run {
    let inspection: SQLiteInspection
    let json: FieldsJSON
    let progress: StoreCheck.Progress?
    var report = CheckReport()
    var catalog = IndexCatalog()
    /// Entries found where a document's keys say they should be (each a distinct entry).
    var matchedEntries = 0
    /// Documents already reported as damaged (their entries are not reported again).
    var damaged = Set<String>()

    init(inspection: SQLiteInspection, json: FieldsJSON, progress: StoreCheck.Progress?) {
        self.inspection = inspection
        self.json = json
        self.progress = progress
    }

    mutating func add(_ area: CheckProblem.Area, _ path: String?, _ message: String) {
        if report.problems.count < StoreCheck.maxProblems {
            report.problems.append(CheckProblem(area: area, path: path, message: message))
        } else {
            report.unlistedProblems += 1
        }
    }

    /// How often progress is reported (rows).
    static let step = 4096

    /// The decoded fields of a stored document, or the reason they cannot be served.
    func fields(_ data: [UInt8]) -> Result<MapValue, HearthError> {
        do {
            try json.verifyStored(data)
            return .success(try json.decodeFields(data))
        } catch {
            return .failure(error)
        }
    }

    /// Whether a key belongs to a declared index still building (whose entries may be missing).
    func isBuilding(_ key: [UInt8]) -> Bool {
        guard IndexAudit.kind(ofKey: key) == "composite" else { return false }
        return catalog.indexes.contains { $0.state == .building && key.starts(with: IndexAudit.compositePrefix($0.id)) }
    }

    // MARK: Documents, and the entries each should have

    mutating func checkDocuments(total: Int) throws(HearthError) {
        var done = 0
        progress?(.documents, 0, total)
        try inspection.forEachDocument { (name, row) throws(HearthError) in
            done += 1
            if done % Run.step == 0 { progress?(.documents, done, total) }
            switch row {
            case .failure(let error):
                damaged.insert(name)
                add(.document, name, error.message)
            case .success(let doc):
                switch fields(doc.data) {
                case .failure(let error):
                    damaged.insert(name)
                    add(.document, name, StorageDamage.document(name, "its data does not decode: \(error.message)").message)
                case .success(let fields):
                    try checkEntries(of: doc.path, fields)
                }
            }
            return true
        }
        progress?(.documents, total, total)
    }

    /// Looks up every entry the document should have.
    private mutating func checkEntries(of path: DocumentPath, _ fields: MapValue) throws(HearthError) {
        let collection = path.collection.description
        var missing: [[UInt8]] = []
        var misdirected: [([UInt8], String)] = []
        for key in IndexAudit.keys(path, fields, composites: catalog.indexes) {
            if let target = try inspection.indexEntry(key) {
                if target.collection == collection && target.id == path.id {
                    matchedEntries += 1
                } else {
                    misdirected.append((key, target.collection + "/" + target.id))
                }
            } else if !isBuilding(key) {
                missing.append(key)
            }
        }
        let name = path.description
        if let first = missing.first {
            add(.index, name, "document \(name) lacks \(missing.count) of its index entries (the first: \(Run.describe(first)))")
        }
        if let (key, target) = misdirected.first {
            add(.index, name, "document \(name) has \(misdirected.count) index entries pointing at another document (the first: \(Run.describe(key)) points at \(target))")
        }
    }

    // MARK: Entries that no document accounts for

    mutating func checkEntries(total: Int) throws(HearthError) {
        var done = 0
        // Keys of recently seen documents (entries come in key order, so a document's come scattered).
        var keysOf: [String: Set<[UInt8]>] = [:]
        var strays: [String: (count: Int, first: String)] = [:]
        let dropping = catalog.dropping.map(IndexAudit.compositePrefix)
        let declared = catalog.indexes.map { IndexAudit.compositePrefix($0.id) }
        progress?(.indexEntries, 0, total)
        try inspection.forEachIndexEntry { (key, collection, id) throws(HearthError) in
            done += 1
            if done % Run.step == 0 { progress?(.indexEntries, done, total) }
            let name = collection + "/" + id
            if IndexAudit.kind(ofKey: key) == "composite" {
                if dropping.contains(where: { key.starts(with: $0) }) { report.awaitingPurge += 1; return true }
                if !declared.contains(where: { key.starts(with: $0) }) {
                    note(&strays, name, "index entry \(Run.describe(key)) belongs to no declared index")
                    return true
                }
            }
            if damaged.contains(name) { return true }
            let keys: Set<[UInt8]>
            if let known = keysOf[name] {
                keys = known
            } else {
                guard let row = try inspection.document(collection: collection, id: id) else {
                    note(&strays, name, "index entry \(Run.describe(key)) points at \(name), which does not exist")
                    return true
                }
                switch row {
                case .failure(let error):
                    damaged.insert(name)
                    add(.document, name, error.message)
                    return true
                case .success(let doc):
                    guard case .success(let fields) = self.fields(doc.data) else {
                        damaged.insert(name)
                        return true
                    }
                    keys = Set(IndexAudit.keys(doc.path, fields, composites: catalog.indexes))
                }
                if keysOf.count >= 4096 { keysOf.removeAll(keepingCapacity: true) }
                keysOf[name] = keys
            }
            if !keys.contains(key) {
                note(&strays, name, "index entry \(Run.describe(key)) points at \(name), whose data does not produce it")
            }
            return true
        }
        for (name, stray) in strays.sorted(by: { $0.key < $1.key }) {
            add(.index, name, stray.count == 1 ? stray.first : "\(stray.first) (and \(stray.count - 1) more entries pointing at \(name))")
        }
        progress?(.indexEntries, total, total)
    }

    private func note(_ strays: inout [String: (count: Int, first: String)], _ name: String, _ message: String) {
        if let s = strays[name] { strays[name] = (s.count + 1, s.first) } else { strays[name] = (1, message) }
    }

    // MARK: The change log

    mutating func checkChangeLog(total: Int) throws(HearthError) {
        var done = 0
        progress?(.changeLog, 0, total)
        try inspection.forEachChange { (seq, path, row) throws(HearthError) in
            done += 1
            if done % Run.step == 0 { progress?(.changeLog, done, total) }
            switch row {
            case .failure(let error):
                add(.changeLog, path, error.message)
            case .success(let m):
                for image in [m.before, m.after] {
                    guard let image, case .failure(let error) = fields(image.data) else { continue }
                    add(.changeLog, path, StorageDamage.change(seq: seq, path: path, "an image does not decode: \(error.message)").message)
                    break
                }
            }
            return true
        }
        progress?(.changeLog, total, total)
    }

    /// `single-field entry 0x0150…` (at most 24 bytes shown).
    static func describe(_ key: [UInt8]) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var hex = "0x"
        for b in key.prefix(24) { hex.append(digits[Int(b >> 4)]); hex.append(digits[Int(b & 15)]) }
        if key.count > 24 { hex += "…" }
        return "\(IndexAudit.kind(ofKey: key)) entry \(hex)"
    }
}

extension StoreCheck {
    /// `hearthd --check`: runs the check before the daemon serves. Returns true when the store is clean (after
    /// `log`ging the summary); otherwise `report`s every problem and a closing line, and returns false: the
    /// daemon must refuse to start.
    public func beforeServing(log: (String) -> Void, report: (String) -> Void) throws(HearthError) -> Bool {
        let result = try run()
        guard result.isClean else {
            for p in result.problems { report("check: \(p)") }
            if result.unlistedProblems > 0 { report("check: \(result.unlistedProblems) more problems not listed") }
            report("check: \(result.summary)")
            report("check: refusing to start on a damaged store (restore a backup, or start without --check to serve the undamaged documents)")
            return false
        }
        log("check: \(result.summary)")
        return true
    }
}
