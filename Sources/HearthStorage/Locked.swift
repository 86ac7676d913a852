#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t` (Hearth's deployment target predates `Synchronization.Mutex` on
/// macOS, so the stores carry this small wrapper instead).
///
/// Contract: the state is reached only inside `withLock`, and nothing borrowed from it (a reference, a
/// pointer) escapes the closure. Under that rule the box is safe to share between threads, which is why it
/// is `@unchecked Sendable` whatever `State` is. The lock is not recursive: a `withLock` body must not call
/// `withLock` on the same box.
package final class Locked<State>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var state: State

    /// With `spinning`, a thread that finds the lock taken spins briefly before it sleeps (glibc's adaptive
    /// mutex; elsewhere an ordinary one): for locks held for a few hundred nanoseconds by several busy
    /// threads, where sleeping and waking would cost more than the wait.
    package init(_ state: State, spinning: Bool = false) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        #if canImport(Glibc)
        if spinning { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP)) }
        #endif
        let rc = pthread_mutex_init(mutex, &attributes)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state. Inlinable, so callers in other modules get it
    /// specialized (an unspecialized generic call costs more than the lock on a hot path).
    @inlinable
    package func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
