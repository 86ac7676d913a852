import CMalloc
import Foundation
import HearthTesting
import Testing

/// jemalloc serves the process's allocations (CMalloc links it): in the test process, which imports CMalloc as
/// hearthd does, and in the daemon, which says so when it starts.
@Suite struct AllocatorTests {
    @Test func jemallocServesMallocHere() {
        #expect(hearth_allocator_version().map { String(cString: $0) }?.hasPrefix("5.") == true)
        #expect(hearth_allocator_serves_malloc() == 1)
        // Swift's own allocations go through it too.
        var before: UInt64 = 0, after: UInt64 = 0
        #expect(hearth_thread_allocated_bytes(&before))
        let array = [UInt8](repeating: 1, count: 1 << 16)
        #expect(hearth_thread_allocated_bytes(&after))
        #expect(after >= before + (1 << 16))
        #expect(array.count == 1 << 16)
    }

    @Test func theDaemonSaysItsAllocatorAtStart() throws {
        let daemon = try DaemonProcess()
        #expect(daemon.waitForLog("allocator: jemalloc 5."))
        #expect(daemon.waitForLog(", background purging"))
        func names() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")) ?? []).map { task in
                (try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
            }
        }
        // jemalloc's background thread names itself once it runs, which on a loaded machine can come after the
        // start-up lines: look until a deadline (nothing else tells when it has).
        let deadline = Date().addingTimeInterval(30)
        var seen = names()
        while !seen.contains(where: { $0.hasPrefix("jemalloc_bg_thd") }) && Date() < deadline {
            usleep(20_000)
            seen = names()
        }
        #expect(seen.contains { $0.hasPrefix("jemalloc_bg_thd") }, "threads: \(seen)")
    }
}
