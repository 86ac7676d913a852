import HearthModel
import HearthStorage

/// The listener registry: registration with an atomic initial snapshot, matching committed changes to the
/// listeners they can affect (indexed by document, collection, collection group and top-level equality
/// filter, so the cost follows the listeners that can match, not all of them), per-commit snapshots with
/// Firestore's docChanges, exact limit windows, resume from the change log, and coalescing for subscribers
/// over their output budget. Loop thread only.
public final class ListenerHub {
    /// The engine owns the hub (unowned(unsafe): no reference counting per access on the publication path).
    unowned(unsafe) let engine: Engine
    var nextID = 1
    // @exclusivity(unchecked): loop-thread state read on every delivered event; dynamic exclusivity checks off (docs/architecture.md, "Decisions").
    @exclusivity(unchecked) var listeners: [Int: Listener] = [:]
    /// Listeners per index key, by ascending ID (publication walks them in ID order without hashing, sorting
    /// or looking them up).
    var index: [ListenerIndexKey: [Listener]] = [:]
    /// For each collection path, the fields some equality-indexed listener filters on.
    private var equalityFields: [String: [FieldPath: Int]] = [:]
    /// Shared query results, by query.
    var views: [ValidQuery: SharedView] = [:]
    /// Listeners whose first snapshot is being read off the loop thread, by ID (`begin`, `complete`).
    var pending: [Int: Listener] = [:]

    private var shareCounter: UInt64 = 0
    /// Listeners holding back changes, per sink: draining costs what is pending, not every listener. While a
    /// sink has any, every listener of it holds back, so its snapshots stay in seq order (`emit`).
    @exclusivity(unchecked) private var dirtyBySink: [ObjectIdentifier: [Listener]] = [:]   // read on every delivery
    /// True during `publish`; sinks to drain once it ends (`forgetBehind`).
    private var publishing = false
    private var drainAfterPublication: [ListenerSink] = []

    /// Window refills read before the publication they are for (`ListenerHub+WindowReads.swift`), or why
    /// they could not be. Forgotten at the end of each publication.
    var refillRows: [WindowKey: WindowRefill] = [:]

    /// The most commits a resume replays before falling back to a reset.
    public var maxResumeCommits = 100_000

    /// The loop never reads the store for a listener (the server sets it, over every store): each window
    /// refill a publication makes is read before it on a reader thread (`windowReads`), one that cannot be
    /// read ends its listeners, and a first read whose window keeps losing rows is read again with rows
    /// beyond the window (`startOver`). False (an engine driven without a server: tests, tools): the loop
    /// reads those itself.
    public var readsOffLoop = false

    /// The last commit applied to the listeners (every view has applied every commit up to it that
    /// affects it).
    public private(set) var publishedSeq: UInt64

    init(engine: Engine) {
        self.engine = engine
        self.publishedSeq = engine.lastDurableSeq
    }

    public var count: Int { listeners.count }
    /// Query results shared by listeners with the same query.
    public var sharedViewCount: Int { views.count }
    /// Subscribers (sinks) whose listeners hold back changes while they are over their output budget.
    public var coalescingSinkCount: Int { dirtyBySink.count }
    /// True while any subscriber has listeners holding back changes.
    public var hasListenersBehind: Bool { !dirtyBySink.isEmpty }

    // MARK: Registration

    /// Registers a listener at the engine's published seq (`lastDurableSeq`) and delivers its first
    /// snapshot: the full result (`initial`), or with `resumeAfter` the net changes since that seq
    /// (`initial:false`), or a reset (the full result, `reset`) when the resume cannot be honoured: the seq
    /// is from another history (`history` given and not the engine's), or beyond the published seq (a
    /// database restored or replaced since), or older than the change log reaches.
    ///
    /// It may run while a commit batch is being made durable: the batch's publication then reaches the new
    /// listener like any other. Before anything is registered or delivered, `confirm` asks the snapshot gate
    /// whether the first snapshot is exactly the published state (by default with a ticket of its own); when
    /// it is not (the batch landed while it was read), nothing is registered and the result is nil: call
    /// again once the publication has finished.
    public func add(_ target: Listener.Target, tag: String, sink: ListenerSink, resumeAfter: UInt64?, history: UInt64? = nil,
                    confirm: (() -> Bool)? = nil) throws(HearthError) -> Listener? {
        engine.thread.check("ListenerHub.add")
        let ticket: SnapshotGate.Ticket?
        if confirm == nil {
            guard case .run(let t) = engine.gate.admit() else { return nil }
            ticket = t
        } else {
            ticket = nil
        }
        let seq = engine.lastDurableSeq
        // A resume point that is not a past seq of this history cannot be diffed from: reset.
        let foreign = resumeAfter.map { $0 > seq || (history != nil && history != engine.historyID) } ?? false
        let l = Listener(id: nextID, tag: tag, target: target, sink: sink, seq: seq)
        let first: ListenerEvent
        var newView: SharedView?
        switch target {
        case .document(let path):
            // Cached when the server chose this path (`registersInMemory`); one a reader's offer evicted since
            // is missed rather than read over a remote store (`Engine.publishedOnLoop`), and the listen runs again.
            l.currentDocument = try engine.publishedOnLoop(path)
            l.sentDocument = l.currentDocument
            first = .document(seq: seq, initial: resumeAfter == nil, reset: foreign, document: l.currentDocument)
        case .query(let q):
            if q.offset > 0 { throw .invalid("offset is not supported by listeners (use cursors)") }
            if let shared = views[q] {
                // In memory: every shared view has applied every published commit (publication is never
                // re-entered, so nothing registers between the engine's move to a seq and its publication).
                assert(publishedSeq == seq && shared.seq <= seq, "a listener joins a shared view at seq \(shared.seq), hub at \(publishedSeq), published \(seq)")
                l.view = shared
            } else {
                let fresh = SharedView(query: q, rows: try engine.runQuery(q).documents, seq: seq)
                newView = fresh
                l.view = fresh
            }
            if let n = resumeAfter {
                first = try resumeEvent(l, q, after: foreign ? nil : n, seq: seq)
            } else {
                first = .query(seq: seq, initial: true, reset: false, size: l.current.count,
                               changes: QueryView.changes(from: [], to: l.current, query: q))
            }
        }
        // What was read must be exactly the published state.
        let exact = confirm?() ?? engine.gate.confirm(ticket!)
        guard exact else {
            l.view = nil
            l.sink = nil
            return nil
        }
        if let newView { views[newView.query] = newView }
        l.view?.members.append(l)
        l.sent = []
        sink.deliver(first, for: l)
        nextID += 1
        listeners[l.id] = l
        l.isRegistered = true
        register(l)
        return l
    }

    /// The first snapshot of a resumed query listener: the net changes since `n`, or a reset when `n` is nil
    /// (not a seq of this history) or older than the change log reaches, or when the log entries it needs are
    /// damaged (DATA_LOSS).
    private func resumeEvent(_ l: Listener, _ q: ValidQuery, after n: UInt64?, seq: UInt64) throws(HearthError) -> ListenerEvent {
        let reset = ListenerEvent.query(seq: seq, initial: false, reset: true, size: l.current.count,
                                        changes: QueryView.changes(from: [], to: l.current, query: q))
        guard let n else { return reset }
        if n == seq { return .query(seq: seq, initial: false, reset: false, size: l.current.count, changes: []) }
        do {
            guard let commits = try engine.storeRead({ (s) throws(HearthError) in try s.changes(after: n, limit: maxResumeCommits) }),
                  commits.count < maxResumeCommits, commits.first.map({ $0.seq > n }) ?? true else { return reset }
            var rollback: [DocumentPath: StoredDocument?] = [:]
            for c in commits where c.seq <= seq {
                for m in c.mutations where rollback[m.path] == nil && q.contains(m.path) { rollback[m.path] = .some(m.before) }
            }
            let then = try engine.runQuery(q, rollback: rollback).documents
            return .query(seq: seq, initial: false, reset: false, size: l.current.count,
                          changes: QueryView.changes(from: then, to: l.current, query: q))
        } catch where error.code == .dataLoss {
            // A damaged change-log entry (already reported by the engine): the diff cannot be computed, but
            // the current result is whole, so the listener gets it as a reset.
            return reset
        }
    }

    public func remove(_ l: Listener) {
        engine.thread.check("ListenerHub.remove")
        if pending.removeValue(forKey: l.id) != nil {
            l.backlog = nil
            l.sink = nil
            unindex(l)
            return
        }
        guard listeners.removeValue(forKey: l.id) != nil else { return }
        l.isRegistered = false
        if l.dirty, let sink = l.sink { forgetBehind(l, of: sink) }
        l.sink = nil
        if let v = l.view {
            v.members.removeAll { $0 === l }
            if v.members.isEmpty { views[v.query] = nil }
            l.view = nil
        }
        unindex(l)
    }

    /// Takes `l` out of the matching index.
    private func unindex(_ l: Listener) {
        guard let key = l.indexKey else { return }
        if var list = index.removeValue(forKey: key) {
            let at = Self.insertionPoint(of: l.id, in: list)
            if at < list.count && list[at] === l { list.remove(at: at) }
            if !list.isEmpty { index[key] = list }
        }
        if case .equality(let c, let f, _) = key {
            equalityFields[c]?[f, default: 1] -= 1
            if equalityFields[c]?[f] == 0 { equalityFields[c]?[f] = nil }
        }
    }

    func register(_ l: Listener) {
        let key: ListenerIndexKey
        switch l.target {
        case .document(let p):
            key = .document(p)
        case .query(let q):
            switch q.target {
            case .collectionGroup(let id, _):
                key = .group(id)
            case .collection(let c):
                if q.disjuncts.count == 1, let eq = q.disjuncts[0].first(where: { $0.op == .equal && !$0.field.isDocumentID }) {
                    key = .equality(collection: c.description, field: eq.field, value: IndexKey.key(eq.value))
                    equalityFields[c.description, default: [:]][eq.field, default: 0] += 1
                } else {
                    key = .collection(c.description)
                }
            }
        }
        l.indexKey = key
        var list = index.removeValue(forKey: key) ?? []
        let at = Self.insertionPoint(of: l.id, in: list)
        if at == list.count || list[at] !== l { list.insert(l, at: at) }
        index[key] = list
    }

    /// The first position in `list` (by ascending ID) whose ID is not below `id`.
    private static func insertionPoint(of id: Int, in list: [Listener]) -> Int {
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if list[mid].id < id { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    // MARK: Publication

    /// Applies durable commits (ascending seq) to every listener they can affect: one snapshot per commit
    /// that changes a listener's result.
    /// `afterFields`, when given, is per record and per mutation the after image's fields as the commit built
    /// them (`DecodedCommit`), so publication does not decode what the engine already holds.
    func publish(_ records: [CommitRecord], afterFields: [[MapValue?]]? = nil) {
        engine.thread.check("ListenerHub.publish")
        if let last = records.last { publishedSeq = last.seq }
        guard !listeners.isEmpty || !pending.isEmpty else { return refillRows.removeAll() }
        // Views applied in this publication: their last changes are let go at its end.
        var appliedViews: [SharedView] = []
        publishing = true
        defer {
            for v in appliedViews {
                v.lastChanges = []
                v.rowsBefore = nil
            }
            refillRows.removeAll()
            publishing = false
            while let sink = drainAfterPublication.popLast() { drained(sink) }
        }
        for (i, record) in records.enumerated() where !record.mutations.isEmpty {
            let affected = self.affected(by: record)
            guard !affected.isEmpty else { continue }
            var rollback: [DocumentPath: StoredDocument?]?
            var decoded: DecodedCommit?
            for l in affected where l.seq < record.seq {
                if l.backlog != nil {
                    keep(record, for: l)
                    continue
                }
                guard l.isRegistered else { continue }
                if let v = l.view, v.seq == record.seq {
                    // Applied for an earlier member in this commit.
                    l.seq = record.seq
                    if !v.lastChanges.isEmpty { emitMember(l, of: v) }
                    continue
                }
                do throws(HearthError) {
                    if let v = l.view {
                        if decoded == nil { decoded = try DecodedCommit(record, codec: engine.codec, afterFields: afterFields?[i]) }
                        var changes = apply(decoded!.mutations(for: v.query), to: v)
                        let readBefore = changes == nil ? refillRows[WindowKey(query: v.query, seq: record.seq)] : nil
                        if case .rows(let rows) = readBefore {
                            // Read before this publication, on a reader thread.
                            changes = QueryView.changes(from: v.rows, to: rows, query: v.query)
                            v.rows = rows
                        } else if case .unreadable(let error) = readBefore, readsOffLoop {
                            // The loop does not read it instead (a read that failed on a reader would fail
                            // here too, and one that is slow would hold every client): the view's listeners
                            // end with the error.
                            throw error
                        }
                        if changes == nil {
                            // With reads off the loop every refill is read before the publication
                            // (`windowReads` runs it dry in the same turn); one it did not foresee is read here.
                            assert(!readsOffLoop, "a window refill the dry run did not foresee: \(v.query)")
                            // A document left a full window: re-read it as of this commit (later commits of
                            // the batch are already in the store, so they are rolled back).
                            if rollback == nil { rollback = Self.stateBefore(records[(i + 1)...]) }
                            changes = try refill(v, rollback: rollback!)
                        }
                        v.seq = record.seq
                        if v.lastChanges.isEmpty { appliedViews.append(v) }
                        v.lastChanges = changes!
                        // A key only when other listeners will get the same changes: sinks then keep the encoding.
                        shareCounter += 1
                        v.shareKey = v.members.count > 1 ? shareCounter : nil
                        l.seq = record.seq
                        if !changes!.isEmpty { emit(l, changes: (changes!, v.rows.count), shareKey: v.shareKey) }
                    } else {
                        try apply(record, to: l)
                    }
                } catch {
                    if let v = l.view { for m in v.members { fail(m, error) } } else { fail(l, error) }
                }
            }
        }
    }

    /// The engine moved to a seq without the commits before it (`Engine.reset(to:)`): every listener is read
    /// again, as a resume from a seq of another history is (`complete` then sends it its whole result as a
    /// reset), off the loop: each goes back to pending at the new seq, and the reads to make are returned. A
    /// listener being read already starts over; one held while judged again ends (UNAVAILABLE), since its
    /// whole result must not go out before the judgement.
    @discardableResult
    func resetAll() -> [(Listener, FirstSnapshotRead)] {
        engine.thread.check("ListenerHub.resetAll")
        let seq = engine.lastDurableSeq
        publishedSeq = seq
        refillRows.removeAll()
        // A first snapshot being read cannot be brought to the new seq by commits: it is read again.
        for l in pending.values { breakBacklog(of: l) }
        views.removeAll()
        dirtyBySink.removeAll()
        var reads: [(Listener, FirstSnapshotRead)] = []
        for l in listeners.values.sorted(by: { $0.id < $1.id }) where l.isRegistered {
            if l.held {
                fail(l, HearthError(.unavailable, "this node moved to seq \(seq) without the commits before it while the listener was judged again; listen again (with resumeAfter)"))
                continue
            }
            listeners[l.id] = nil
            l.isRegistered = false
            l.view = nil
            l.sent = []
            l.dirty = false
            l.resumeAfter = l.seq
            l.resumeIsForeign = true
            l.seq = seq
            l.backlog = []
            l.backlogBroken = false
            l.attempts = 0
            l.widen = 0
            pending[l.id] = l
            reads.append((l, firstRead(for: l)))
        }
        return reads
    }

    /// The version of each document touched by `later` commits as it was before them.
    static func stateBefore(_ later: ArraySlice<CommitRecord>) -> [DocumentPath: StoredDocument?] {
        var r: [DocumentPath: StoredDocument?] = [:]
        for c in later { for m in c.mutations where r[m.path] == nil { r[m.path] = .some(m.before) } }
        return r
    }

    /// The listeners `record` may affect, by ascending ID, each once. One index entry (the usual case: one
    /// document changed, listened to through one key) is returned as it is; several are merged. A listener
    /// removed while the commit is published stays in the list with `isRegistered` false.
    func affected(by record: CommitRecord) -> [Listener] { affected(by: record.mutations) }

    /// The listeners whose results `mutations` may change (see above).
    func affected(by mutations: some Sequence<Mutation>) -> [Listener] {
        var sources: [[Listener]] = []
        for m in mutations {
            if let s = index[.document(m.path)] { sources.append(s) }
            let coll = m.path.collectionDescription
            if let s = index[.collection(coll)] { sources.append(s) }
            if let s = index[.group(m.path.collectionID)] { sources.append(s) }
            if let fields = equalityFields[coll], !fields.isEmpty {
                for version in [m.before, m.after] {
                    guard let doc = version, let decoded = try? engine.codec.decode(doc.data) else { continue }
                    for field in fields.keys {
                        guard let v = decoded.value(at: field) else { continue }
                        if let s = index[.equality(collection: coll, field: field, value: IndexKey.key(v))] { sources.append(s) }
                    }
                }
            }
        }
        return Self.union(sources)
    }

    /// The duplicate-free union of lists sorted by ascending ID without duplicates, sorted the same way.
    static func union(_ sources: [[Listener]]) -> [Listener] {
        if sources.count <= 1 { return sources.first ?? [] }
        if sources.count > 8 {
            // Many lists (a commit touching many collections): one sort instead of a merge per list, whose
            // copies would grow with the square of their number.
            var all = sources.joined().sorted { $0.id < $1.id }
            var kept = 0
            for i in all.indices where i == 0 || all[i].id != all[kept - 1].id {
                all[kept] = all[i]
                kept += 1
            }
            all.removeLast(all.count - kept)
            return all
        }
        var merged = sources[0]
        for s in sources.dropFirst() {
            // The same listeners again (a second mutation of the same collection).
            if s.count == merged.count && zip(s, merged).allSatisfy({ $0 === $1 }) { continue }
            var out: [Listener] = []
            out.reserveCapacity(merged.count + s.count)
            var i = 0, j = 0
            while i < merged.count || j < s.count {
                if j == s.count || (i < merged.count && merged[i].id < s[j].id) {
                    out.append(merged[i]); i += 1
                } else if i == merged.count || s[j].id < merged[i].id {
                    out.append(s[j]); j += 1
                } else {
                    out.append(merged[i]); i += 1; j += 1
                }
            }
            merged = out
        }
        return merged
    }

    /// A document listener.
    private func apply(_ record: CommitRecord, to l: Listener) throws(HearthError) {
        guard case .document(let path) = l.target else { return }
        guard let m = record.mutations.first(where: { $0.path == path }) else { l.seq = record.seq; return }
        l.currentDocument = m.after
        l.seq = record.seq
        emit(l)
    }

    /// A shared query view: applied once, from the commit's decoded mutations; nil when a limit window lost a
    /// row it cannot refill without reading the store. A member falling behind keeps what its client holds
    /// (`emit`).
    private func apply(_ mutations: [DecodedMutation], to v: SharedView) -> [ViewChange]? {
        v.rowsBefore = nil
        let q = v.query
        if q.isWindow { return WindowView.apply(mutations, to: &v.rows, query: q) }
        return IncrementalView.apply(mutations, to: &v.rows, query: q)
    }

    /// Re-reads a limit window as of the commit being published.
    private func refill(_ v: SharedView, rollback: [DocumentPath: StoredDocument?]) throws(HearthError) -> [ViewChange] {
        let rows = try engine.runQuery(v.query, rollback: rollback).documents
        let changed = QueryView.changes(from: v.rows, to: rows, query: v.query)
        v.rows = rows
        return changed
    }

    /// Sends the listener's pending changes now, or marks it dirty while it is held, its subscriber is over
    /// budget, or another listener of the subscriber is behind: the connection's snapshots then all wait for
    /// the drain, which sends them in seq order (a listener not behind sent a later commit at once would
    /// overtake the older net changes of one behind). A query listener falling behind keeps the rows its
    /// client holds (`sent`): the view's rows before this commit, rebuilt once from `changes` for every member
    /// falling behind in it (its subscriber may have been over budget before the commit, or the snapshots of
    /// this commit sent to the members before it may have taken it there). `changes`, when known, are the changes from `sent` to `current` (the common case:
    /// nothing pending), with the view's size after them.
    private func emit(_ l: Listener, changes: (list: [ViewChange], size: Int)? = nil, shareKey: UInt64? = nil) {
        guard let sink = l.sink else { return }
        if mustHoldBack(l, sink) {
            if !l.dirty, let changes, let v = l.view {
                if v.rowsBefore == nil { v.rowsBefore = ViewChange.rowsBefore(changes.list, after: v.rows, query: v.query) }
                l.sent = v.rowsBefore!
            }
            if !l.dirty { dirtyBySink[ObjectIdentifier(sink), default: []].append(l) }
            l.dirty = true
            // The deadline runs for a subscriber over its budget only: one behind because a listener is held
            // (judged again) drains when it is released.
            if !sink.canAcceptEvents { sink.coalescing() }
            return
        }
        if let changes {
            sink.deliverChanges(seq: l.seq, size: changes.size, changes: changes.list, for: l, shareKey: shareKey)
        } else {
            send(l, to: sink)
        }
    }

    /// The changes for `l` wait (`emit`): it is dirty already or held, its subscriber is over budget, or
    /// another listener of the subscriber is behind.
    private func mustHoldBack(_ l: Listener, _ sink: ListenerSink) -> Bool {
        l.dirty || l.held || !sink.canAcceptEvents || isBehind(sink)
    }

    /// `emit` for a member of a view applied for an earlier member in this commit, the fan-out path: when
    /// nothing holds the changes back and the sink kept their encoding, it sends that, without taking a
    /// reference to the changes.
    private func emitMember(_ l: Listener, of v: SharedView) {
        if let key = v.shareKey, let sink = l.sink, !mustHoldBack(l, sink), sink.deliverShared(key, for: l) { return }
        emit(l, changes: (v.lastChanges, v.rows.count), shareKey: v.shareKey)
    }

    private func send(_ l: Listener, to sink: ListenerSink) {
        switch l.target {
        case .document:
            sink.deliver(.document(seq: l.seq, initial: false, document: l.currentDocument), for: l)
            l.sentDocument = l.currentDocument
        case .query(let q):
            let changes = QueryView.changes(from: l.sent, to: l.current, query: q)
            if !changes.isEmpty {
                sink.deliver(.query(seq: l.seq, initial: false, reset: false, size: l.current.count, changes: changes), for: l)
            }
            l.sent = []
        }
        l.dirty = false
    }

    /// The subscriber behind `sink` has drained: send each of its coalesced listeners one snapshot with the
    /// net changes since what it was last sent, in seq order, while its budget allows; the rest stay behind
    /// (from the first held one on, so that none overtakes it).
    public func drained(_ sink: ListenerSink) {
        engine.thread.check("ListenerHub.drained")
        guard !dirtyBySink.isEmpty else { return }    // no subscriber is behind: the common case, without a lookup
        let key = ObjectIdentifier(sink)
        guard let pending = dirtyBySink[key] else { return }
        var remaining: [Listener] = []
        for l in pending.sorted(by: { $0.seq < $1.seq }) where l.dirty && listeners[l.id] != nil {
            if remaining.isEmpty && !l.held && sink.canAcceptEvents {
                send(l, to: sink)
            } else {
                remaining.append(l)
            }
        }
        dirtyBySink[key] = remaining.isEmpty ? nil : remaining
    }

    /// True while some listener of `sink` holds back changes: its other listeners hold back theirs too.
    private func isBehind(_ sink: ListenerSink) -> Bool {
        !dirtyBySink.isEmpty && dirtyBySink[ObjectIdentifier(sink)] != nil
    }

    /// The dirty `l` is being removed: the sink's other listeners no longer wait for it. One held (judged
    /// again) may have kept them back after the last drain, with no drain to come: they are sent now, or at
    /// the end of the publication under way (a view may be applied for this commit, and its members' seq not
    /// yet moved).
    private func forgetBehind(_ l: Listener, of sink: ListenerSink) {
        let key = ObjectIdentifier(sink)
        guard var list = dirtyBySink[key] else { return }
        list.removeAll { $0 === l }
        l.dirty = false
        dirtyBySink[key] = list.isEmpty ? nil : list
        guard l.held && !list.isEmpty else { return }
        if publishing { drainAfterPublication.append(sink) } else { drained(sink) }
    }

    /// Keeps the listener's changes back, coalesced, until as many `release`s (it is being judged again).
    public func hold(_ l: Listener) {
        engine.thread.check("ListenerHub.hold")
        l.holds += 1
    }

    /// Ends one `hold`; after the last, what the listener missed meanwhile is sent now as one snapshot of the
    /// net changes (unless its subscriber is over budget, as for any coalesced listener).
    public func release(_ l: Listener) {
        engine.thread.check("ListenerHub.release")
        guard l.holds > 0 else { return }
        l.holds -= 1
        if l.holds == 0, l.dirty, let sink = l.sink { drained(sink) }
    }

    /// True when every listener of the subscriber has been sent everything up to its seq.
    public func isCaughtUp(_ sink: ListenerSink) -> Bool {
        guard !dirtyBySink.isEmpty else { return true }
        return dirtyBySink[ObjectIdentifier(sink)]?.contains { $0.dirty && listeners[$0.id] != nil } != true
    }

    /// Forgets a sink's pending state (its connection closed).
    public func forget(_ sink: ListenerSink) { dirtyBySink[ObjectIdentifier(sink)] = nil }

    private func fail(_ l: Listener, _ error: HearthError) {
        let sink = l.sink
        remove(l)
        sink?.deliver(.error(error), for: l)
    }
}
