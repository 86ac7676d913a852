import HearthEngine
import HearthModel
import HearthStorage

extension Server {
    /// One page of index backfill or purge per loop turn, so building an index never blocks writes.
    /// Paused while the disk is full.
    func runIndexWork() {
        guard engine.hasIndexWork, !shuttingDown, engine.diskFull == nil, engine.commitRefusal == nil, engine.pendingCommitCount < 64,
              !indexPageReading else { return }
        if engine.storeIsRemote { return readIndexPage() }
        do { try engine.indexWorkStep() } catch { logger.warn("index work failed, will retry: \(error)") }
        keepTurningWhileIndexWorkRemains()
    }

    /// Keeps the loop turning while work remains, even when no client is active.
    private func keepTurningWhileIndexWorkRemains() {
        guard engine.hasIndexWork && indexTimer == nil else { return }
        indexTimer = loop.timer(after: 1) { [unowned self] in self.indexTimer = nil }
    }

    /// Scans the next page of index work on a reader, then does it on the loop.
    private func readIndexPage() {
        guard let page = engine.indexWorkRead() else { return }
        indexPageReading = true
        let store = self.store
        onReader({ () throws(HearthError) in
            let snapshot = try store.snapshot()
            defer { snapshot.close() }
            return try page.read(on: snapshot)
        }, done: { [unowned self] scanned in
            indexPageReading = false
            do { try engine.indexWorkStep(page, scanned) } catch {
                // A document a publication changed during the scan is not read here: the page is scanned again.
                if engine.takeMissing().paths.isEmpty { logger.warn("index work failed, will retry: \(error)") }
            }
            keepTurningWhileIndexWorkRemains()
        })
    }
}
