import HearthEngine
import HearthLoop
import HearthModel
import HearthStorage

/// Deletes every document of a subtree (a collection and everything below it, or a document and everything
/// below it) in batches of at most `batchSize` documents: each batch's paths are read on a reader thread,
/// then deleted by one ordinary commit (listeners see it), and the next batch is read only once that
/// commit is durable. Between batches the loop serves everyone else, so a delete of any size holds the loop
/// for one commit's work at a time. Documents written into the subtree while it runs are deleted too, until
/// a read finds it empty. Loop thread.
final class RecursiveDelete {
    let root: ResourcePath
    let batchSize: Int
    private unowned let server: Server
    private let store: any StoreAdministration
    private let progress: (Int) -> Void
    private let done: (Result<Int, HearthError>) -> Void
    private(set) var deleted = 0
    private var finished = false

    init(root: ResourcePath, batchSize: Int, server: Server, store: any StoreAdministration,
         progress: @escaping (Int) -> Void, done: @escaping (Result<Int, HearthError>) -> Void) {
        self.root = root
        self.batchSize = batchSize
        self.server = server
        self.store = store
        self.progress = progress
        self.done = done
    }

    func start() { nextBatch() }

    /// Ends the job (the daemon is stopping): no further batch starts.
    func cancel() {
        finish(.failure(HearthError(.unavailable, "the daemon is shutting down; \(deleted) documents were deleted, run it again to delete the rest")))
    }

    private func finish(_ result: Result<Int, HearthError>) {
        guard !finished else { return }
        finished = true
        done(result)
    }

    private func nextBatch() {
        guard !finished else { return }
        let store = self.store, root = self.root, limit = self.batchSize
        let read = PathsRead()
        server.readers.submit({
            do throws(HearthError) { read.paths = try store.documentPaths(under: root, limit: limit) } catch { read.error = error }
        }, done: { [self] in
            guard !finished else { return }
            if let error = read.error { return finish(.failure(error)) }
            guard !read.paths.isEmpty else { return finish(.success(deleted)) }
            deleteBatch(read.paths.map { Write(kind: .delete, path: $0, operation: .delete) }, missed: MissedReads())
        })
    }

    /// Deletes one batch in one commit. The versions the loop does not hold are read on a reader first where
    /// the store is across the network or the batch is large (`Engine.readsFirst`), and again if the commit
    /// still missed one (`Engine+WriteReads.swift`).
    private func deleteBatch(_ writes: [Write], missed: MissedReads) {
        guard !finished else { return }
        let engine = server.engine
        if let reads = engine.readsFirst(for: writes, requestID: nil) {
            return read(reads, thenCommit: writes, missed: missed)
        }
        commit(writes, missed: missed)
    }

    private func read(_ reads: WriteReads, thenCommit writes: [Write], missed: MissedReads) {
        server.readFirst(reads) { [self] failure in
            if let failure { return finish(.failure(failure)) }
            commit(writes, missed: missed)
        }
    }

    private func commit(_ writes: [Write], missed: MissedReads) {
        guard !finished else { return }
        let count = writes.count
        do throws(HearthError) {
            try server.engine.commit(writes) { [self] result in
                switch result {
                case .success:
                    deleted += count
                    progress(deleted)
                    // Not from inside the publication: the next read starts on the next loop turn.
                    server.loop.timer(after: 0) { [self] in nextBatch() }
                case .failure(let error):
                    finish(.failure(error))
                }
            }
        } catch {
            let engine = server.engine
            switch missed.next(engine, reads: { m, _ in engine.readsNeeded(for: writes, requestID: nil, also: m.paths) }) {
            case .stands: finish(.failure(error))
            case .refused(let refusal): finish(.failure(refusal))
            case .again(let next, let reads): read(reads, thenCommit: writes, missed: next)
            }
        }
    }
}

/// A reader thread's answer (written before `done` runs; the pool's lock orders it).
private final class PathsRead: @unchecked Sendable {
    var paths: [DocumentPath] = []
    var error: HearthError?
}
