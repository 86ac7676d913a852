import HearthModel
import HearthStorage

/// Where a listener's snapshots go (the server's connection). Loop thread only.
public protocol ListenerSink: AnyObject {
    /// False while the subscriber is over its output budget: the hub then coalesces instead of sending,
    /// until the sink calls `ListenerHub.drained(_:)`.
    var canAcceptEvents: Bool { get }
    /// `shareKey`: while a change set shared by several listeners (one view, one commit) is being delivered,
    /// a key unique to it, so the sink may encode it once and reuse the bytes for every listener; nil otherwise.
    func deliver(_ event: ListenerEvent, for listener: Listener, shareKey: UInt64?)
    /// One commit's changes to a query listener, `size` its result's size after them: `deliver` of a `.query`
    /// event that is neither initial nor a reset, with the changes passed as they are, so that a sink holding
    /// their encoding already (`shareKey`) need not touch them (the fan-out path).
    func deliverChanges(seq: UInt64, size: Int, changes: [ViewChange], for listener: Listener, shareKey: UInt64?)
    /// Sends for `listener` the change set under `shareKey` from the encoding the sink kept when it delivered
    /// it to an earlier listener, without the changes themselves (the fan-out path); false, with nothing sent,
    /// when it holds no such encoding.
    func deliverShared(_ shareKey: UInt64, for listener: Listener) -> Bool
    /// A listener's changes are being held back (the subscriber is over budget): the sink starts its
    /// drain deadline if it has none running.
    func coalescing()
}

extension ListenerSink {
    public func deliver(_ event: ListenerEvent, for listener: Listener) { deliver(event, for: listener, shareKey: nil) }

    public func deliverChanges(seq: UInt64, size: Int, changes: [ViewChange], for listener: Listener, shareKey: UInt64?) {
        deliver(.query(seq: seq, initial: false, reset: false, size: size, changes: changes), for: listener, shareKey: shareKey)
    }

    public func deliverShared(_ shareKey: UInt64, for listener: Listener) -> Bool { false }
}

/// What a listener sends.
public enum ListenerEvent: Sendable {
    case query(seq: UInt64, initial: Bool, reset: Bool, size: Int, changes: [ViewChange])
    /// `reset`: a resume the server could not honour (another history, or a seq it never reached); the
    /// document is complete anyway.
    case document(seq: UInt64, initial: Bool, reset: Bool = false, document: StoredDocument?)
    /// Ends the listener; nothing follows for it.
    case error(HearthError)
}

/// One registered listener: its target, the result as of `seq` (`current`), and what its subscriber has
/// been sent (`sent`), which lags behind only while the subscriber is over its output budget.
public final class Listener {
    public enum Target: Sendable {
        case document(DocumentPath)
        case query(ValidQuery)
    }

    public let id: Int
    /// The subscription id the client knows (`"sub"`).
    public let tag: String
    public let target: Target
    /// Strong, and cleared when the listener is removed from the hub (which every sink does before it goes
    /// away): a weak reference would give each sink (a `Session`) a side table, making every retain and
    /// release of it take the slow path during fan-out.
    // @exclusivity(unchecked) below: loop-thread state read on every delivered event; dynamic exclusivity checks off (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) var sink: ListenerSink?
    /// Who receives its events (nil once removed).
    public var subscriber: ListenerSink? { sink }
    /// The commit the current result reflects.
    @exclusivity(unchecked) public internal(set) var seq: UInt64
    /// The query result, shared by every listener with an equal query (computed once per commit).
    @exclusivity(unchecked) var view: SharedView?
    var current: [ResultDocument] { view?.rows ?? [] }
    var sent: [ResultDocument] = []
    var currentDocument: StoredDocument?
    var sentDocument: StoredDocument?
    /// Current differs from sent and is waiting for the subscriber to drain (or for `ListenerHub.release`).
    @exclusivity(unchecked) var dirty = false
    /// Its changes are kept back, coalesced as for a slow subscriber, until `ListenerHub.release`: the server
    /// is judging it again and must read first what the rules read.
    @exclusivity(unchecked) var holds = 0
    /// True while `ListenerHub.hold` keeps its changes back.
    public var held: Bool { holds > 0 }
    /// True from `ListenerHub.add` until `remove`: a publication walking an index list it was taken out of
    /// meanwhile skips it.
    @exclusivity(unchecked) var isRegistered = false
    /// Where the listener is indexed for matching.
    var indexKey: ListenerIndexKey?
    /// While its first snapshot is read off the loop thread (`ListenerHub.begin`): the published commits that
    /// may affect it since `seq`, which `ListenerHub.complete` applies to that snapshot. Nil once registered.
    @exclusivity(unchecked) var backlog: [CommitRecord]?   // read on every delivery
    /// The backlog cannot bring the snapshot to the published seq (the hub reset every listener, or the backlog
    /// outgrew its bound): `complete` has the snapshot read again.
    var backlogBroken = false
    /// How many times its first snapshot was read again (`ListenerHub.complete`).
    var attempts = 0
    /// Rows read beyond its limit window in its first snapshot (`ListenerHub.startOver`), so that rows the
    /// window loses meanwhile are replaced from them.
    var widen = 0
    /// The seq a pending listener resumes after, and whether that is not a seq this history published (it
    /// then gets a reset).
    var resumeAfter: UInt64?
    var resumeIsForeign = false
    /// True while the first snapshot is being read off the loop thread.
    public var isPending: Bool { backlog != nil }
    /// Bytes the sink keeps for this listener, opaque to the engine (the server: the start of every line
    /// pushed for it, `{"sub":"<tag>"`, so a change set shared by many listeners costs a copy each): memory of
    /// its own, made once and freed with the listener, so a delivery reads it without reference counting.
    @exclusivity(unchecked) private var sinkBytesStorage: UnsafeMutableRawBufferPointer?

    /// The sink's bytes for this listener (`sinkBytesStorage`), made by `make` on first use; valid while the
    /// listener lives. A method, not a property, for a sink in another module: `@exclusivity(unchecked)` holds
    /// only within this one, and elsewhere every delivery would pay the run-time check.
    public func sinkBytes(orMake make: () -> [UInt8]) -> UnsafeRawBufferPointer {
        if let b = sinkBytesStorage { return UnsafeRawBufferPointer(b) }
        let bytes = make()
        let b = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        bytes.withUnsafeBytes { b.copyMemory(from: $0) }
        sinkBytesStorage = b
        return UnsafeRawBufferPointer(b)
    }

    deinit { sinkBytesStorage?.deallocate() }

    init(id: Int, tag: String, target: Target, sink: ListenerSink, seq: UInt64) {
        self.id = id
        self.tag = tag
        self.target = target
        self.sink = sink
        self.seq = seq
    }

    var query: ValidQuery? { if case .query(let q) = target { return q } else { return nil } }

    /// Number of documents the subscriber will hold once it has every pending change.
    public var size: Int { current.count }
}

/// A query result shared by every listener whose query is equal: a commit is applied to it once and its
/// changes are sent to each of them ("identical queries share work").
final class SharedView {
    let query: ValidQuery
    @exclusivity(unchecked) var rows: [ResultDocument]
    // @exclusivity(unchecked): loop-thread state read on every delivered event; dynamic exclusivity checks off (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) var seq: UInt64
    var members: [Listener] = []
    /// The changes the commit at `seq` made to `rows`, and the key sinks may share their encoding under (nil
    /// when only one member gets them), for the members after the first during a publication.
    @exclusivity(unchecked) var lastChanges: [ViewChange] = []
    @exclusivity(unchecked) var shareKey: UInt64?
    /// During a publication, once a member falls behind in the commit at `seq`: the rows before that commit
    /// (`ViewChange.rowsBefore`), made once and shared by every member that falls behind in it.
    @exclusivity(unchecked) var rowsBefore: [ResultDocument]?

    init(query: ValidQuery, rows: [ResultDocument], seq: UInt64) {
        self.query = query
        self.rows = rows
        self.seq = seq
    }
}

/// The key a listener is registered under in the hub's matching index.
enum ListenerIndexKey: Hashable {
    case document(DocumentPath)
    case collection(String)
    case group(String)
    /// A collection listener with a top-level equality filter: only documents whose field has that value
    /// (before or after a change) can affect it.
    case equality(collection: String, field: FieldPath, value: [UInt8])
}
