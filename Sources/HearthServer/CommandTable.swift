import HearthModel
import HearthProtocol

/// One entry of the command table: the op's name, its one-line synopsis (what `help` prints and
/// docs/protocol.md lists), the fields it accepts besides `op` and `id`, how it touches data, and its handler.
struct Command: Sendable {
    enum Access: Sendable {
        /// Touches no documents (help, ping, unlisten, hello, index management); runs behind the connection's
        /// own pending writes, so what it reports (a seq, stats) is never older than an answer before it.
        case meta
        /// Reads exactly the published state (gets, queries, aggregations, a listen's first snapshot): waits
        /// behind the connection's own pending writes, then runs when the snapshot gate admits it (at once,
        /// unless a batch is between landing in the store and the end of its publication); its reply leaves
        /// once the gate confirms the read, else it runs again after the publication (`SnapshotGate`).
        case read
        /// Commits: pipelines; answered once durable.
        case write
    }

    /// Who may run it (docs/security.md); checked in `Dispatcher` before the handler.
    enum Clearance: Sendable {
        /// Anyone, even a connection whose token expired: help, ping, hello, unlisten.
        case anyone
        /// A connection whose identity holds (not expired); the handler asks the rules about the documents.
        case identified
        /// Only the admin while rules are enforced (anyone when the daemon runs without rules): index and
        /// rules management.
        case admin
    }

    let name: String
    let synopsis: String
    let fields: Set<String>
    let access: Access
    var clearance: Clearance = .identified
    /// Commits on its own (index and TTL changes, recursive deletes), so it runs on the committer: a follower
    /// forwards it there, as it does every `.write` (`ClusterCoordinator.forward`).
    var onCommitter = false
    let run: @Sendable (Context, Request) throws(HearthError) -> Void
    /// Runs on the committer: a follower forwards it.
    var forwarded: Bool { access == .write || onCommitter }
    /// Its position in `CommandTable.all` (its counters in `ServerMetrics.ops`); set by `Dispatcher`.
    var slot = 0
    /// `fields`, `op` and `id` as UTF-8 bytes: the keys a request may hold, checked without making a `String`
    /// of each key; set by `Dispatcher`.
    var acceptedKeys: [[UInt8]] = []

    /// True when a request for this op may hold the key `key` (UTF-8 bytes).
    func accepts(key: UnsafeRawBufferPointer) -> Bool {
        acceptedKeys.contains { k in k.count == key.count && k.withUnsafeBytes { UTF8Order.compareBytes($0, key) == 0 } }
    }
}

/// The one table of every op the server understands. Generic checks (JSON object, known op, id, unknown
/// fields) run in `Dispatcher` before any handler.
enum CommandTable {
    static let writeFields: Set<String> = ["path", "data", "merge", "mergeFields", "precondition"]
    /// The fields every write op accepts besides its own.
    static let requestFields: Set<String> = ["requestId"]

    static let all: [Command] = [
        Command(name: "help", synopsis: "{op:\"help\"} lists every op with its synopsis",
                fields: [], access: .meta, clearance: .anyone, run: MetaHandlers.help),
        Command(name: "ping", synopsis: "{op:\"ping\"} answers ok with the last durable seq and whether the disk is full: {seq,diskFull}",
                fields: [], access: .meta, clearance: .anyone, run: MetaHandlers.ping),
        Command(name: "get", synopsis: "{op:\"get\",path} reads one document: {doc:<doc|null>}",
                fields: ["path"], access: .read, run: ReadHandlers.get),
        Command(name: "getAll", synopsis: "{op:\"getAll\",paths:[...]} reads documents in the order asked: {docs:[<doc|null>...]}",
                fields: ["paths"], access: .read, run: ReadHandlers.getAll),
        Command(name: "create", synopsis: "{op:\"create\",path,data} writes a new document; ALREADY_EXISTS if present",
                fields: ["path", "data", "requestId"], access: .write, run: WriteHandlers.single(.create)),
        Command(name: "set", synopsis: "{op:\"set\",path,data[,merge:true|mergeFields:[...]][,precondition]} replaces or merges a document",
                fields: writeFields.union(requestFields), access: .write, run: WriteHandlers.single(.set)),
        Command(name: "update", synopsis: "{op:\"update\",path,data[,precondition]} changes fields (keys are field paths); NOT_FOUND if absent",
                fields: ["path", "data", "precondition", "requestId"], access: .write, run: WriteHandlers.single(.update)),
        Command(name: "delete", synopsis: "{op:\"delete\",path[,precondition]} deletes a document (ok when absent)",
                fields: ["path", "precondition", "requestId"], access: .write, run: WriteHandlers.single(.delete)),
        Command(name: "add", synopsis: "{op:\"add\",collection,data} creates a document with a new 20-character ID",
                fields: ["collection", "data", "requestId"], access: .write, run: WriteHandlers.add),
        Command(name: "commit", synopsis: "{op:\"commit\",writes:[{op:set|create|update|delete|verify,...}]} applies writes atomically",
                fields: ["writes", "requestId"], access: .write, run: WriteHandlers.commit),
        Command(name: "query", synopsis: "{op:\"query\",collection|collectionGroup,where,orderBy,limit,limitToLast,offset,startAt,startAfter,endAt,endBefore,select}: {docs:[...],seq}",
                fields: QueryDecoding.fields, access: .read, run: QueryHandlers.query),
        Command(name: "count", synopsis: "{op:\"count\",<query fields>} counts the query's results: {count,seq}",
                fields: QueryDecoding.fields, access: .read, run: QueryHandlers.count),
        Command(name: "aggregate", synopsis: "{op:\"aggregate\",query:{...},aggregations:{alias:{count:{}}|{sum:\"f\"}|{avg:\"f\"}}}: {result:{alias:value},seq}",
                fields: ["query", "aggregations"], access: .read, run: QueryHandlers.aggregate),
        Command(name: "explain", synopsis: "{op:\"explain\",<query fields>} runs the query and returns its plan: index, ranges, entries examined, documents returned",
                fields: QueryDecoding.fields, access: .read, run: QueryHandlers.explain),
        Command(name: "index", synopsis: "{op:\"index\",action:\"create\"|\"list\"|\"drop\",collection,scope,fields:[[f,asc|desc|array-contains]],indexId} manages composite indexes",
                fields: ["action", "collection", "scope", "fields", "indexId"], access: .meta, clearance: .admin, onCommitter: true, run: IndexHandlers.index),
        Command(name: "listen", synopsis: "{op:\"listen\",path|query:{...}[,resumeAfter:N[,history:H]][,heartbeatMs:ms]} subscribes: {sub,history}, then pushed snapshots",
                fields: ["path", "query", "resumeAfter", "history", "heartbeatMs"], access: .read, run: ListenHandlers.listen),
        Command(name: "unlisten", synopsis: "{op:\"unlisten\",sub} ends a subscription; nothing for it follows the response",
                fields: ["sub"], access: .meta, clearance: .anyone, run: ListenHandlers.unlisten),
        Command(name: "hello", synopsis: "{op:\"hello\"[,token:JWT|adminKey:K[,as:{uid,token}|null]][,heartbeatMs:ms][,minSeq:N]} sets who the connection is and heartbeats, and waits until this node has published seq N: {version,seq,history[,auth]}",
                fields: ["heartbeatMs", "token", "adminKey", "as", "minSeq"], access: .meta, clearance: .anyone, run: AuthHandlers.hello),
        Command(name: "forward", synopsis: "{op:\"forward\",as:\"admin\"|null|{uid,token},request:\"<line>\"} (admin) runs a request line as the identity named, for that request only: how a follower sends its clients' writes to the committer while rules are enforced",
                fields: ["as", "request"], access: .meta, clearance: .admin, run: { _, _ throws(HearthError) in
                    throw HearthError(.internal, "forward is run by the dispatcher")
                }),
        Command(name: "rules", synopsis: "{op:\"rules\",action:\"reload\"|\"status\"} (admin) reloads the rules file or says which rules are in force",
                fields: ["action"], access: .meta, clearance: .admin, run: AuthHandlers.rules),
        Command(name: "backup", synopsis: "{op:\"backup\",dir:\"/abs/dir\"} (admin) copies the store online into a new data directory at one seq, with progress lines: {seq,pages,bytes,micros,dir}",
                fields: ["dir"], access: .meta, clearance: .admin, run: BackupHandlers.backup),
        Command(name: "export", synopsis: "{op:\"export\"[,collection|collectionGroup][,seq,after][,limit]} (admin) pages through documents at one seq: {seq,docs:[...],next}",
                fields: ExportHandlers.fields, access: .read, clearance: .admin, run: ExportHandlers.export),
        Command(name: "stats", synopsis: "{op:\"stats\"} (admin) the daemon's figures: connections, listeners, commits, queues, cache, store, per-op counts and p50/p99",
                fields: [], access: .meta, clearance: .admin, run: AdminHandlers.stats),
        Command(name: "listCollections", synopsis: "{op:\"listCollections\"[,path:DOC]} (admin) IDs of the collections at the root or under a document, sorted: {collections:[...]}",
                fields: ["path"], access: .meta, clearance: .admin, run: AdminHandlers.listCollections),
        Command(name: "deleteRecursive", synopsis: "{op:\"deleteRecursive\",path[,batchSize:1..500][,progress:true]} (admin) deletes a collection or document and everything below it in batches: {deleted,seq}",
                fields: ["path", "batchSize", "progress"], access: .meta, clearance: .admin, onCommitter: true, run: AdminHandlers.deleteRecursive),
        Command(name: "ttl", synopsis: "{op:\"ttl\",action:\"set\"|\"remove\"|\"list\",collectionGroup,field} (admin) TTL policies: documents whose field holds a past timestamp are deleted",
                fields: ["action", "collectionGroup", "field"], access: .meta, clearance: .admin, onCommitter: true, run: AdminHandlers.ttl),
        Command(name: "compact", synopsis: "{op:\"compact\"} (admin) gives the space of deleted data back to the filesystem: {method,bytesBefore,bytesAfter,ms}",
                fields: [], access: .meta, clearance: .admin, run: AdminHandlers.compact),
    ]
}
