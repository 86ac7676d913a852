import HearthProtocol
import HearthStorage

/// Every figure `stats` answers and `/metrics` exposes, gathered at one moment on the loop thread
/// (`Server.statsReport()`). The two renderings (`writeJSON`, `PrometheusText`) read only this.
struct StatsReport: Sendable {
    struct Op {
        let name: String
        let count: UInt64
        let errors: UInt64
        let perSecond: UInt64
        /// Latency percentiles over the recent window (10 to 20 s), µs; 0 when nothing ran in it.
        let p50Micros: UInt64
        let p99Micros: UInt64
        /// Latency since start (µs), for the Prometheus histogram.
        let latency: LogHistogram
    }

    var version = HearthVersion.string
    var uptimeSeconds: Double = 0
    var startTimeSeconds: Double = 0
    var connections = 0
    var listeners = 0
    var sharedViews = 0
    var coalescingSubscribers = 0
    var pendingCommits = 0
    var readsInFlight = 0
    var commits: UInt64 = 0
    var batches: UInt64 = 0
    var commitsPerSecond: UInt64 = 0
    var batchSizes = LogHistogram()
    var commitLatency = LogHistogram()
    var commitP50Micros: UInt64 = 0
    var commitP99Micros: UInt64 = 0
    var cacheHits = 0
    var cacheMisses = 0
    var cacheEntries = 0
    var cacheBytes = 0
    /// The store's own figures.
    var store = StoreFigures()
    var applier: ApplierStatus?
    var seq: UInt64 = 0
    /// Reads of the store made on the loop thread (the snapshot gate's count).
    var loopStoreReads: UInt64 = 0
    var retentionSeconds: Int64 = 0
    var retentionBytes: Int64 = 0
    var malformedRequests: UInt64 = 0
    var process = ProcessFigures()
    var ttlDeleted: UInt64 = 0
    var ops: [Op] = []
    /// A node of several over a shared store: its part (`ClusterCoordinator.status`).
    var cluster: ClusterStatus?

    var cacheHitRate: Double {
        let n = cacheHits + cacheMisses
        return n == 0 ? 0 : Double(cacheHits) / Double(n)
    }

    /// The `stats` response's fields (docs/operations.md, "Metrics").
    func writeJSON(into w: inout JSONWriter) {
        w.key("version"); w.string(version)
        w.key("uptimeSeconds"); w.double(uptimeSeconds)
        w.key("connections"); w.int(Int64(connections))
        w.key("listeners"); w.int(Int64(listeners))
        w.key("sharedViews"); w.int(Int64(sharedViews))
        w.key("coalescingSubscribers"); w.int(Int64(coalescingSubscribers))
        w.key("commits")
        w.beginObject()
        w.key("total"); w.uint(commits)
        w.key("perSecond"); w.uint(commitsPerSecond)
        w.key("batches"); w.uint(batches)
        w.key("batchSizeMean"); w.double(batches == 0 ? 0 : Double(commits) / Double(batches))
        w.key("batchSizeP99"); w.uint(batchSizes.quantile(0.99))
        w.key("durableP50Micros"); w.uint(commitP50Micros)
        w.key("durableP99Micros"); w.uint(commitP99Micros)
        w.key("durableHistogram")
        writeBuckets(commitLatency, into: &w)
        w.endObject()
        w.key("queues")
        w.beginObject()
        w.key("pendingCommits"); w.int(Int64(pendingCommits))
        w.key("readsInFlight"); w.int(Int64(readsInFlight))
        w.endObject()
        w.key("cache")
        w.beginObject()
        w.key("hits"); w.int(Int64(cacheHits))
        w.key("misses"); w.int(Int64(cacheMisses))
        w.key("hitRate"); w.double(cacheHitRate)
        w.key("entries"); w.int(Int64(cacheEntries))
        w.key("bytes"); w.int(Int64(cacheBytes))
        w.endObject()
        w.key("store")
        w.beginObject()
        w.key("bytesOnDisk"); w.int(store.bytesOnDisk)
        w.key("seq"); w.uint(seq)
        w.key("oldestResumableSeq"); w.uint(store.oldestResumableSeq)
        w.key("loopReads"); w.uint(loopStoreReads)
        w.key("retentionSeconds"); w.int(retentionSeconds)
        w.key("retentionBytes"); w.int(retentionBytes)
        if let a = applier {
            w.key("applier")
            w.beginObject()
            w.key("backlogCommits"); w.int(Int64(a.backlogCommits))
            w.key("backlogGroups"); w.int(Int64(a.backlogGroups))
            w.key("coalescedGroups"); w.int(Int64(a.coalescedGroups))
            w.key("groups"); w.int(Int64(a.groups))
            w.key("transactions"); w.int(Int64(a.transactions))
            w.key("largestTransaction"); w.int(Int64(a.largestTransaction))
            w.key("stalled")
            if let why = a.stalled { w.string(why) } else { w.null() }
            w.key("pacedGroups"); w.int(Int64(a.pacedGroups))
            w.key("pacedMicros"); w.uint(a.pacedMicros)
            w.key("blockedGroups"); w.int(Int64(a.blockedGroups))
            w.key("blockedMicros"); w.uint(a.blockedMicros)
            w.key("writebacks"); w.int(Int64(a.writebacks))
            w.key("writebackFailures"); w.int(Int64(a.writebackFailures))
            w.key("writebackFailure")
            if let why = a.writebackFailure { w.string(why) } else { w.null() }
            w.endObject()
        }
        w.endObject()
        w.key("process")
        w.beginObject()
        w.key("residentBytes"); w.int(process.residentBytes)
        w.key("cpuSeconds"); w.double(process.cpuSeconds)
        w.key("openFiles"); w.int(Int64(process.openFiles))
        w.endObject()
        w.key("ttlDeleted"); w.uint(ttlDeleted)
        w.key("malformedRequests"); w.uint(malformedRequests)
        if let c = cluster {
            w.key("cluster")
            w.beginObject()
            w.key("node"); w.string(c.node)
            w.key("role"); w.string(c.role)
            if let term = c.term { w.key("term"); w.uint(term) }
            w.key("committer"); if let name = c.committer { w.string(name) } else { w.null() }
            w.key("storeSeq"); w.uint(c.storeSeq)
            w.key("lagCommits"); w.uint(c.lagCommits)
            w.key("adoptedCommits"); w.uint(c.adopted)
            w.key("forwardedWrites"); w.uint(c.forwarded)
            w.key("forwardsAwaited"); w.int(Int64(c.awaited))
            w.key("elections"); w.int(Int64(c.elections))
            w.endObject()
        }
        w.key("ops")
        w.beginObject()
        for op in ops where op.count > 0 {
            w.key(op.name)
            w.beginObject()
            w.key("count"); w.uint(op.count)
            w.key("errors"); w.uint(op.errors)
            w.key("perSecond"); w.uint(op.perSecond)
            w.key("p50Micros"); w.uint(op.p50Micros)
            w.key("p99Micros"); w.uint(op.p99Micros)
            w.endObject()
        }
        w.endObject()
    }

    /// `[[upper bound µs, count], ...]` for the non-empty buckets (each bucket holds values below its bound).
    private func writeBuckets(_ h: LogHistogram, into w: inout JSONWriter) {
        w.beginArray()
        for (i, n) in h.counts.enumerated() where n > 0 {
            w.beginArray(); w.uint(LogHistogram.upperBound(i)); w.uint(n); w.endArray()
        }
        w.endArray()
    }
}

/// A node's part in its cluster, for `stats` and `/metrics`.
struct ClusterStatus {
    var node: String
    var role: String
    var term: UInt64?
    var committer: String?
    /// The database's last seq as the node last read it (every election round), and how far the node's
    /// published seq was behind it then.
    var storeSeq: UInt64
    var lagCommits: UInt64
    var adopted: UInt64
    var forwarded: UInt64
    /// Forwarded writes not answered to their client yet.
    var awaited: Int
    /// Times this node was elected committer.
    var elections: Int
}
