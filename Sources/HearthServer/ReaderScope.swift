import HearthEngine
import HearthModel
import HearthProtocol
import HearthStorage

/// A request as a reader thread runs it (`Context.readOnReader`): the line parsed again there, the snapshot
/// the answer is read at (opened on first use, with the index catalog valid at its seq), and the rules and
/// identity to judge it with. Reader thread only; one per request.
final class ReaderScope {
    let codec: any DocumentCodec
    /// The engine's document cache (shared with the loop; see `DocumentCache`).
    let cache: DocumentCache
    /// nil when the request is not judged (no rules, or the admin).
    let judge: OffLoopJudge?
    private let op: String
    private let id: [UInt8]?
    private let line: [UInt8]
    private let store: any DocumentStore
    private let catalog: IndexCatalogView
    private var opened: (snapshot: any StoreSnapshot, indexes: [IndexDefinition])?
    private var parsed: (parser: JSONParser, request: Request)?

    /// The largest response line allowed (`--max-response-bytes`).
    let responseLimit: Int

    init(op: String, id: [UInt8]?, line: [UInt8], codec: any DocumentCodec, cache: DocumentCache, judge: OffLoopJudge?,
         store: any DocumentStore, catalog: IndexCatalogView, responseLimit: Int) {
        self.cache = cache
        self.responseLimit = responseLimit
        self.op = op
        self.id = id
        self.line = line
        self.codec = codec
        self.judge = judge
        self.store = store
        self.catalog = catalog
    }

    /// The request, parsed again from its line on first use (the loop already checked it: it parses).
    var request: Request {
        get throws(HearthError) {
            if let parsed { return parsed.request }
            let parser = ReaderParsers.take()
            let parsedBody: Result<JSONRef, HearthError> = line.withUnsafeBytes { b in
                do throws(HearthError) { return .success(try parser.parse(b)) } catch { return .failure(error) }
            }
            let body: JSONRef
            switch parsedBody {
            case .success(let b): body = b
            case .failure(let error):
                ReaderParsers.give(parser)
                throw error
            }
            let r = Request(op: op, body: body, line: UnsafeRawBufferPointer(start: nil, count: 0), id: id)
            parsed = (parser, r)
            return r
        }
    }

    /// The snapshot the answer is read at (opened on first use).
    var snapshot: any StoreSnapshot {
        get throws(HearthError) { try open().snapshot }
    }

    /// The snapshot's seq, or nil when none was opened.
    var seq: UInt64? { opened?.snapshot.seq }

    private func open() throws(HearthError) -> (snapshot: any StoreSnapshot, indexes: [IndexDefinition]) {
        if let opened { return opened }
        let o = try catalog.open { () throws(HearthError) in try store.snapshot() }
        opened = o
        return o
    }

    /// Throws RESOURCE_EXHAUSTED once the response in `w` is over the limit (a streaming handler checks as it
    /// goes, so an unbounded result stops early).
    func checkResponseSize(_ w: JSONWriter) throws(HearthError) {
        guard w.count > responseLimit else { return }
        throw HearthError(.resourceExhausted, "the response would be more than \(responseLimit) bytes, the limit (--max-response-bytes); page through the result with limit and a cursor (startAfter)")
    }

    /// Judges `q` as a list against the snapshot, then plans it with the catalog valid at the snapshot's seq.
    func prepare(_ q: ValidQuery, needFields: Bool = true) throws(HearthError) -> PreparedQuery {
        let (snapshot, indexes) = try open()
        try judge?.list(q, snapshot: snapshot)
        return try PreparedQuery(q, indexes: indexes, needFields: needFields)
    }

    /// Ends the snapshot's read transaction and gives the parser back.
    func close() {
        opened?.snapshot.close()
        opened = nil
        if let parsed { ReaderParsers.give(parsed.parser) }
        parsed = nil
    }
}

/// Parsers for lines parsed again on reader threads (one per running read, reused).
enum ReaderParsers {
    private static let idle = Locked<[JSONParser]>([])

    static func take() -> JSONParser {
        idle.withLock { $0.popLast() } ?? JSONParser(retainedCapacity: 16 * 1024, rejectsDuplicateKeys: false)
    }

    static func give(_ parser: JSONParser) {
        idle.withLock { if $0.count < 64 { $0.append(parser) } }
    }
}

/// Response writers for reads on reader threads (one per running read, reused): a response is built in a
/// buffer that has already grown to the size responses take, and the loop sends it from there
/// (`ResponseQueue`), then gives the writer back.
enum ReaderWriters {
    private static let idle = Locked<[JSONWriter]>([])

    /// A writer, emptied (a kept one is emptied here rather than when given back, once no copy the giver made
    /// in passing can still share its buffer: emptying a shared buffer would start a new one).
    static func take() -> JSONWriter {
        guard var w = idle.withLock({ $0.popLast() }) else { return JSONWriter(capacity: 16 * 1024) }
        w.reset()
        return w
    }

    /// The largest buffer kept for the next read (a larger one, after a large result, is released).
    static let keptCapacity = 256 * 1024

    /// Writers kept at most (so at most 64 × `keptCapacity`, 16 MiB, stays in the pool).
    static let keptWriters = 64

    /// Keeps `w` for the next read, unless it grew past `keptCapacity` or `keptWriters` are kept already. The
    /// writer moves into the pool (no copy of it is left with the caller for a reader's `take` to find
    /// shared).
    static func give(_ w: consuming JSONWriter) {
        guard w.capacity <= keptCapacity else { return }
        var pending: JSONWriter? = consume w
        idle.withLock { if $0.count < keptWriters, let kept = pending.take() { $0.append(kept) } }
    }
}
