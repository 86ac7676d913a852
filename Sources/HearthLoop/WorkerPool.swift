#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibcGNU

/// Threads of their own for work that must not run on the loop thread nor queue behind (or ahead of) libuv's
/// shared pool, which carries the commit writer: large reads run here, so a burst of them never delays a
/// group commit's fsync.
///
/// `submit` (loop thread) queues `work`; one of the pool's threads runs it; `done` then runs on the loop
/// thread, through one wakeup that drains every finished item (several finishing together cost one
/// wake). Items submitted during one loop turn are handed to the threads together before the loop polls
/// (one lock, and one wakeup per thread needed rather than per item: a wakeup of a thread on another core
/// costs more than the short delay). Items start in submission order, urgent ones first (work something
/// everyone waits for, such as a publication's window refills, does not queue behind client reads); they may
/// finish in any order. `close()` (loop thread) lets
/// running items finish, runs nothing more, and joins the threads; `done` of an item that had not run is
/// called anyway after its `work` runs inline, so every `done` runs exactly once.
///
/// Lifetimes: the pool retains its loop and every queued item until its `done` has run; the loop's
/// before-poll hook refers to the pool unowned. Close the pool before the loop shuts down and before the
/// last reference to it goes.
public final class WorkerPool: @unchecked Sendable {
    private struct Item {
        let work: @Sendable () -> Void
        let done: () -> Void
        var urgent = false
    }

    // Guarded by `mutex`: the queue, the finished list, `closing`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [Item] = []
    private var queueHead = 0
    /// Urgent items not yet started, taken before `queue`'s (from `urgentHead`).
    private var urgentQueue: [Item] = []
    private var urgentHead = 0
    private var finished: [() -> Void] = []
    private var closing = false
    private var running = 0
    /// The number of threads waiting for work. Guarded by `mutex`.
    private var idle = 0
    // Loop thread only.
    /// Items submitted this turn, handed over before the loop polls.
    private var submitted: [Item] = []
    /// The previous turn's emptied `submitted`, swapped back in (no allocation per turn).
    private var spare: [Item] = []
    private var handOver: LoopHook?
    /// Set by `close()`: later items run inline.
    private var closed = false
    private var wakeup: Wakeup?
    private let loop: EventLoop
    private var threads: [pthread_t] = []
    public let threadCount: Int

    /// Starts `threads` worker threads, named `name` (for `top -H`, `ps -L`, perf and gdb; at most 15 bytes,
    /// Linux's limit).
    public init(loop: EventLoop, threads: Int, name: String = "hearth-worker") {
        precondition(threads > 0, "a worker pool needs at least one thread")
        assert(name.utf8.count <= 15, "thread name \(name) is longer than 15 bytes")
        threadCount = threads
        self.loop = loop
        mutex.initialize(to: pthread_mutex_t())
        cond.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
        wakeup = loop.makeWakeup { [unowned self] in self.drainFinished() }
        handOver = loop.beforePoll { [unowned self] in self.handOverSubmitted() }
        for _ in 0..<threads {
            var t = pthread_t()
            let ctx = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&t, nil, { raw in
                #if canImport(Glibc)
                let pool = Unmanaged<WorkerPool>.fromOpaque(raw!).takeRetainedValue()
                #else
                let pool = Unmanaged<WorkerPool>.fromOpaque(raw).takeRetainedValue()
                #endif
                pool.runThread()
                return nil
            }, ctx)
            precondition(rc == 0, "pthread_create failed: \(rc)")
            _ = hearth_set_thread_name(t, name)
            self.threads.append(t)
        }
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    /// Items queued and not yet started, and items running. Loop thread only.
    public var load: (queued: Int, running: Int) {
        locked { (queue.count - queueHead + urgentQueue.count - urgentHead + submitted.count, running) }
    }

    /// Queues `work` for a pool thread (handed over before the loop next polls); `done` runs on the loop
    /// thread afterwards. `urgent` work starts before every item queued without it. Loop thread only.
    public func submit(_ work: @escaping @Sendable () -> Void, urgent: Bool = false, done: @escaping () -> Void) {
        guard !closed else {
            work()
            done()
            return
        }
        if submitted.isEmpty { loop.requestTurn() }   // queued during a before-poll pass: one more pass
        submitted.append(Item(work: work, done: done, urgent: urgent))
    }

    /// Queues `work` for a pool thread; `done` runs on the loop thread afterwards with what it returned (carried
    /// across in a box the pool's lock orders: written before `done` runs). Loop thread only.
    public func submit<T>(_ work: @escaping @Sendable () -> T, urgent: Bool = false, done: @escaping (T) -> Void) {
        let box = ResultBox<T>()
        submit({ box.value = work() }, urgent: urgent, done: { done(box.value!) })
    }

    /// Moves this turn's items to the threads' queue and wakes as many waiting threads as there are items.
    func handOverSubmitted() {
        guard !submitted.isEmpty else { return }
        var items: [Item] = []
        swap(&items, &spare)                 // `spare`'s empty buffer becomes `submitted`'s, unshared
        swap(&items, &submitted)
        defer {
            items.removeAll(keepingCapacity: true)
            spare = items
        }
        let accepted: Bool = locked {
            guard !closing else { return false }
            for item in items { if item.urgent { urgentQueue.append(item) } else { queue.append(item) } }
            if items.count >= idle { pthread_cond_broadcast(cond) } else { for _ in 0..<items.count { pthread_cond_signal(cond) } }
            return true
        }
        if !accepted {
            for item in items {
                item.work()
                item.done()
            }
        }
    }

    /// Finishes running items, runs no more queued ones (their `work` runs inline here, then their `done`),
    /// joins the threads and closes the wakeup. Loop thread only; idempotent.
    public func close() {
        closed = true
        handOver?.cancel()
        handOver = nil
        let submittedNow = submitted
        submitted.removeAll()
        let leftovers: [Item] = locked {
            guard !closing else { return [] }
            closing = true
            let rest = Array(urgentQueue[urgentHead...]) + Array(queue[queueHead...]) + submittedNow
            queue.removeAll()
            urgentQueue.removeAll()
            queueHead = 0
            urgentHead = 0
            pthread_cond_broadcast(cond)
            return rest
        }
        for t in threads { pthread_join(t, nil) }
        threads.removeAll()
        drainFinished()
        for item in leftovers {
            item.work()
            item.done()
        }
        wakeup?.close()
        wakeup = nil
    }

    private func runThread() {
        while true {
            let item: Item? = locked {
                while queueHead == queue.count && urgentHead == urgentQueue.count && !closing {
                    idle += 1
                    pthread_cond_wait(cond, mutex)
                    idle -= 1
                }
                if urgentHead < urgentQueue.count {
                    let it = urgentQueue[urgentHead]
                    urgentHead += 1
                    if urgentHead == urgentQueue.count { urgentQueue.removeAll(keepingCapacity: true); urgentHead = 0 }
                    running += 1
                    return it
                }
                guard queueHead < queue.count else { return nil }
                let it = queue[queueHead]
                queueHead += 1
                if queueHead == queue.count { queue.removeAll(keepingCapacity: true); queueHead = 0 }
                running += 1
                return it
            }
            guard let item else { return }
            item.work()
            locked {
                running -= 1
                finished.append(item.done)
            }
            wakeup?.signal()
        }
    }

    private func drainFinished() {
        let dones: [() -> Void] = locked {
            let d = finished
            finished.removeAll(keepingCapacity: true)
            return d
        }
        for d in dones { d() }
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}

/// What a pool thread's work returned, for `done` on the loop (`WorkerPool.submit(_:done:)` with a result).
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
