/// The Prometheus text exposition (format 0.0.4) of a `StatsReport`: `# HELP` and `# TYPE` before each
/// family, counters ending in `_total`, durations in seconds, histograms as cumulative `_bucket{le}` lines
/// with `_sum` and `_count`. docs/operations.md lists every family.
enum PrometheusText {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Latency bucket bounds: 2^k µs for k = 3 ... 26 (8 µs to about 67 s); each is a `LogHistogram` boundary.
    static let latencyBoundsMicros: [UInt64] = (3...26).map { 1 << UInt64($0) }
    /// Batch size bounds: 2^k - 1 commits (values are whole numbers: <= 2^k - 1 is < 2^k, a boundary).
    static let batchBounds: [UInt64] = (1...10).map { (1 << UInt64($0)) }

    static func render(_ r: StatsReport) -> String {
        var out = ""
        out.reserveCapacity(16 * 1024)
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ value: String, _ labels: String = "") {
            out += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
        }
        func gauge(_ name: String, _ help: String, _ value: String) {
            family(name, "gauge", help)
            sample(name, value)
        }
        func counter(_ name: String, _ help: String, _ value: String) {
            family(name, "counter", help)
            sample(name, value)
        }

        family("hearth_build_info", "gauge", "Hearth's version, as a label; always 1.")
        sample("hearth_build_info", "1", "version=\"\(escape(r.version))\"")
        gauge("hearth_uptime_seconds", "Seconds since the daemon started.", number(r.uptimeSeconds))
        gauge("hearth_connections", "Client connections open.", "\(r.connections)")
        gauge("hearth_listeners", "Listeners (subscriptions) registered.", "\(r.listeners)")
        gauge("hearth_shared_views", "Query results shared by listeners with the same query.", "\(r.sharedViews)")
        gauge("hearth_coalescing_subscribers", "Subscribers over their output budget whose listeners are coalescing changes.", "\(r.coalescingSubscribers)")
        gauge("hearth_pending_commits", "Commits applied in memory and not yet durable (queued or being written).", "\(r.pendingCommits)")
        gauge("hearth_reads_in_flight", "Reads running on reader threads.", "\(r.readsInFlight)")
        counter("hearth_commits_total", "Commits made durable.", "\(r.commits)")
        counter("hearth_commit_batches_total", "Group commits (batches of commits made durable by one commit-log frame and fsync).", "\(r.batches)")
        histogram("hearth_commit_batch_size", "Commits per group commit.", r.batchSizes, bounds: batchBounds.map { $0 - 1 },
                  le: { "\($0)" }, below: { $0 + 1 }, sum: "\(r.batchSizes.sum)", into: &out)
        histogram("hearth_commit_duration_seconds", "Time the writer thread took to make a group commit durable (the commit log's write and fsync, and any wait for the applier's pace or for room in its backlog).",
                  r.commitLatency, bounds: latencyBoundsMicros, le: seconds, below: { $0 }, sum: seconds(r.commitLatency.sum), into: &out)
        counter("hearth_cache_hits_total", "Document reads answered from the cache.", "\(r.cacheHits)")
        counter("hearth_cache_misses_total", "Document reads that went to the store.", "\(r.cacheMisses)")
        gauge("hearth_cache_entries", "Documents in the cache.", "\(r.cacheEntries)")
        gauge("hearth_cache_bytes", "Bytes of documents in the cache.", "\(r.cacheBytes)")
        gauge("hearth_store_bytes", "Bytes the store's files take on disk.", "\(r.store.bytesOnDisk)")
        counter("hearth_store_loop_reads_total", "Reads of the store made on the event loop thread (over PostgreSQL they stay at or near 0: such reads are made on reader threads).", "\(r.loopStoreReads)")
        if let a = r.applier {
            gauge("hearth_applier_backlog_commits", "Commits durable in the commit log and not yet applied to the database.", "\(a.backlogCommits)")
            gauge("hearth_applier_backlog_groups", "Groups holding the backlog's commits (the applier coalesces them as they wait; each read consults every one).", "\(a.backlogGroups)")
            counter("hearth_applier_coalesced_groups_total", "Pending groups the applier replaced by coalesced ones (a group coalesced again counts again).", "\(a.coalescedGroups)")
            counter("hearth_applier_groups_total", "Group commits applied to the database by the background applier.", "\(a.groups)")
            counter("hearth_applier_transactions_total", "Database transactions the background applier ran (each holds one or more groups).", "\(a.transactions)")
            counter("hearth_applier_paced_groups_total", "Groups the commit log's writer paced to the applier's rate while the backlog was over three quarters of its bounds.", "\(a.pacedGroups)")
            counter("hearth_applier_paced_seconds_total", "Time groups waited for that pace, in all.", seconds(a.pacedMicros))
            counter("hearth_applier_blocked_groups_total", "Groups that waited for the applier to make room: the backlog was at its bound.", "\(a.blockedGroups)")
            counter("hearth_applier_blocked_seconds_total", "Time groups waited at the bound, in all.", seconds(a.blockedMicros))
            gauge("hearth_applier_stalled", "1 while the background applier cannot apply the backlog (writes are refused; the log holds it), else 0.", a.stalled == nil ? "0" : "1")
            counter("hearth_writeback_files_total", "Files (the database and its WAL) written back to the disk while the applier and checkpoints write them.", "\(a.writebacks)")
            counter("hearth_writeback_failures_total", "Write-backs of the database's files that failed (an I/O error: the syncs durability relies on see it too).", "\(a.writebackFailures)")
        }
        gauge("hearth_seq", "The last durable and published seq.", "\(r.seq)")
        gauge("hearth_oldest_resumable_seq", "The oldest seq listeners can resume from (the change log's retention window starts after it).", "\(r.store.oldestResumableSeq)")
        counter("hearth_ttl_deleted_total", "Documents deleted by TTL policies.", "\(r.ttlDeleted)")
        if let c = r.cluster {
            gauge("hearth_cluster_committer", "1 while this node is the committer, else 0 (a follower, or elected and catching up).", c.role == "committer" ? "1" : "0")
            gauge("hearth_cluster_term", "The committer's term this node knows (0: none yet).", "\(c.term ?? 0)")
            gauge("hearth_cluster_lag_commits", "Commits in the database this node had not published yet, at the last election round.", "\(c.lagCommits)")
            counter("hearth_cluster_adopted_commits_total", "Commits published from the commit feed (made by another node).", "\(c.adopted)")
            counter("hearth_cluster_forwarded_writes_total", "Writes forwarded to the committer.", "\(c.forwarded)")
            gauge("hearth_cluster_forwards_awaited", "Forwarded writes not answered to their client yet.", "\(c.awaited)")
            counter("hearth_cluster_elections_total", "Times this node was elected committer.", "\(c.elections)")
        }
        counter("hearth_malformed_requests_total", "Request lines refused before an op was known (not JSON, no op, an unknown op).", "\(r.malformedRequests)")

        family("hearth_requests_total", "counter", "Requests answered, by op (errors included).")
        for op in r.ops where op.count > 0 { sample("hearth_requests_total", "\(op.count)", "op=\"\(op.name)\"") }
        family("hearth_request_errors_total", "counter", "Requests answered with an error, by op.")
        for op in r.ops where op.count > 0 { sample("hearth_request_errors_total", "\(op.errors)", "op=\"\(op.name)\"") }
        family("hearth_request_duration_seconds", "histogram", "Time from dispatch to response, by op (commits: until durable).")
        for op in r.ops where op.latency.total > 0 {
            for b in latencyBoundsMicros {
                sample("hearth_request_duration_seconds_bucket", "\(op.latency.count(below: b))", "op=\"\(op.name)\",le=\"\(seconds(b))\"")
            }
            sample("hearth_request_duration_seconds_bucket", "\(op.latency.total)", "op=\"\(op.name)\",le=\"+Inf\"")
            sample("hearth_request_duration_seconds_sum", seconds(op.latency.sum), "op=\"\(op.name)\"")
            sample("hearth_request_duration_seconds_count", "\(op.latency.total)", "op=\"\(op.name)\"")
        }

        gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "\(r.process.residentBytes)")
        counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", number(r.process.cpuSeconds))
        gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", number(r.startTimeSeconds))
        gauge("process_open_fds", "Number of open file descriptors.", "\(r.process.openFiles)")
        return out
    }

    private static func histogram(_ name: String, _ help: String, _ h: LogHistogram, bounds: [UInt64],
                                  le: (UInt64) -> String, below: (UInt64) -> UInt64, sum: String, into out: inout String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for b in bounds { out += "\(name)_bucket{le=\"\(le(b))\"} \(h.count(below: below(b)))\n" }
        out += "\(name)_bucket{le=\"+Inf\"} \(h.total)\n\(name)_sum \(sum)\n\(name)_count \(h.total)\n"
    }

    /// Microseconds as seconds, exactly ("0.000008", "1.048576").
    static func seconds(_ micros: UInt64) -> String {
        let whole = micros / 1_000_000, frac = micros % 1_000_000
        guard frac != 0 else { return "\(whole)" }
        var f = String(frac)
        f = String(repeating: "0", count: 6 - f.count) + f
        while f.hasSuffix("0") { f.removeLast() }
        return "\(whole).\(f)"
    }

    static func number(_ v: Double) -> String {
        v.isFinite ? "\(v)" : (v.isNaN ? "NaN" : (v > 0 ? "+Inf" : "-Inf"))
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}
