#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Directories a test process makes and removes when it exits, also those held by objects that live as long
/// as the process (a suite's `static let` certificates or keys, whose `deinit` never runs).
public enum TemporaryDirectories {
    nonisolated(unsafe) private static var paths: [String] = []
    private static let lock = NSLock()
    private static let installed: Void = { atexit { TemporaryDirectories.removeAll() } }()

    /// Removes `path` (and what it holds) when the process exits, unless it is gone by then.
    public static func removeAtExit(_ path: String) {
        _ = installed
        lock.withLock { paths.append(path) }
    }

    static func removeAll() {
        for p in lock.withLock({ paths }) { try? FileManager.default.removeItem(atPath: p) }
    }
}
