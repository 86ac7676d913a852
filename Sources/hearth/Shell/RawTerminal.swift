#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminal settings to put back when the process is stopped by a signal while in raw mode.
nonisolated(unsafe) private var savedTermios: termios?

/// Puts a terminal into raw mode for line editing (no echo, no canonical input, no signal keys, no
/// flow control; output processing stays on so `\n` still returns the carriage), and restores it on
/// `restore()`, on deinit, and on SIGTERM/SIGHUP/SIGQUIT (which then exit the process).
final class RawTerminal {
    let fd: Int32
    private let original: termios
    private var active = true

    /// Nil when `fd` is not a terminal or its settings cannot be changed.
    init?(fd: Int32) {
        guard isatty(fd) != 0 else { return nil }
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else { return nil }
        self.fd = fd
        original = t
        var raw = t
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        raw.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(fd, TCSAFLUSH, &raw) == 0 else { return nil }
        savedTermios = original
        for sig in [SIGTERM, SIGHUP, SIGQUIT] {
            signal(sig) { signo in
                if var t = savedTermios { tcsetattr(0, TCSAFLUSH, &t) }
                _exit(128 + signo)
            }
        }
    }

    deinit { restore() }

    /// Restores the original settings. Idempotent.
    func restore() {
        guard active else { return }
        active = false
        var t = original
        tcsetattr(fd, TCSAFLUSH, &t)
        savedTermios = nil
    }
}
