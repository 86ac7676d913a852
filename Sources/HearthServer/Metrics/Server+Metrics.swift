import HearthStorage

/// The server's side of the metrics: timing requests as they are answered (and logging the slow ones),
/// the once-a-second tick, and gathering a `StatsReport` for `stats` and `/metrics`.
extension Server {
    /// A request was answered (or, for a commit, its response filled): counts it and its latency, and logs it
    /// when it took at least `--slow-ms`.
    func requestFinished(_ t: RequestTiming, failed: Bool, id: [UInt8]?, session: Session) {
        let micros = (ServerMetrics.nanos() &- t.started) / 1000
        let op = metrics.ops[t.slot]
        op.record(micros: micros, failed: failed)
        if config.slowRequestMicros > 0 && micros >= config.slowRequestMicros {
            var fields: [(String, LogValue)] = [("op", .string(op.name)), ("peer", .string(session.conn.peer)),
                                                ("duration_ms", .number(Double(micros) / 1000))]
            if let id { fields.append(("id", .string(String(decoding: id, as: UTF8.self)))) }
            if failed { fields.append(("error", .string("true"))) }
            logger.log(.warn, "slow request", fields)
        }
    }

    /// Starts the once-a-second tick (rates, latency windows) and serves `/metrics` on the socket's metrics
    /// listener when there is one (bound with the other listeners, before the store was opened).
    func startMetrics(_ socket: ServerSocket) {
        metricsTimer = loop.timer(after: 1000, repeat: 1000) { [unowned self] in
            self.metrics.tick()
            if self.metricsEndpoint != nil { self.refreshStoreFigures() }
        }
        guard let listener = socket.metricsListener else { return }
        refreshStoreFigures()
        let endpoint = MetricsEndpoint(loop: loop, logger: logger, listener: listener) { [unowned self] in
            PrometheusText.render(self.statsReport())
        }
        socket.metricsTarget.accept = { [weak endpoint] conn in if let endpoint { endpoint.accepted(conn) } else { conn.abort() } }
        metricsEndpoint = endpoint
        logger.info("metrics on http://\(config.metricsHost.contains(":") ? "[\(config.metricsHost)]" : config.metricsHost):\(endpoint.port)/metrics")
    }

    func stopMetrics() {
        metricsTimer?.cancel()
        metricsTimer = nil
        metricsEndpoint?.close()
        metricsEndpoint = nil
    }

    /// Every figure, now (loop thread).
    func statsReport() -> StatsReport {
        var r = StatsReport()
        r.uptimeSeconds = metrics.uptimeSeconds
        r.startTimeSeconds = Double(metrics.startedWallMicros) / 1e6
        r.connections = connectionCount
        r.listeners = listenerHub.count
        r.sharedViews = listenerHub.sharedViewCount
        r.coalescingSubscribers = listenerHub.coalescingSinkCount
        r.pendingCommits = engine.pendingCommitCount
        r.readsInFlight = readsInFlight
        r.commits = metrics.commits
        r.batches = metrics.batches
        r.commitsPerSecond = metrics.commitsPerSecond
        r.batchSizes = metrics.batchSizes
        r.commitLatency = metrics.commitLatency
        r.commitP50Micros = metrics.commitQuantile(0.5)
        r.commitP99Micros = metrics.commitQuantile(0.99)
        let cache = engine.cacheCounters
        r.cacheHits = cache.hits
        r.cacheMisses = cache.misses
        r.cacheEntries = cache.entries
        r.cacheBytes = cache.bytes
        r.store = engine.storeIsRemote ? storeFigures : StoreFigures.read(store)
        r.applier = (store as? any StoreAdministration)?.applier
        r.seq = engine.lastDurableSeq
        r.loopStoreReads = engine.loopStoreReads
        r.retentionSeconds = config.retentionSeconds
        r.retentionBytes = config.retentionBytes
        r.malformedRequests = metrics.malformed
        r.process = ProcessFigures.current()
        r.ttlDeleted = ttlDeleted
        r.cluster = cluster?.status
        r.ops = metrics.ops.map {
            StatsReport.Op(name: $0.name, count: $0.count, errors: $0.errors, perSecond: $0.perSecond,
                           p50Micros: $0.windowQuantile(0.5), p99Micros: $0.windowQuantile(0.99), latency: $0.latency)
        }
        return r
    }
}

extension Server {
    /// Over a store across the network the loop does not read the store's figures: with `/metrics` served, a
    /// reader reads them at every tick (once a second) for it; `stats` reads them afresh on a reader.
    func refreshStoreFigures() {
        guard engine.storeIsRemote, !storeFiguresReading, !shuttingDown else { return }
        storeFiguresReading = true
        let store = self.store
        onReader({ StoreFigures.read(store) }, done: { [unowned self] outcome in
            storeFiguresReading = false
            if case .success(let figures) = outcome { storeFigures = figures }
        })
    }
}

/// The store's own figures in a `StatsReport`.
struct StoreFigures: Sendable {
    var bytesOnDisk: Int64 = 0
    var oldestResumableSeq: UInt64 = 0

    /// Reads them from `store` (any thread; 0 for a figure the store cannot give now).
    static func read(_ store: any DocumentStore) -> StoreFigures {
        StoreFigures(bytesOnDisk: (store as? any StoreAdministration)?.bytesOnDisk() ?? 0,
                     oldestResumableSeq: (try? store.oldestResumableSeq()) ?? 0)
    }
}
