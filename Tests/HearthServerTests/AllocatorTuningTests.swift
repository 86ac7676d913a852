import CMalloc
import Testing
@testable import HearthServer

/// Which malloc thresholds hearthd sets at start, for each way an operator can have chosen them already.
@Suite struct AllocatorTuningTests {
    private static let both = AllocatorTuning(trimThreshold: AllocatorTuning.defaultTrimThreshold,
                                              mmapThreshold: AllocatorTuning.defaultMmapThreshold)

    @Test(arguments: [
        ([:], both),
        (["MALLOC_ARENA_MAX": "2", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"], both),
        (["MALLOC_TRIM_THRESHOLD_": "131072"], AllocatorTuning(trimThreshold: nil, mmapThreshold: AllocatorTuning.defaultMmapThreshold)),
        (["MALLOC_MMAP_THRESHOLD_": "0"], AllocatorTuning(trimThreshold: AllocatorTuning.defaultTrimThreshold, mmapThreshold: nil)),
        (["MALLOC_TRIM_THRESHOLD_": "", "MALLOC_MMAP_THRESHOLD_": "1"], AllocatorTuning(trimThreshold: nil, mmapThreshold: nil)),
        (["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"],
         AllocatorTuning(trimThreshold: nil, mmapThreshold: AllocatorTuning.defaultMmapThreshold)),
        (["GLIBC_TUNABLES": "glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=65536"],
         AllocatorTuning(trimThreshold: AllocatorTuning.defaultTrimThreshold, mmapThreshold: nil)),
        // A tunable named only as a prefix of another, or a value that merely mentions one, chooses nothing.
        (["GLIBC_TUNABLES": "glibc.malloc.trim_threshold_x=1:glibc.malloc.arena_max=glibc.malloc.mmap_threshold"], both),
    ] as [([String: String], AllocatorTuning)])
    func theOperatorsChoiceIsKept(environment: [String: String], expected: AllocatorTuning) {
        #expect(AllocatorTuning.forEnvironment { environment[$0] } == expected)
    }

    #if canImport(Glibc)
    /// glibc takes both defaults (it refuses an mmap threshold above its cap, 32 MiB on 64-bit), as hearthd sets
    /// them at start; this test process's malloc then runs with them, which changes nothing it checks.
    @Test func glibcTakesTheDefaults() {
        #expect(hearth_set_mmap_threshold(Int32(AllocatorTuning.defaultMmapThreshold)) == 1)
        #expect(hearth_set_trim_threshold(Int32(AllocatorTuning.defaultTrimThreshold)) == 1)
        #expect(AllocatorTuning.defaultMmapThreshold < AllocatorTuning.defaultTrimThreshold)
    }
    #endif
}
