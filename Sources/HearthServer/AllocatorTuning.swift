/// The malloc thresholds hearthd sets at start (glibc's `mallopt`, applied by hearthd's main before any thread
/// starts), unless the operator chose them in the environment.
///
/// Why: a response a reader thread builds is allocated in that thread's arena and freed on the loop thread
/// once sent. With glibc's defaults, an arena hands the free memory at its top back to the kernel as soon as
/// more than 128 KiB of it is free (the trim threshold), and the next responses fault the same pages in
/// again, zeroed: with two readers answering queries on two cores, 0.7 page faults per call-records query
/// and 3-5 µs of kernel time each (docs/benchmarks.md, "Reads on every core"). Kept free in the arena, the
/// memory is reused as it is. Allocations of `mmapThreshold` bytes or more still get pages of their own,
/// returned when freed, so a large result does not stay resident after it is sent; what stays is at most
/// `trimThreshold` bytes free at the top of each arena that once held that much.
///
/// Setting either threshold turns off glibc's own adjustment of both (which raises them after a large block
/// is freed), so both are set together. The operator's choice wins: `MALLOC_TRIM_THRESHOLD_`,
/// `MALLOC_MMAP_THRESHOLD_` or the matching `GLIBC_TUNABLES` entries leave that threshold alone (and
/// `MALLOC_ARENA_MAX` and the rest are never touched).
public struct AllocatorTuning: Equatable, Sendable {
    /// Bytes free at an arena's top before they are returned to the kernel (nil: left to the environment).
    public var trimThreshold: Int?
    /// Allocations at least this large get pages of their own (nil: left to the environment).
    public var mmapThreshold: Int?

    public static let defaultTrimThreshold = 32 << 20
    public static let defaultMmapThreshold = 4 << 20

    public init(trimThreshold: Int?, mmapThreshold: Int?) {
        self.trimThreshold = trimThreshold
        self.mmapThreshold = mmapThreshold
    }

    /// The thresholds to set, given the process's environment (`environment(name)` is `getenv`).
    public static func forEnvironment(_ environment: (String) -> String?) -> AllocatorTuning {
        let tunables = (environment("GLIBC_TUNABLES") ?? "").split(separator: ":").compactMap { entry in
            entry.split(separator: "=", maxSplits: 1).first.map(String.init)
        }
        func chosen(_ variable: String, _ tunable: String) -> Bool {
            environment(variable) != nil || tunables.contains(tunable)
        }
        return AllocatorTuning(
            trimThreshold: chosen("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold") ? nil : defaultTrimThreshold,
            mmapThreshold: chosen("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold") ? nil : defaultMmapThreshold)
    }
}
