import HearthModel

// Rules every backend applies identically, kept in one place so the backends cannot drift apart.

extension CommitRecord {
    /// The bytes this commit holds in the change log, as retention's `maxBytes` counts them: the `data` of
    /// every `before` and `after` image (paths, times and seqs are not counted).
    public var imageBytes: Int64 {
        var total: Int64 = 0
        for m in mutations {
            total += Int64(m.before?.data.count ?? 0) + Int64(m.after?.data.count ?? 0)
        }
        return total
    }
}

extension RetentionPolicy {
    /// Commits with a commit time below this are past `maxAgeMicros` when the newest commit in the log was
    /// made at `newest`. A negative `maxAgeMicros` counts as 0; the subtraction saturates.
    package func ageCutoff(newest: Timestamp) -> Int64 {
        let (cutoff, overflow) = newest.micros.subtractingReportingOverflow(max(0, maxAgeMicros))
        return overflow ? Int64.min : cutoff
    }

    /// Whether the oldest commit still in the log is pruned: it is older than `cutoff`, or the log holds more
    /// than `maxBytes` (a negative `maxBytes` counts as 0). Pruning repeats on the next oldest until this is
    /// false, so the log is always a suffix of the commit history and may end up empty.
    package func prunesOldest(commitMicros: Int64, logBytes: Int64, cutoff: Int64) -> Bool {
        commitMicros < cutoff || logBytes > max(0, maxBytes)
    }
}

/// The checks `apply` makes before touching anything, shared by every backend.
package enum CommitValidation {
    /// Throws INTERNAL unless the seqs of `commits` are strictly ascending, the first is above `lastSeq`,
    /// every seq fits in an Int64 (SQL backends store it signed), and every `before`/`after` image has its
    /// mutation's path (the log stores the path once).
    package static func check(_ commits: [CommitRecord], after lastSeq: UInt64) throws(HearthError) {
        var previous = lastSeq
        for commit in commits {
            guard commit.seq > previous else {
                throw HearthError(.internal, "storage: commit seq \(commit.seq) is not above the last seq \(previous)")
            }
            guard commit.seq <= UInt64(Int64.max) else {
                throw HearthError(.internal, "storage: commit seq \(commit.seq) is above the largest storable seq")
            }
            for m in commit.mutations {
                if let b = m.before, b.path != m.path {
                    throw HearthError(.internal, "storage: commit \(commit.seq): before image of \(m.path) has path \(b.path)")
                }
                if let a = m.after, a.path != m.path {
                    throw HearthError(.internal, "storage: commit \(commit.seq): after image of \(m.path) has path \(a.path)")
                }
            }
            previous = commit.seq
        }
    }

    /// The error every backend throws for a call after `close()`.
    package static let closed = HearthError(.unavailable, "storage: the store is closed")
}
