import Testing
import Foundation
import Synchronization
@testable import HearthLoop

/// The worker pool hands each loop turn's items to its threads together (before the loop polls), runs every
/// `done` exactly once on the loop thread, and never strands an item: not one queued during a before-poll
/// pass, not one queued while it closes.
@Suite("Worker pool")
struct WorkerPoolTests {
    #if os(Linux)
    @Test("the pool's threads carry its name, as the kernel reports it to top -H and perf")
    func threadsCarryThePoolsName() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 2, name: "hearth-t-named")
        defer { pool.close() }
        let seen = Recorder<String>("")
        pool.submit({
            let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            seen.set(comm.trimmingCharacters(in: .whitespacesAndNewlines))
        }, done: { loop.stop() })
        runBounded(loop, timeoutMs: 5000)
        #expect(seen.get() == "hearth-t-named")
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
        }
        #expect(names.filter { $0.hasPrefix("hearth-t-named") }.count == 2)
    }
    #endif

    @Test("items run on the pool's threads in submission order; each done runs once, on the loop thread")
    func itemsRunInOrderAndFinishOnTheLoop() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 1)
        let loopThread = currentThreadID()
        let started = Recorder<[Int]>([])
        let workThreads = Recorder<Set<UInt>>([])
        var dones: [Int] = []
        var doneOffLoop = 0
        let count = 200
        for i in 0..<count {
            pool.submit({
                started.set(started.get() + [i])
                workThreads.set(workThreads.get().union([currentThreadID()]))
            }, done: {
                dones.append(i)
                if currentThreadID() != loopThread { doneOffLoop += 1 }
                if dones.count == count { loop.stop() }
            })
        }
        #expect(pool.load.queued == count)                  // not yet handed over: the loop has not polled
        runBounded(loop, timeoutMs: 5000)
        pool.close()
        #expect(started.get() == Array(0..<count))          // one thread: starts in submission order
        #expect(dones.sorted() == Array(0..<count))
        #expect(doneOffLoop == 0)
        #expect(!workThreads.get().contains(loopThread))
    }

    @Test("an urgent item starts before the items queued ahead of it, and in order with other urgent ones")
    func urgentItemsStartFirst() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 1)
        defer { pool.close() }
        let held = DispatchSemaphore(value: 0)
        let started = Recorder<[String]>([])
        var dones = 0
        let total = 6
        func note(_ name: String) -> @Sendable () -> Void { { started.set(started.get() + [name]) } }
        func finished() { dones += 1; if dones == total { loop.stop() } }
        pool.submit({ held.wait() }, done: finished)          // the only thread is busy with this
        pool.handOverSubmitted()
        for name in ["a", "b"] { pool.submit(note(name), done: finished) }
        pool.handOverSubmitted()                               // queued, behind the running item
        pool.submit(note("c"), done: finished)
        pool.submit(note("u1"), urgent: true, done: finished)
        pool.submit(note("u2"), urgent: true, done: finished)
        pool.handOverSubmitted()
        held.signal()
        runBounded(loop, timeoutMs: 5000)
        #expect(started.get() == ["u1", "u2", "a", "b", "c"])
        #expect(dones == total)
    }

    @Test("several threads share a turn's items")
    func severalThreadsShareTheWork() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 3)
        // The first two items wait for each other (a barrier): they can only both finish if two threads run
        // them at once. The rest record their thread.
        let together = DispatchGroup()
        together.enter()
        together.enter()
        let bothStarted = Recorder<Bool>(true)
        let threads = Mutex<Set<UInt>>([])
        var finished = 0
        for i in 0..<60 {
            pool.submit({
                threads.withLock { _ = $0.insert(currentThreadID()) }
                if i < 2 {
                    together.leave()
                    if together.wait(timeout: .now() + 5) == .timedOut { bothStarted.set(false) }
                }
            }, done: {
                finished += 1
                if finished == 60 { loop.stop() }
            })
        }
        runBounded(loop, timeoutMs: 10_000)
        pool.close()
        #expect(finished == 60)
        #expect(bothStarted.get(), "the first two items did not run at the same time")
        #expect(threads.withLock { $0.count } > 1)
    }

    @Test("an item queued during a before-poll pass, after the pool's hand-over, runs without another event")
    func anItemQueuedDuringTheBeforePollPassIsNotStranded() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 1)      // its hand-over hook is registered first
        var submitted = false
        var done = false
        let hook = loop.beforePoll {
            guard !submitted else { return }
            submitted = true
            pool.submit({}, done: { done = true; loop.stop() })
        }
        // The watchdog is the only other event: were the item stranded until the next poll returned, the run
        // would end by the watchdog (recorded as a failure).
        runBounded(loop, timeoutMs: 3000)
        hook.cancel()
        pool.close()
        #expect(done)
    }

    @Test("closing runs the items not yet handed over, and later items run inline; every done once")
    func closeRunsWhatIsLeft() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pool = WorkerPool(loop: loop, threads: 2)
        let worked = Recorder<Int>(0)
        let lock = NSLock()
        var dones = 0
        for _ in 0..<10 {
            pool.submit({ lock.lock(); worked.set(worked.get() + 1); lock.unlock() }, done: { dones += 1 })
        }
        pool.close()                                       // before any hand-over: all run inline
        #expect(worked.get() == 10 && dones == 10)
        pool.submit({ lock.lock(); worked.set(worked.get() + 1); lock.unlock() }, done: { dones += 1 })
        #expect(worked.get() == 11 && dones == 11)
        pool.close()                                       // idempotent
        #expect(dones == 11)
    }
}
