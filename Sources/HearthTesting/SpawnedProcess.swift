import Foundation

/// A child process started with `posix_spawn` and reaped by this object alone (`waitpid` on its own pid), for
/// test daemons: Foundation's `Process` on Linux learns of an exit through a SIGCHLD handler on a dispatch
/// queue, and with the test runner's threads all busy a killed child could stay a zombie that
/// `waitUntilExit` waits for forever. Thread-safe.
final class SpawnedProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `path` with `arguments` (argv[0] is `path`), stdin and stdout on /dev/null, stderr on
    /// `stderrFD` (closed in the child's copy only).
    init(path: String, arguments: [String], stderrFD: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stderrFD, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw TestFailure("cannot start \(path): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// True until the child has exited (and been reaped here).
    var isRunning: Bool { poll(block: false) == nil }

    /// Waits for the exit; the exit status (128 + signal when killed by one).
    @discardableResult
    func wait() -> Int32 { poll(block: true)! }

    func signal(_ sig: Int32) { if isRunning { kill(pid, sig) } }

    private func poll(block: Bool) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        while true {
            let r = waitpid(pid, &raw, block ? 0 : WNOHANG)
            if r == pid { break }
            if r == 0 { return nil }
            if errno == EINTR { continue }
            status = -1   // ECHILD: not ours any more
            return status
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the C macros are not imported).
        let signaled = raw & 0x7f
        status = signaled == 0 ? (raw >> 8) & 0xff : 128 + signaled
        return status
    }
}
