#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth shell`: one connection, driven by a single thread that polls stdin and the socket, so pushed
/// lines are printed the moment they arrive, even mid-typing. On a terminal (stdin and stdout both TTYs)
/// input goes through `LineEditor`; otherwise lines are read plainly, one request at a time (the next
/// input line is read only after the previous response arrived, so output order matches input order),
/// and the shell exits at end of input once every response has arrived.
///
/// Exit codes: 0 at `quit` or end of input; 3 when the connection fails, closes, or a response does not
/// arrive within `--timeout`.
enum Shell {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        let options = try ConnectionOptions(args)
        let client = try options.connect()
        let session = ShellSession(client: client, options: options, json: args.flag("json"))
        return session.run()
    }
}

final class ShellSession {
    private let client: BlockingClient
    private let options: ConnectionOptions
    private let json: Bool
    private let interactive: Bool
    private var editor: LineEditor?
    private var terminal: RawTerminal?
    private var pending: [(request: ClientRequest, sentAt: UInt64)] = []
    private var nextID = 1
    private var input = LineBuffer()
    private var inputEnded = false

    init(client: BlockingClient, options: ConnectionOptions, json: Bool) {
        self.client = client
        self.options = options
        self.json = json
        interactive = isatty(0) != 0 && isatty(1) != 0
    }

    func run() -> Int32 {
        if interactive, let t = RawTerminal(fd: 0) {
            terminal = t
            editor = LineEditor(prompt: "hearth> ")
            let who = client.identity.map { " as \($0)" } ?? ""
            editor?.printAbove("Connected to \(client.endpoint)\(who). Type 'help' for commands, 'quit' to leave.")
        }
        defer {
            editor?.hide()
            terminal?.restore()
        }
        while true {
            if editor == nil {
                while pending.isEmpty, let line = input.next() {
                    if !handle(line: String(decoding: line, as: UTF8.self)) { return ExitCode.ok }
                }
                if inputEnded && pending.isEmpty {
                    if let last = input.finish(), !handle(line: String(decoding: last, as: UTF8.self)) { return ExitCode.ok }
                    if pending.isEmpty { return ExitCode.ok }
                }
            } else if inputEnded && pending.isEmpty {
                return ExitCode.ok
            }
            if let status = step() { return status }
        }
    }

    /// One poll of the socket and (when wanted) stdin. Returns an exit status when the session must end.
    private func step() -> Int32? {
        let wantInput = !inputEnded && (editor != nil || pending.isEmpty)
        var fds = [pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)]
        if wantInput { fds.append(pollfd(fd: 0, events: Int16(POLLIN), revents: 0)) }
        var timeoutMs: Int32 = -1
        if let oldest = pending.first {
            let deadline = oldest.sentAt + UInt64(options.timeout * 1e9)
            let now = Clock.nanos()
            if now >= deadline {
                report(error: "error: no response within \(options.timeout) s")
                return ExitCode.connection
            }
            timeoutMs = Int32(min(Int(Int32.max), Int((deadline - now) / 1_000_000) + 1))
        }
        let ready = poll(&fds, nfds_t(fds.count), timeoutMs)
        if ready < 0 && errno != EINTR { report(error: "error: poll failed: errno \(errno)"); return ExitCode.connection }
        if ready <= 0 { return nil }
        if fds[0].revents != 0 {
            do {
                let open = try client.readAvailable { received($0) }
                if !open {
                    report(error: "error: the daemon closed the connection")
                    return ExitCode.connection
                }
            } catch {
                report(error: "error: \(error)")
                return ExitCode.connection
            }
        }
        if wantInput && fds[1].revents != 0 { return readInput() }
        return nil
    }

    private func readInput() -> Int32? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { return nil }
        if n <= 0 { inputEnded = true; return nil }
        guard let editor else {
            input.append(chunk[..<n])
            return nil
        }
        for byte in chunk[..<n] {
            switch editor.feed(byte) {
            case .line(let text): if !handle(line: text) { return ExitCode.ok }
            case .endOfInput: inputEnded = true; return nil
            case .interrupt, .none: break
            }
        }
        return nil
    }

    /// Acts on one input line; false means quit.
    private func handle(line: String) -> Bool {
        do {
            switch try ShortForms.parse(line, id: nextID) {
            case .nothing: return true
            case .quit: return false
            case .help: show(ShortForms.helpText)
            case .send(let request):
                nextID += 1
                try client.send(line: request.line)
                pending.append((request, Clock.nanos()))
            }
        } catch let error as UsageError {
            report(error: "error: \(error.message)")
        } catch {
            report(error: "error: \(error)")
            inputEnded = true
            pending.removeAll()
        }
        return true
    }

    /// One line from the daemon: a pushed update, or the response to the oldest pending request.
    private func received(_ line: [UInt8]) {
        let response = ServerResponse(line: line)
        if response.isPush {
            show(json ? response.text : ResponseRenderer.renderPush(response))
            return
        }
        guard !pending.isEmpty else {
            show(json ? response.text : "unexpected line from the daemon: \(response.text)")
            return
        }
        let (request, sentAt) = pending.removeFirst()
        if json {
            show(response.text)
        } else if response.ok {
            show(ResponseRenderer.render(response, for: request, elapsedNanos: Clock.nanos() - sentAt))
        } else {
            report(error: ResponseRenderer.renderError(response))
        }
    }

    private func show(_ text: String) {
        if let editor {
            editor.printAbove(text)
        } else {
            Console.line(text)
            Console.flush()
        }
    }

    private func report(error text: String) {
        if let editor { editor.printAbove(text) } else { Console.error(text) }
    }
}
