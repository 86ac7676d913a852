#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The thread that owns single-threaded state (the loop thread, for the engine, its listener hub and every
/// session), checked at entry points in debug builds, as swift-nio's `preconditionInEventLoop` does. Release
/// builds compile the check away.
///
/// The owner is the thread that created the value; `adopt()` hands it to the calling thread (a daemon that
/// builds its state on one thread and runs its loop on another).
package struct ThreadOwner: @unchecked Sendable {
    private var owner: pthread_t

    package init() { owner = pthread_self() }

    package mutating func adopt() { owner = pthread_self() }

    /// Traps in debug builds when called off the owning thread.
    @inline(__always)
    package func check(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        assert(pthread_equal(owner, pthread_self()) != 0, "\(what()) called off its owning thread", file: file, line: line)
    }
}
