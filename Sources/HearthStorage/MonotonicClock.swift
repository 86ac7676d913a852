#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Seconds on the monotonic clock (`CLOCK_MONOTONIC`): for deadlines and retries in the storage backends,
/// which a change of the wall clock must not stretch or cut.
package enum MonotonicClock {
    package static func seconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
