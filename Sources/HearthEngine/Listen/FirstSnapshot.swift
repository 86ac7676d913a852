import HearthModel
import HearthStorage

/// What a listener's first snapshot needs read from the store, handed to a reader thread
/// (`ListenerHub.begin`): run `read(on:indexes:codec:cache:)` there on a snapshot of the store, then give the
/// result to `ListenerHub.complete` on the loop thread once the snapshot's seq is published.
public struct FirstSnapshotRead: Sendable {
    public let target: Listener.Target
    /// The seq a resume diffs from; nil for a first listen, or when the resume point is not a seq of this
    /// history the engine has published (the listener then gets a reset).
    public let diffFrom: UInt64?
    /// The most commits a resume replays before falling back to a reset (`ListenerHub.maxResumeCommits`).
    public let maxResumeCommits: Int
    /// For a window refill: the state before the commits of its batch after `diffFrom` (each document's
    /// version before the first of them that changed it; the read keeps those the query may hold), which is the
    /// result at `diffFrom` from a snapshot at the batch's last seq, `through`, without the change log (whose
    /// retention may already have pruned those commits). Another snapshot seq reads the change log. A read
    /// that uses it returns that result alone (`earlier`; `rows` empty): a refill needs nothing else, and a
    /// window scanned twice held the batch twice as long.
    let rollback: (through: UInt64, versions: [DocumentPath: StoredDocument?])?

    public init(target: Listener.Target, diffFrom: UInt64?, maxResumeCommits: Int) {
        self.init(target: target, diffFrom: diffFrom, maxResumeCommits: maxResumeCommits, rollback: nil)
    }

    init(target: Listener.Target, diffFrom: UInt64?, maxResumeCommits: Int,
         rollback: (through: UInt64, versions: [DocumentPath: StoredDocument?])?) {
        self.target = target
        self.diffFrom = diffFrom
        self.maxResumeCommits = maxResumeCommits
        self.rollback = rollback
    }

    /// Reads the result at the snapshot's seq and, for a resume, the result at `diffFrom` (the snapshot's
    /// change log rolled back over it). Any thread; touches no engine state but the locked document cache.
    public func read(on snapshot: any StoreSnapshot, indexes: [IndexDefinition], codec: any DocumentCodec,
                     cache: DocumentCache?) throws(HearthError) -> FirstSnapshot {
        let seq = snapshot.seq
        switch target {
        case .document(let path):
            var doc = cache?.documents([path], at: seq)[0]
            if doc == nil, let read = try snapshot.get(path) {
                try codec.verifyStored(read)
                cache?.offer(read, readAt: seq)
                doc = read
            }
            return FirstSnapshot(seq: seq, rows: [], document: doc, earlier: nil, damage: nil)
        case .query(let q):
            let prepared = try PreparedQuery(q, indexes: indexes)
            if let n = diffFrom, n < seq, let rollback, rollback.through == seq {
                let versions = rollback.versions.filter { q.contains($0.key) }
                let then = try QueryExecution.run(prepared, rollback: versions, reads: snapshot, codec: codec).rows
                return FirstSnapshot(seq: seq, rows: [], document: nil, earlier: then, damage: nil)
            }
            let rows = try QueryExecution.run(prepared, rollback: [:], reads: snapshot, codec: codec).rows
            guard let n = diffFrom else { return FirstSnapshot(seq: seq, rows: rows, document: nil, earlier: nil, damage: nil) }
            if n >= seq { return FirstSnapshot(seq: seq, rows: rows, document: nil, earlier: n == seq ? rows : nil, damage: nil) }
            do {
                // Nil (older than the log reaches) or too many commits to replay: a reset.
                guard let commits = try snapshot.changes(after: n, limit: maxResumeCommits),
                      commits.count < maxResumeCommits else {
                    return FirstSnapshot(seq: seq, rows: rows, document: nil, earlier: nil, damage: nil)
                }
                var rollback: [DocumentPath: StoredDocument?] = [:]
                for c in commits where c.seq <= seq {
                    for m in c.mutations where rollback[m.path] == nil && q.contains(m.path) { rollback[m.path] = .some(m.before) }
                }
                let then = try QueryExecution.run(prepared, rollback: rollback, reads: snapshot, codec: codec).rows
                return FirstSnapshot(seq: seq, rows: rows, document: nil, earlier: then, damage: nil)
            } catch where error.code == .dataLoss {
                // A damaged change-log entry: the diff cannot be computed, but the current result is whole, so
                // the listener gets it as a reset (and the loop logs the damage).
                return FirstSnapshot(seq: seq, rows: rows, document: nil, earlier: nil, damage: error)
            }
        }
    }
}

/// A listener's first snapshot as a reader thread read it (`FirstSnapshotRead.read`).
public struct FirstSnapshot: Sendable {
    /// The snapshot's seq: everything below is exact there.
    public let seq: UInt64
    /// A query's result at `seq`.
    public let rows: [ResultDocument]
    /// A document's version (nil: absent).
    let document: StoredDocument?
    /// A resume's result at the seq it diffs from; nil: the listener gets a reset.
    let earlier: [ResultDocument]?
    /// A DATA_LOSS met on the way that did not fail the read (a damaged change-log entry), for the loop to report.
    public let damage: HearthError?
}
