import HearthModel
import HearthStorage

/// Registration with the first snapshot read off the loop thread, so that a listen never holds the loop for
/// a store read (a large result, a resume's replay, a store across the network):
///
/// 1. `begin`, on the loop at the published seq P: the listener is created and indexed for matching, but not
///    registered: every published commit that may affect it goes to its backlog instead.
/// 2. A reader thread runs the returned `FirstSnapshotRead` on a snapshot at some seq S ≥ P.
/// 3. `complete`, on the loop once S is published (the caller waits for that as for any off-loop read): the
///    snapshot is brought from S to the published seq by the backlog's commits after S, through the same
///    in-memory application as a publication, and the listener is registered there with its first snapshot.
///
/// Commits in (P, S] are in both the snapshot and the backlog and are skipped; the backlog holds every commit
/// after P that can affect the listener (the matching index is the one publication uses), so the result is
/// exact at the seq it is registered at, as `add`'s. When the backlog cannot bring it there (a limit window
/// lost a row only the store knows, the hub reset every listener, the backlog outgrew its bound), `complete`
/// starts over at the current seq: with `readsOffLoop` (a server), nothing is ever read on the loop.
extension ListenerHub {
    /// The most commits a pending listener keeps before its read is started over.
    static let maxBacklog = 50_000

    /// Starts registering a listener whose first snapshot a reader thread reads (see above). The listener is
    /// returned pending (`isPending`): hand the read to a reader, then the result to `complete`; `remove` it
    /// to give up (its connection closed).
    public func begin(_ target: Listener.Target, tag: String, sink: ListenerSink, resumeAfter: UInt64?,
                      history: UInt64? = nil) throws(HearthError) -> (Listener, FirstSnapshotRead) {
        engine.thread.check("ListenerHub.begin")
        if case .query(let q) = target {
            if q.offset > 0 { throw .invalid("offset is not supported by listeners (use cursors)") }
            _ = try engine.prepare(q)   // a query no index serves is refused here, before anything is registered
        }
        let seq = engine.lastDurableSeq
        let l = Listener(id: nextID, tag: tag, target: target, sink: sink, seq: seq)
        nextID += 1
        l.backlog = []
        l.resumeAfter = resumeAfter
        l.resumeIsForeign = resumeAfter.map { $0 > seq || (history != nil && history != engine.historyID) } ?? false
        pending[l.id] = l
        register(l)
        return (l, firstRead(for: l))
    }

    /// True when `add` registers this listener from memory alone, reading nothing from the store: a cached
    /// document, or a first listen on a query whose result another listener already holds. Any other is
    /// registered with `begin` and `complete`.
    public func registersInMemory(_ target: Listener.Target, resumeAfter: UInt64?) -> Bool {
        switch target {
        case .document(let path): return engine.cache.peekRendered(DocumentCache.Key(path)) != nil
        case .query(let q): return resumeAfter == nil && views[q] != nil
        }
    }

    /// What a reader reads for `l`'s first snapshot from its current `seq`.
    func firstRead(for l: Listener) -> FirstSnapshotRead {
        var target = l.target
        if l.widen > 0, case .query(let q) = target { target = .query(q.widened(by: l.widen)) }
        return FirstSnapshotRead(target: target, diffFrom: l.resumeIsForeign ? nil : l.resumeAfter, maxResumeCommits: maxResumeCommits)
    }

    public enum Completion {
        /// Registered at the published seq. `delivered`: its first snapshot went to its sink; false only when
        /// the sink said it sends it itself and the snapshot is exactly the reader's rows, all added (a first
        /// listen no commit since the snapshot changed): the sink sends those at the listener's `seq`.
        case registered(delivered: Bool)
        /// Still pending: hand this read (from the current seq) to a reader, and its result to `complete`.
        case again(FirstSnapshotRead)
        /// Not registered, and removed from the hub: answer the listen with this error.
        case failed(HearthError)
    }

    /// Registers the pending `l` with the first snapshot a reader read for it, at the published seq, and
    /// delivers that snapshot to its sink. The snapshot's seq must be published (the caller waits until it
    /// is). `sinkSendsInitial`: the sink has the initial snapshot of the reader's rows encoded already (made
    /// on the reader thread) and sends it when nothing changed them (`Completion.registered`).
    public func complete(_ l: Listener, with first: FirstSnapshot, sinkSendsInitial: Bool = false) -> Completion {
        engine.thread.check("ListenerHub.complete")
        precondition(l.isPending && pending[l.id] === l, "complete() for a listener that is not pending")
        precondition(first.seq <= engine.lastDurableSeq, "a first snapshot at seq \(first.seq) completed before it was published (\(engine.lastDurableSeq))")
        let seq = engine.lastDurableSeq
        let later = l.backlog!.drop { $0.seq <= first.seq }
        guard first.seq >= l.seq, !l.backlogBroken else { return .again(startOver(l)) }
        let event: ListenerEvent
        var untouched = false   // the first snapshot is the reader's rows, all added
        switch l.target {
        case .document(let path):
            var doc = first.document
            for c in later { if let m = c.mutations.last(where: { $0.path == path }) { doc = m.after } }
            l.currentDocument = doc
            l.sentDocument = doc
            event = .document(seq: seq, initial: l.resumeAfter == nil, reset: l.resumeIsForeign, document: doc)
        case .query(let q):
            if let shared = views[q] {
                assert(publishedSeq == seq && shared.seq <= seq, "a listener joins a shared view at seq \(shared.seq), hub at \(publishedSeq), published \(seq)")
                l.view = shared
            } else {
                // Read with `widen` rows beyond the window (`startOver`): brought forward as that larger
                // window, then trimmed to the listener's.
                let wq = l.widen > 0 ? q.widened(by: l.widen) : q
                let n = q.limit ?? q.limitToLast ?? 0
                var rows = first.rows
                // Widened: the rows are the first (last) of the result as far as they go; once as many as the
                // widened window, there may be more beyond them (rows lost meanwhile are not replaced, and only
                // fewer than the listener's window is a loss the rows cannot cover).
                var truncated = l.widen > 0 && rows.count >= n + l.widen
                untouched = l.resumeAfter == nil && l.widen == 0
                for i in later.indices {
                    let c = later[i]
                    let mutations: [DecodedMutation]
                    do { mutations = try DecodedCommit(c, codec: engine.codec).mutations(for: wq) } catch {
                        // A stored version that does not decode: the listen fails as its read would have.
                        remove(l)
                        return .failed(error)
                    }
                    let changes: [ViewChange]
                    if q.isWindow {
                        let window = truncated ? q.widened(by: rows.count - n) : wq
                        if let c = WindowView.apply(mutations, to: &rows, query: window, minimum: l.widen > 0 ? n : nil) {
                            changes = c
                            if l.widen > 0 && rows.count >= n + l.widen { truncated = true }
                        } else if l.attempts < Self.maxAttempts || readsOffLoop {
                            // With reads off the loop it is read again, with more rows beyond the window each
                            // time (`startOver`).
                            return .again(startOver(l))
                        } else {
                            // A window that keeps losing rows while it is read: refilled here as a publication
                            // refills one (a read on the loop), rather than read again without end.
                            do {
                                rows = try engine.runQuery(wq, rollback: Self.stateBefore(later[(i + 1)...])).documents
                            } catch {
                                remove(l)
                                return .failed(error)
                            }
                            untouched = false
                            continue
                        }
                    } else {
                        changes = IncrementalView.apply(mutations, to: &rows, query: q)
                    }
                    if !changes.isEmpty { untouched = false }
                }
                rows = q.trimmed(rows)
                let fresh = SharedView(query: q, rows: rows, seq: seq)
                views[q] = fresh
                l.view = fresh
            }
            let now = l.current
            if untouched && sinkSendsInitial {
                event = .query(seq: seq, initial: true, reset: false, size: now.count, changes: [])   // not delivered
            } else if l.resumeAfter == nil {
                event = .query(seq: seq, initial: true, reset: false, size: now.count, changes: QueryView.changes(from: [], to: now, query: q))
            } else if let earlier = first.earlier.map({ q.trimmed($0) }) {
                event = .query(seq: seq, initial: false, reset: false, size: now.count, changes: QueryView.changes(from: earlier, to: now, query: q))
            } else {
                event = .query(seq: seq, initial: false, reset: true, size: now.count, changes: QueryView.changes(from: [], to: now, query: q))
            }
        }
        pending[l.id] = nil
        l.backlog = nil
        l.seq = seq
        l.view?.members.append(l)
        l.sent = []
        listeners[l.id] = l
        l.isRegistered = true
        if untouched && sinkSendsInitial { return .registered(delivered: false) }
        l.sink?.deliver(event, for: l)
        return .registered(delivered: true)
    }

    /// How many times a pending listener's read starts over before it takes rows beyond its window (with
    /// `readsOffLoop`), or before a window it cannot bring forward is refilled on the loop (without).
    static let maxAttempts = 3

    /// The most rows a first read takes beyond its window.
    static let maxWiden = 4096

    /// `l`'s read starts over from the current seq. With `readsOffLoop`, once its window lost a
    /// row during `maxAttempts` reads, each read takes more rows beyond the window (twice the window, then
    /// doubling, up to `maxWiden`), which replace those it loses while it is read.
    private func startOver(_ l: Listener) -> FirstSnapshotRead {
        l.attempts += 1
        if readsOffLoop, l.attempts >= Self.maxAttempts, case .query(let q) = l.target,
           let n = q.limit ?? q.limitToLast {
            l.widen = min(Self.maxWiden, max(2 * n, 2 * l.widen))
        }
        l.seq = engine.lastDurableSeq
        l.backlog = []
        l.backlogBroken = false
        return firstRead(for: l)
    }

    /// A published commit that may affect the pending `l`.
    func keep(_ record: CommitRecord, for l: Listener) {
        guard !l.backlogBroken else { return }
        guard l.backlog!.count < Self.maxBacklog else { return breakBacklog(of: l) }
        l.backlog!.append(record)
    }

    /// The pending `l`'s backlog can no longer bring its snapshot to the published seq: it will be read again.
    func breakBacklog(of l: Listener) {
        l.backlogBroken = true
        l.backlog = []
    }
}
