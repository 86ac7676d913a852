#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CLibcGNU
import HearthModel

/// The storage's own threads (the checkpointer, the applier): a pthread running `body`, which holds what it
/// captures until it returns, named `name` for `top -H`, `ps -L`, perf and gdb (at most 15 bytes, Linux's
/// limit). Throws UNAVAILABLE naming `what` when the thread cannot be created.
enum StorageThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    static func start(_ what: String, name: String, _ body: @escaping () -> Void) throws(HearthError) -> pthread_t {
        assert(name.utf8.count <= 15, "thread name \(name) is longer than 15 bytes")
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw HearthError(.unavailable, "storage: cannot start the \(what) thread (error \(rc))")
        }
        _ = hearth_set_thread_name(t, name)
        return t
    }

    // Timed waits of the storage's threads run on the monotonic clock where the platform allows it, so that a
    // step of the wall clock cannot stretch or cut them.
    #if os(Linux)
    private static let waitClock = CLOCK_MONOTONIC
    #else
    private static let waitClock = CLOCK_REALTIME
    #endif

    /// Initializes `condition` for timed waits against `deadline(after:)`.
    static func initCondition(_ condition: UnsafeMutablePointer<pthread_cond_t>) {
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if os(Linux)
        pthread_condattr_setclock(&attributes, waitClock)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    /// Now on the clock of the timed waits, in nanoseconds.
    static func nanos() -> UInt64 {
        var t = timespec()
        clock_gettime(waitClock, &t)
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    /// `nanos` (from `nanos()`) as a deadline for `pthread_cond_timedwait` on a condition from `initCondition`.
    static func deadline(at nanos: UInt64) -> timespec {
        timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    }

    /// The time `ns` nanoseconds from now, for `pthread_cond_timedwait` on a condition from `initCondition`.
    static func deadline(after ns: Int) -> timespec { deadline(at: nanos() &+ UInt64(max(0, ns))) }

    /// With `mutex` held: waits on `condition` (from `initCondition`) until `done()` or `seconds` pass, and
    /// returns `done()` (tests' barriers on a storage thread's progress).
    static func wait(on condition: UnsafeMutablePointer<pthread_cond_t>, _ mutex: UnsafeMutablePointer<pthread_mutex_t>,
                     within seconds: Double, until done: () -> Bool) -> Bool {
        var d = deadline(after: Int(seconds * 1e9))
        while !done() {
            if pthread_cond_timedwait(condition, mutex, &d) == ETIMEDOUT { break }
        }
        return done()
    }

    /// True once `deadline` has passed.
    static func passed(_ deadline: timespec) -> Bool {
        nanos() >= UInt64(deadline.tv_sec) &* 1_000_000_000 &+ UInt64(deadline.tv_nsec)
    }
}
