/// The malloc thresholds hearthd sets at start (glibc's `mallopt`, applied by hearthd's main before any thread
/// starts), unless the operator chose them in the environment.
///
/// Why: memory one thread allocates is often freed on another (a line a reader made, sent and freed by the
/// loop; a rendering a reader attached to a cached document, evicted later by the loop). With glibc's
/// defaults, an arena hands the free memory at its top back to the kernel as soon as more than 128 KiB of it
/// is free (the trim threshold), and the next allocations fault the same pages in again, zeroed: 0.5-1 page
/// faults per call-records query with two readers on two cores, before query responses were sent from the
/// reader's own writer (docs/benchmarks.md, "Reads on every core"). Kept free in the arena, the
/// memory is reused as it is. Allocations of `mmapThreshold` bytes or more still get pages of their own,
/// returned when freed, so a large result does not stay resident after it is sent. What stays is up to
/// `trimThreshold` bytes free at the top of each arena (glibc makes one per thread, up to 8 per core), on top
/// of the free memory below live blocks, which no threshold returns.
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

    public static let defaultTrimThreshold = 8 << 20
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
