import HearthModel
import HearthStorage

/// When a row leaves a full limit window and the commit brings none to take its place, publication refills
/// the window from the store, exact at that commit. With `readsOffLoop` (a server, over every store), that read
/// is made before the publication, on a reader thread, so the loop never waits for it (a window over many
/// index entries the query's filters skip can take a reader a long time to refill) and the listeners'
/// snapshots stay exactly what they would have been (one per commit, in seq order on every connection):
///
/// 1. `windowReads(for:)` runs the publication of `records` dry, on copies of the windows' rows, and returns
///    the refills it would make that are not known yet (the first of each window: the later ones depend on it);
/// 2. the caller reads each on a reader thread (`FirstSnapshotRead` with `diffFrom` the commit's seq: the
///    result at that seq, from any snapshot at or after it) and hands it to `provide`;
/// 3. repeat until `windowReads` returns none, then publish: `publish` takes each refill from what was
///    provided (`refillRows`), and forgets them all at its end.
///
/// A refill is a fact about the database (a query's result at a seq), so it is kept by query and seq, whatever
/// view needs it. One that could not be read (the change log no longer reaches the seq, a failed read) ends
/// the view's listeners with that error: the loop does not read instead.
extension ListenerHub {
    /// The refills publishing `records` would make that are not known yet (empty: it reads nothing).
    public func windowReads(for records: [CommitRecord]) -> [WindowRead] {
        engine.thread.check("ListenerHub.windowReads")
        guard !listeners.isEmpty else { return [] }
        // A row leaves a window only when its document changes or goes, so only the windows of listeners that a
        // changed or deleted document affects can lose one: a batch that only creates documents (a post's
        // fan-out to feeds) costs this pass and nothing more.
        let changed = records.lazy.filter { [publishedSeq] in $0.seq > publishedSeq }.flatMap { $0.mutations.lazy.filter { $0.before != nil } }
        guard !changed.isEmpty, views.values.contains(where: { $0.query.isWindow }) else { return [] }
        var mayLose = Set<ObjectIdentifier>()
        for l in affected(by: changed) {
            guard let v = l.view, v.query.isWindow else { continue }
            mayLose.insert(ObjectIdentifier(v))
        }
        guard !mayLose.isEmpty else { return [] }
        var rowsOf: [ObjectIdentifier: [ResultDocument]] = [:]
        var appliedAt: [ObjectIdentifier: UInt64] = [:]
        var blocked = Set<ObjectIdentifier>()
        var asked = Set<WindowKey>()
        var needed: [WindowRead] = []
        // The state before the batch's commits after record i, made once per record and shared by its refills.
        var laterState: [Int: [DocumentPath: StoredDocument?]] = [:]
        for (i, record) in records.enumerated() where !record.mutations.isEmpty && record.seq > publishedSeq {
            var decoded: DecodedCommit?
            for l in affected(by: record) where l.backlog == nil && l.isRegistered && l.seq < record.seq {
                guard let v = l.view, mayLose.contains(ObjectIdentifier(v)) else { continue }
                let id = ObjectIdentifier(v)
                guard !blocked.contains(id), appliedAt[id] != record.seq else { continue }
                if decoded == nil {
                    // One that does not decode fails its listeners when published; nothing to read for it.
                    guard let d = try? DecodedCommit(record, codec: engine.codec) else { break }
                    decoded = d
                }
                var rows = rowsOf[id] ?? v.rows
                if WindowView.apply(decoded!.mutations(for: v.query), to: &rows, query: v.query) == nil {
                    let key = WindowKey(query: v.query, seq: record.seq)
                    guard case .rows(let known) = refillRows[key] else {
                        // Not known or to be read again (read it), or not readable (its listeners end): the
                        // rest of this window depends on it.
                        blocked.insert(id)
                        if refillRows[key]?.isUnreadable != true && asked.insert(key).inserted {
                            // The batch's later commits rolled back from a snapshot at its last seq (the store's,
                            // unless another node committed meanwhile): no change log needed.
                            let versions = laterState[i] ?? Self.stateBefore(records[(i + 1)...])
                            laterState[i] = versions
                            let read = FirstSnapshotRead(target: .query(v.query), diffFrom: record.seq, maxResumeCommits: maxResumeCommits,
                                                         rollback: (records.last!.seq, versions))
                            needed.append(WindowRead(read: read, key: key))
                        }
                        continue
                    }
                    rows = known
                }
                rowsOf[id] = rows
                appliedAt[id] = record.seq
            }
        }
        return needed
    }

    /// The result of one of `windowReads`' reads (its rows at the commit's seq), for the publication.
    public func provide(_ w: WindowRead, _ result: Result<FirstSnapshot, HearthError>) {
        engine.thread.check("ListenerHub.provide")
        switch result {
        case .success(let first):
            if let rows = first.earlier {
                refillRows[w.key] = .rows(rows)
            } else if let damage = first.damage {
                refillRows[w.key] = .unreadable(damage)
            } else {
                refillRows[w.key] = .unreadable(HearthError(.unavailable, "the limit window lost a row at seq \(w.key.seq) that this node could not read again (the change log no longer reaches that seq from the database's seq \(first.seq)); listen again (with resumeAfter)"))
            }
        case .failure(let error):
            // A failure that may pass (a connection lost, the catalog moving) is read again, twice.
            var failures = 1
            if case .failed(let before) = refillRows[w.key] { failures += before }
            refillRows[w.key] = error.code == .unavailable && failures < 3 ? .failed(failures) : .unreadable(error)
        }
    }
}

/// A window refill read before a publication (`ListenerHub.provide`).
enum WindowRefill {
    /// The window's rows at the commit's seq.
    case rows([ResultDocument])
    /// Not readable: the view's listeners end with this error (without `readsOffLoop`, the publication
    /// reads it on the loop instead).
    case unreadable(HearthError)
    /// Its read failed this many times with an error that may pass: `windowReads` asks for it again.
    case failed(Int)

    var isUnreadable: Bool {
        if case .unreadable = self { return true }
        return false
    }
}

/// One window refill to read before a publication (`ListenerHub.windowReads`).
public struct WindowRead: Sendable {
    /// Run it on a reader: its `earlier` rows are the window at the commit's seq.
    public let read: FirstSnapshotRead
    let key: WindowKey
}

/// A query's result at a seq.
struct WindowKey: Hashable {
    let query: ValidQuery
    let seq: UInt64
}
