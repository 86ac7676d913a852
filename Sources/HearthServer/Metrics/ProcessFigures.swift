#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon process's resident memory and CPU time, as `process_resident_memory_bytes` and
/// `process_cpu_seconds_total` report them.
struct ProcessFigures {
    var residentBytes: Int64 = 0
    var cpuSeconds: Double = 0
    /// Open file descriptors (connections, the store's files, the loop's own).
    var openFiles: Int = 0

    static func current() -> ProcessFigures {
        var f = ProcessFigures()
        var usage = rusage()
        if getrusage(Int32(RUSAGE_SELF.rawValue), &usage) == 0 {
            f.cpuSeconds = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        }
        // /proc/self/statm: "size resident shared ..." in pages.
        if let file = fopen("/proc/self/statm", "r") {
            var buf = [CChar](repeating: 0, count: 128)
            if fgets(&buf, Int32(buf.count), file) != nil {
                let parts = String(cString: buf).split(separator: " ")
                if parts.count >= 2, let pages = Int64(parts[1]) { f.residentBytes = pages * Int64(sysconf(Int32(_SC_PAGESIZE))) }
            }
            fclose(file)
        }
        if let dir = opendir("/proc/self/fd") {
            var n = 0
            while readdir(dir) != nil { n += 1 }
            closedir(dir)
            f.openFiles = max(0, n - 3)   // ".", "..", and the descriptor reading the directory
        }
        return f
    }
}
