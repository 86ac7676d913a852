import HearthStorage

/// A node of several over one shared store (`hearthd --postgres`): how it names itself and how long the
/// committer's lease lasts.
public struct ClusterSettings: Sendable {
    public var node: ClusterNode
    /// How long a committer's lease lasts without renewal (`--lease-ms`): a frozen committer is deposed after
    /// this long, and writes pause meanwhile. Renewed every third of it.
    public var leaseMs: Int

    public static let defaultLeaseMs = 5000

    public init(node: ClusterNode, leaseMs: Int = ClusterSettings.defaultLeaseMs) {
        self.node = node
        self.leaseMs = leaseMs
    }

    /// How often the committer renews and the followers look at the lease.
    var roundMs: UInt64 { UInt64(max(50, leaseMs / 3)) }
}

/// What a node is in its cluster.
enum ClusterRole: Equatable {
    /// Publishes the committer's commits from the feed and forwards writes to it (nil: none is known yet).
    case follower(committer: ClusterNode?)
    /// Elected for `term`; publishes up to `from`, the stored last seq the term begins at, before it commits.
    case promoting(term: UInt64, from: UInt64)
    /// Commits, for `term`.
    case committer(term: UInt64)

    var name: String {
        switch self {
        case .follower: return "follower"
        case .promoting: return "promoting"
        case .committer: return "committer"
        }
    }

    var term: UInt64? {
        switch self {
        case .follower: return nil
        case .promoting(let t, _), .committer(let t): return t
        }
    }
}
