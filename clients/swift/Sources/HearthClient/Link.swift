import Foundation

/// One open TCP socket: non-blocking reads and writes driven by dispatch sources on the owning connection's
/// serial queue, newline framing in, an output buffer out. Every method must be called on that queue; the
/// callbacks run there too. `onClose` is called exactly once, after which the link delivers nothing more.
/// With a `TLSCipher` (handshake already done) every byte on the socket is TLS: lines are encrypted as they
/// are sent and received bytes decrypted before framing.
final class Link: @unchecked Sendable {
    let fd: Int32
    private let cipher: TLSCipher?
    private let queue: DispatchQueue
    private let onLine: (ArraySlice<UInt8>) -> Void
    private let onClose: (String) -> Void
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var writeArmed = false
    private var output: [UInt8] = []
    private var outputStart = 0
    private var input: [UInt8] = []
    private var scanned = 0
    private var chunk = [UInt8](repeating: 0, count: 65536)
    private(set) var isOpen = true
    /// When a byte last arrived (for liveness checks).
    private(set) var lastReceived = DispatchTime.now()

    /// `received`: plaintext that arrived with the TLS handshake, framed first.
    init(fd: Int32, queue: DispatchQueue, cipher: TLSCipher? = nil, received: [UInt8] = [],
         onLine: @escaping (ArraySlice<UInt8>) -> Void, onClose: @escaping (String) -> Void) {
        self.fd = fd
        self.cipher = cipher
        self.input = received
        self.queue = queue
        self.onLine = onLine
        self.onClose = onClose
    }

    /// Starts reading.
    func start() {
        let fd = self.fd
        let r = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let w = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        // The descriptor is closed once both sources are cancelled (the Dispatch contract for shared fds).
        let remaining = CancelCount(2)
        let closeOnce: @Sendable () -> Void = { if remaining.decrement() == 0 { Socket.closeDescriptor(fd) } }
        r.setCancelHandler(handler: closeOnce)
        w.setCancelHandler(handler: closeOnce)
        r.setEventHandler { [weak self] in self?.readAvailable() }
        w.setEventHandler { [weak self] in self?.flush() }
        readSource = r
        writeSource = w
        r.resume()
        if !input.isEmpty { deliverLines() }
    }

    /// Queues one line (a newline is appended) and writes as much as the socket takes now.
    func send(line: [UInt8]) {
        guard isOpen else { return }
        if let cipher {
            do { output += try cipher.encrypt(line + [10]) } catch { close("TLS: \(HearthError.from(error).message)"); return }
        } else {
            output += line
            output.append(10)
        }
        flush()
    }

    /// Closes the socket; `onClose(reason)` runs before this returns (once).
    func close(_ reason: String) {
        guard isOpen else { return }
        isOpen = false
        readSource?.cancel()
        if let w = writeSource {
            if !writeArmed { w.resume() }
            w.cancel()
        }
        readSource = nil
        writeSource = nil
        output = []
        input = []
        onClose(reason)
    }

    private func flush() {
        while isOpen, outputStart < output.count {
            guard let n = Socket.send(fd, output[outputStart...]) else {
                close("send failed: \(Socket.errnoText())")
                return
            }
            if n == 0 { break }
            outputStart += n
        }
        guard isOpen else { return }
        if outputStart == output.count {
            output.removeAll(keepingCapacity: output.count < 1 << 20)
            outputStart = 0
            if writeArmed { writeSource?.suspend(); writeArmed = false }
        } else {
            if outputStart > 1 << 20 { output.removeFirst(outputStart); outputStart = 0 }
            if !writeArmed { writeSource?.resume(); writeArmed = true }
        }
    }

    private func readAvailable() {
        while isOpen {
            guard let n = Socket.receive(fd, into: &chunk) else {
                close("connection closed by the server")
                return
            }
            if n == 0 { return }
            lastReceived = .now()
            if let cipher {
                let received: (plaintext: [UInt8], closed: Bool)
                do { received = try cipher.receive(chunk[..<n]) } catch {
                    close("TLS: \(HearthError.from(error).message)")
                    return
                }
                input += received.plaintext
                let reply = cipher.takeOutput()   // e.g. a key update
                if !reply.isEmpty { output += reply; flush() }
                deliverLines()
                if received.closed { close("connection closed by the server"); return }
            } else {
                input += chunk[..<n]
                deliverLines()
            }
        }
    }

    private func deliverLines() {
        var start = 0
        while isOpen, let nl = input[scanned...].firstIndex(of: 10) {
            var end = nl
            if end > start, input[end - 1] == 13 { end -= 1 }
            if end > start { onLine(input[start..<end]) }
            start = nl + 1
            scanned = start
        }
        guard isOpen else { return }
        if start > 0 { input.removeFirst(start) }
        scanned = input.count
    }
}

/// A thread-safe countdown (the two cancel handlers may run in either order).
private final class CancelCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int
    init(_ value: Int) { self.value = value }
    func decrement() -> Int { lock.withLock { value -= 1; return value } }
}
