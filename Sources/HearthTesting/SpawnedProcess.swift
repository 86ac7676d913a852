import Foundation

/// A child process started with `posix_spawn` and reaped by this object alone (`waitpid` on its own pid), for
/// every child the tests start (daemons, the CLI, openssl, python): Foundation's `Process` on Linux learns of
/// an exit through a SIGCHLD handler on a dispatch queue, and with the test runner's threads all busy a child
/// could stay a zombie that `waitUntilExit` waits for forever, or a quick run be reported as timed out.
/// Thread-safe.
final class SpawnedProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `path` with `arguments` (argv[0] is `path`): stdin from `stdinFD` and stdout to `stdoutFD`
    /// (/dev/null when nil), stderr to `stderrFD`, each the child's copy only (the caller's descriptors should
    /// be close-on-exec, so that no other child holds them); with this process's environment, or
    /// `environment` instead.
    init(path: String, arguments: [String], environment: [String: String]? = nil, stdinFD: Int32? = nil,
         stdoutFD: Int32? = nil, stderrFD: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdinFD { posix_spawn_file_actions_adddup2(&actions, stdinFD, 0) } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let stdoutFD { posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1) } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stderrFD, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { env in env.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for e in envp ?? [] { free(e) } }
        var child: pid_t = 0
        let rc = envp.map { e in posix_spawn(&child, path, &actions, nil, argv, e) } ?? posix_spawn(&child, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw TestFailure("cannot start \(path): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Runs `path arguments...` to its exit, feeding it `stdin` (then the end of input), and waits up to
    /// `timeout` seconds (then kills it and throws, naming `what`). Reaped here and read by threads of its own,
    /// so that busy dispatch queues cannot hold a run past its exit. Returns its exit status (128 + signal
    /// when killed by one) and what it printed.
    static func run(_ path: String, _ arguments: [String], stdin: String?, timeout: Double, environment: [String: String]?,
                    what: String) throws -> (status: Int32, stdout: String, stderr: String) {
        var input: [Int32] = [0, 0], out: [Int32] = [0, 0], err: [Int32] = [0, 0]
        guard hearth_pipe2(&input, O_CLOEXEC) == 0 else { throw TestFailure("pipe2 failed: errno \(errno)") }
        guard hearth_pipe2(&out, O_CLOEXEC) == 0 else {
            for fd in input { close(fd) }
            throw TestFailure("pipe2 failed: errno \(errno)")
        }
        guard hearth_pipe2(&err, O_CLOEXEC) == 0 else {
            for fd in input + out { close(fd) }
            throw TestFailure("pipe2 failed: errno \(errno)")
        }
        let child: SpawnedProcess
        do {
            child = try SpawnedProcess(path: path, arguments: arguments, environment: environment, stdinFD: input[0],
                                       stdoutFD: out[1], stderrFD: err[1])
        } catch {
            for fd in input + out + err { close(fd) }
            throw error
        }
        close(input[0])
        close(out[1])
        close(err[1])
        let stdoutText = PipeText(fd: out[0]), stderrText = PipeText(fd: err[0])
        let writeEnd = input[1], bytes = Array((stdin ?? "").utf8)
        // A child that exits without reading its input must not end this process with SIGPIPE.
        if !bytes.isEmpty { _ = Glibc.signal(SIGPIPE, SIG_IGN) }
        Thread.detachNewThread {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }   // the child closed its input
                sent += n
            }
            close(writeEnd)
        }
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning && Date() < deadline { usleep(2_000) }
        if child.isRunning {
            child.signal(SIGKILL)
            child.wait()
            _ = stderrText.wait(seconds: 5)
            throw TestFailure("\(what) did not finish within \(timeout) s; stderr:\n\(stderrText.text)")
        }
        let status = child.wait()
        return (status, stdoutText.wait(seconds: 10), stderrText.wait(seconds: 10))
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

/// Everything a child writes to a pipe, read to its end by a thread of its own (which then closes it).
private final class PipeText: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var data: [UInt8] = []

    init(fd: Int32) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                lock.withLock { data += buffer[0..<n] }
            }
            close(fd)
            done.signal()
        }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// The text once the pipe has ended, or what came within `seconds`.
    func wait(seconds: Double) -> String {
        _ = done.wait(timeout: .now() + seconds)
        return text
    }
}
