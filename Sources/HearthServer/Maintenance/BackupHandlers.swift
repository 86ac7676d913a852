#if canImport(Glibc)
import Glibc
#endif
import HearthLoop
import HearthModel
import HearthProtocol
import HearthStorage

/// `backup`: an online copy of the whole store at one seq into a directory on the daemon's host
/// (`DocumentStore.backup`), on the maintenance thread. While it runs, the connection is sent progress lines
/// `{"type":"progress","id":…,"op":"backup","done":pages,"total":pages}` (at most 10 a second), then the
/// response `{seq,pages,bytes,micros,dir}`; the connection's next requests wait for it.
enum BackupHandlers {
    static let progressIntervalNanos: UInt64 = 100_000_000

    static func backup(_ ctx: Context, _ req: Request) throws(HearthError) {
        let dir = try req.string("dir")
        guard !dir.utf8.contains(0) else {
            throw .invalid("field \"dir\" holds a NUL character, which no path on the daemon's host can hold")
        }
        guard dir.hasPrefix("/") else {
            throw .invalid("field \"dir\" must be an absolute path on the daemon's host, got \"\(dir)\"")
        }
        let server = ctx.server
        let jobs = server.maintenance
        let store = try server.jobs.administration(for: "take an online backup")
        if let running = jobs.runningBackup {
            throw HearthError(.failedPrecondition, "a backup into \(running) is running; one backup runs at a time")
        }
        jobs.runningBackup = dir
        let session = ctx.session
        let id = req.id
        let progress = Locked<BackupProgress?>(nil)
        var lastSent: UInt64 = 0
        var sentFinal = false
        // Sends the latest progress (loop thread): at most 10 a second, and the last one always, once.
        let sendProgress = {
            guard let p = progress.withLock({ $0 }), !session.closed, !sentFinal else { return }
            let now = EventLoop.hrtimeNanos()
            guard now - lastSent >= progressIntervalNanos || p.done == p.total else { return }
            lastSent = now
            sentFinal = p.done == p.total
            var w = JSONWriter(capacity: 128)
            w.beginObject()
            w.key("type"); w.string("progress")
            w.key("id"); if let id { w.raw(id) } else { w.null() }
            w.key("op"); w.string("backup")
            w.key("done"); w.int(Int64(p.done))
            w.key("total"); w.int(Int64(p.total))
            w.endObject()
            w.newline()
            w.withBytes { session.conn.send($0) }
        }
        let wakeup = server.loop.makeWakeup { sendProgress() }
        let outcome = JobOutcome()
        let slot = session.beginOffLoopRead()
        let stop = jobs.stopRequested
        let started = EventLoop.hrtimeNanos()
        server.logger.info("backup into \(dir) started")
        jobs.pool.submit({
            var w = JSONWriter(capacity: 256)
            do throws(HearthError) {
                let result = try store.backup(to: dir) { p in
                    progress.withLock { $0 = p }
                    wakeup.signal()
                    return !stop.withLock { $0 }
                }
                outcome.seq = result.seq
                ResponseLine.beginOK(&w, id: id)
                w.key("seq"); w.uint(result.seq)
                w.key("pages"); w.int(Int64(result.pages))
                w.key("bytes"); w.int(result.bytes)
                w.key("micros"); w.uint((EventLoop.hrtimeNanos() - started) / 1000)
                w.key("dir"); w.string(dir)
                ResponseLine.end(&w)
            } catch {
                ResponseLine.error(&w, error.prefixed("backup"), id: id)
                outcome.error = error
            }
            outcome.line = w.bytes
        }, done: {
            sendProgress()          // the final progress goes before the answer, whichever wakeup ran first
            wakeup.close()
            jobs.runningBackup = nil
            if let error = outcome.error {
                server.logger.warn("backup into \(dir) failed: \(error.message)")
            } else {
                server.logger.info("backup into \(dir) finished at seq \(outcome.seq)")
            }
            session.offLoopReadDone(slot, line: outcome.line, seq: outcome.seq)
        })
    }
}
