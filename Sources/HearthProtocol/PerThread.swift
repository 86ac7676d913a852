#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One object per thread: made on the thread's first use, released when the thread exits (a pthread key's
/// destructor). For per-thread scratch state on hot paths (`ThreadParser`, `ThreadWriter`).
final class PerThread<T: AnyObject>: @unchecked Sendable {
    private let key: pthread_key_t
    private let make: @Sendable () -> T

    init(_ make: @escaping @Sendable () -> T) {
        var key = pthread_key_t()
        #if canImport(Darwin)
        let rc = pthread_key_create(&key) { Unmanaged<AnyObject>.fromOpaque($0).release() }
        #else
        let rc = pthread_key_create(&key) { p in if let p { Unmanaged<AnyObject>.fromOpaque(p).release() } }
        #endif
        precondition(rc == 0, "pthread_key_create failed")
        self.key = key
        self.make = make
    }

    /// This thread's object.
    var current: T {
        if let p = pthread_getspecific(key) { return Unmanaged<T>.fromOpaque(p).takeUnretainedValue() }
        let object = make()
        pthread_setspecific(key, Unmanaged.passRetained(object).toOpaque())
        return object
    }
}
