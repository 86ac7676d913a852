#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex. Any thread; `withLock` must not be re-entered on the same thread.
final class Guarded<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// A count-down latch: `countDown()` from any thread; `wait(untilNanos:)` blocks until the count reaches
/// zero or the monotonic deadline passes (returns false on timeout).
final class Latch: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>
    private var count: Int

    init(count: Int) {
        self.count = count
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        cond = .allocate(capacity: 1)
        cond.initialize(to: pthread_cond_t())
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func countDown() {
        pthread_mutex_lock(mutex)
        if count > 0 { count -= 1 }
        if count == 0 { pthread_cond_broadcast(cond) }
        pthread_mutex_unlock(mutex)
    }

    @discardableResult
    func wait(untilNanos deadline: UInt64 = .max) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var ts = timespec(tv_sec: Int(min(deadline / 1_000_000_000, UInt64(Int.max / 2))),
                          tv_nsec: Int(deadline % 1_000_000_000))
        while count > 0 {
            if deadline == .max {
                pthread_cond_wait(cond, mutex)
            } else if pthread_cond_timedwait(cond, mutex, &ts) == ETIMEDOUT {
                return count == 0
            }
        }
        return true
    }
}

/// The monotonic clock (`CLOCK_MONOTONIC`, the clock libuv's `uv_hrtime` reads) in nanoseconds.
enum Clock {
    @inline(__always)
    static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A joinable POSIX thread running one closure.
final class WorkerThread: @unchecked Sendable {
    private var tid = pthread_t()
    private var started = false

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let status = pthread_create(&tid, nil, { arg in
            let body = Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        if status != 0 {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            fatalError("pthread_create failed: \(status)")
        }
        started = true
    }

    /// Waits for the thread to finish. Call once.
    func join() {
        guard started else { return }
        started = false
        pthread_join(tid, nil)
    }
}

private final class ThreadBody: @unchecked Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
