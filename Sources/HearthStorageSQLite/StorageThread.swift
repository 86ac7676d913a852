#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HearthModel

/// The storage's own threads (the checkpointer, the applier): a pthread running `body`, which holds what it
/// captures until it returns. Throws UNAVAILABLE naming `what` when the thread cannot be created.
enum StorageThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    static func start(_ what: String, _ body: @escaping () -> Void) throws(HearthError) -> pthread_t {
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
        return t
    }
}
