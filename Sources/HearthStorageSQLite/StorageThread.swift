#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CThreadName
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
}
