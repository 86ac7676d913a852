#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resource figures of a local process from /proc (Linux): CPU time, resident memory, and finding the
/// process that listens on a TCP port.
enum ProcStats {
    /// One reading of a process: CPU seconds used so far (user + system) and memory in bytes.
    struct Sample: Sendable {
        var cpuSeconds: Double
        var rssBytes: Int
        var peakRSSBytes: Int
    }

    /// Reads `/proc/<pid>/stat` and `/proc/<pid>/status`; nil if the process is gone or unreadable, or has
    /// exited and not yet been reaped (a zombie has no memory to report, and would read as RSS 0).
    static func sample(pid: Int32) -> Sample? {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)" start at field 3 (state); utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, fields[0] != "Z", fields[0] != "X",
              let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let status = readText("/proc/\(pid)/status") ?? ""
        return Sample(cpuSeconds: (utime + stime) / ticks, rssBytes: statusKiB(status, "VmRSS:") * 1024,
                      peakRSSBytes: statusKiB(status, "VmHWM:") * 1024)
    }

    /// This process's own CPU seconds (all threads), from getrusage.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let u = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let s = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return u + s
    }

    /// The PID of the process with a socket listening on TCP `port` (IPv4 or IPv6): the socket's inode
    /// from /proc/net/tcp{,6}, then the /proc/<pid>/fd entry that links to `socket:[inode]`.
    static func listeningPID(port: Int) -> Int32? {
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = readText(table) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let cols = line.split(separator: " ")
                guard cols.count > 9, cols[3] == "0A", let colon = cols[1].lastIndex(of: ":"),
                      Int(cols[1][cols[1].index(after: colon)...], radix: 16) == port else { continue }
                inodes.insert("socket:[\(cols[9])]")
            }
        }
        guard !inodes.isEmpty, let proc = opendir("/proc") else { return nil }
        defer { closedir(proc) }
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = Int32(name) else { continue }
            guard let fds = opendir("/proc/\(pid)/fd") else { continue }
            defer { closedir(fds) }
            while let fd = readdir(fds) {
                let fdName = withUnsafeBytes(of: fd.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                var target = [CChar](repeating: 0, count: 64)
                let n = readlink("/proc/\(pid)/fd/\(fdName)", &target, target.count - 1)
                guard n > 0 else { continue }
                let link = String(decoding: target[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if inodes.contains(link) { return pid }
            }
        }
        return nil
    }

    private static func statusKiB(_ status: String, _ key: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(key) {
            return Int(line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
        }
        return 0
    }

    /// A small text file (such as one under /proc), or nil.
    static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
