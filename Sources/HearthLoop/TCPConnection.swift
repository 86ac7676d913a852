import CLibUV
import HearthCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One TCP stream (accepted by a ``TCPListener`` or opened with ``EventLoop/connect(host:port:_:)``).
///
/// Loop thread only. The connection keeps itself alive while libuv holds its handle, so dropping every
/// reference does not close it: call ``close()`` or ``abort()``. ``onClose`` fires exactly once, from the
/// close callback, after which no callback fires again and all callbacks are released (breaking any
/// reference cycles they hold).
///
/// Output is buffered: `send(_:)` only copies into a per-connection buffer and marks the
/// connection dirty; the loop flushes dirty connections in its flush passes, just before polling (at most
/// `EventLoop.connectionsPerPass` per pass beyond the expedited ones; see docs/loop.md),
/// with `uv_try_write` first and `uv_write` for the remainder. At most one `uv_write` is in flight per
/// connection; bytes sent meanwhile accumulate and go out when it completes. See docs/loop.md.
///
/// A connection can carry TLS (``startTLS(_:handshakeTimeoutMs:plainTextReply:onHandshake:)``, or
/// ``EventLoop/connectTLS(host:port:context:serverName:handshakeTimeoutMs:_:)``): the same API then reads and
/// sends plaintext. Sent plaintext is buffered as before and encrypted once per flush, not once per send.
public final class TCPConnection: LoopHandleOwner {
    let loop: EventLoop
    private(set) var handle: UnsafeMutablePointer<uv_tcp_t>?

    /// The remote address, `"127.0.0.1:54321"` or `"[::1]:54321"`.
    public let peer: String

    /// Called with each chunk read. The bytes are valid only during the call (copy what you keep).
    public var onRead: ((UnsafeRawBufferPointer) -> Void)?
    /// Called exactly once when the connection is closed: `nil` after peer EOF, ``abort()``, or a
    /// ``close()`` that delivered all pending output; the ``LoopError`` otherwise (reset, read or write
    /// failure, or `ETIMEDOUT` when a graceful close had to drop output at its deadline).
    public var onClose: ((LoopError?) -> Void)?
    /// Called whenever pending output falls to zero after having been above zero (every flush that
    /// empties the buffers). Set it only while you wait for a drain (for example while reading is paused
    /// for backpressure). Not called once ``close()`` has been requested.
    @exclusivity(unchecked) public var onDrain: (() -> Void)?   // read on every flush that empties the output
    /// Called once when the peer has finished sending (EOF; for TLS, its close_notify): reading stops and the
    /// connection stays open for output until the owner calls ``close()``, once it has answered everything the
    /// peer asked (a client that sends its requests and shuts down its side still gets every response). When
    /// nil, the connection closes gracefully at once, flushing only the output already sent.
    public var onEndOfInput: (() -> Void)?

    // The output buffers are touched on every send, several times per delivered event, and only ever from
    // the loop thread, by methods of this class that never call out while they hold a buffer (no closure runs
    // during an append but `send(reserving:)`'s writer, which is handed raw memory, not the connection). So
    // their accesses cannot overlap, and the runtime's dynamic exclusivity check (a `swift_beginAccess` per
    // access, about a quarter of a fan-out delivery's instructions) is turned off for them alone.

    /// Bytes appended and not yet handed to libuv.
    @exclusivity(unchecked) var out = OutputBuffer()
    /// Bytes owned by the in-flight `uv_write` (valid until its callback).
    @exclusivity(unchecked) private var inFlight = OutputBuffer()
    private var writeReq: UnsafeMutablePointer<uv_write_t>?
    private var writeInFlight = false
    /// In the loop's dirty list (a flush pending).
    var isDirty = false
    /// In the loop's urgent list (flushed first this turn).
    var isUrgent = false
    /// Entries for this connection in the loop's lists (both, and one the urgent part already wrote): the
    /// lists hold it unretained, so it is kept alive past its close until they are taken.
    var queuedEntries: UInt32 = 0
    /// The loop's `passCount` when the connection became dirty: still dirty at a later count, it was left
    /// over by a pass.
    var queuedInPass: UInt64 = 0
    /// Expedited while a `uv_write` was in flight: the rest is expedited again when that write completes.
    private var expediteAfterWrite = false

    private var wantsReading = false
    /// The peer finished sending: nothing is read again, whatever the owner asks.
    private var inputEnded = false
    private var isReading = false
    private(set) var closeRequested = false
    private var shutdownStarted = false
    private var closeReason: LoopError?
    private var closeReasonSet = false
    private var deadline: LoopTimer?
    /// Set while a client connection is still connecting (see TCPConnection+Connect.swift).
    var connectDone: ((Result<TCPConnection, LoopError>) -> Void)?
    /// TLS state, when the connection carries TLS (see TCPConnection+TLS.swift).
    var tls: TLSLayer?
    /// With TLS: plaintext sent and not yet encrypted (encrypted into `out` at the next flush).
    @exclusivity(unchecked) var plain = OutputBuffer()

    /// Wraps an initialised `uv_tcp_t` and takes ownership of it (retains self through `handle->data`).
    init(loop: EventLoop, handle: UnsafeMutablePointer<uv_tcp_t>, peer: String) {
        self.loop = loop
        self.handle = handle
        self.peer = peer
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    // MARK: State

    /// `true` until ``close()`` or ``abort()`` is called or the connection fails.
    public var isOpen: Bool { handle != nil && !closeRequested }

    /// Output bytes not yet accepted by the kernel: buffered here plus still queued in `uv_write`.
    public var pendingOutputBytes: Int {
        guard let handle else { return 0 }
        return out.count + plain.count + (writeInFlight ? handle.pointee.write_queue_size : 0)
    }

    /// Output the peer has not taken yet: `pendingOutputBytes` plus the bytes in the socket's send queue the
    /// peer has not acknowledged (`TIOCOUTQ`, Linux). It falls steadily as the peer reads, where
    /// `pendingOutputBytes` alone moves in steps of the kernel's buffer (libuv refills it when it has room), so
    /// a slow reader can show no change for seconds. Never rises but for new sends. A system call: for
    /// periodic checks, not per line.
    public var outputNotTaken: Int {
        guard let handle else { return 0 }
        #if os(Linux)
        var fd: uv_os_fd_t = -1
        var queued: Int32 = 0
        if uv_fileno(asHandle(handle), &fd) == 0, ioctl(fd, UInt(TIOCOUTQ), &queued) == 0 {
            return pendingOutputBytes + Int(queued)
        }
        #endif
        return pendingOutputBytes
    }

    // MARK: Reading

    /// Starts delivering data to ``onRead``. Connections start paused so the owner can install callbacks first.
    public func startReading() {
        wantsReading = true
        updateReading()
    }

    /// Stops delivering data (`uv_read_stop`); the kernel buffers and eventually pushes back on the peer.
    public func pauseReading() {
        wantsReading = false
        updateReading()
    }

    /// Resumes delivering data after ``pauseReading()``.
    public func resumeReading() {
        startReading()
    }

    func updateReading() {
        guard let handle, !closeRequested else { return }
        // A TLS handshake reads whatever the owner asked for: it needs the peer's messages to finish.
        let wantsReading = !inputEnded && (self.wantsReading || tls?.session.state == .handshaking)
        if wantsReading && !isReading {
            let status = uv_read_start(asStream(handle), connectionAllocCallback, connectionReadCallback)
            if status < 0 { fail(LoopError(code: status, operation: "uv_read_start")); return }
            isReading = true
        } else if !wantsReading && isReading {
            uv_read_stop(asStream(handle))
            isReading = false
        }
    }

    func didRead(_ nread: Int, _ base: UnsafeMutableRawPointer?) {
        if nread > 0 {
            if tls != nil {
                tlsReceived(UnsafeRawBufferPointer(start: base, count: nread))
            } else {
                onRead?(UnsafeRawBufferPointer(start: base, count: nread))
            }
        } else if nread < 0 {
            if nread == Int(LoopError.eof) {
                isReading = false
                wantsReading = false
                peerFinishedSending()
            } else {
                fail(LoopError(code: Int32(truncatingIfNeeded: nread), operation: "read from \(peer)"))
            }
        }
    }

    /// The peer will send nothing more: the owner finishes and closes, or, without an owner that wants to,
    /// the connection closes now, flushing what it owes (reason nil).
    func peerFinishedSending() {
        inputEnded = true
        if isReading, let handle { uv_read_stop(asStream(handle)); isReading = false }
        wantsReading = false
        if let onEndOfInput {
            self.onEndOfInput = nil
            onEndOfInput()
        } else {
            close()
        }
    }

    // MARK: Writing

    /// Appends a copy of `bytes` to the output buffer; it is flushed in a before-poll pass (see the type's notes).
    /// Ignored once ``close()`` or ``abort()`` was called.
    public func send(_ bytes: UnsafeRawBufferPointer) {
        guard handle != nil, !closeRequested, bytes.count > 0 else { return }
        if tls == nil { out.append(bytes) } else { plain.append(bytes) }
        scheduleFlush(addedOutput: true)
    }

    /// Appends a copy of `first`, then of `second`, as one send.
    public func send(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        guard handle != nil, !closeRequested, first.count + second.count > 0 else { return }
        if tls == nil { out.append(first, second) } else { plain.append(first, second) }
        scheduleFlush(addedOutput: true)
    }

    /// Appends a copy of `bytes`; see `send(_:)`.
    public func send(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { send($0) }
    }

    /// Appends the UTF-8 bytes of `text`; see `send(_:)`.
    public func send(_ text: String) {
        var text = text
        text.withUTF8 { send(UnsafeRawBufferPointer($0)) }
    }

    /// Serialises straight into the output buffer, avoiding an intermediate copy: `write` receives at
    /// least `maxBytes` writable bytes and returns how many it filled (0...maxBytes). `write` must not touch
    /// this connection (send, close, read its pending bytes): it runs inside the buffer's append (checked in
    /// debug builds).
    public func send(reserving maxBytes: Int, _ write: (UnsafeMutableRawBufferPointer) -> Int) {
        guard handle != nil, !closeRequested else { return }
        if tls == nil {
            out.append(reserving: maxBytes, write)
            if !out.isEmpty { scheduleFlush(addedOutput: true) }
        } else {
            plain.append(reserving: maxBytes, write)
            if !plain.isEmpty { scheduleFlush(addedOutput: true) }
        }
    }

    /// Drops the output not yet handed to the kernel nor to an in-flight write, and returns how many bytes
    /// that was: for a peer about to be closed whose queued lines no longer matter, so that a last line sent
    /// after this follows only what is already on its way. Only whole sends are dropped: between loop turns
    /// the buffer holds nothing but whole sends (a flush hands all of it to the kernel or to one write), so a
    /// line the peer has started to receive is never cut. With TLS the plaintext not yet encrypted is dropped
    /// (what was encrypted stays: records cannot be cut). Call it between loop turns (from a timer or a
    /// request's handler), never while composing a line.
    @discardableResult
    public func dropUnsentOutput() -> Int {
        guard handle != nil, !closeRequested else { return 0 }
        if tls == nil {
            let n = out.count
            out.clear(retaining: loop.outputRetainLimit)
            return n
        }
        let n = plain.count
        plain.clear(retaining: loop.outputRetainLimit)
        return n
    }

    /// Flushes buffered output now instead of waiting for the before-poll pass (same algorithm).
    /// May call ``onDrain`` or ``onClose``-triggering error handling before returning.
    public func flushNow() {
        flush()
    }

    /// Has this connection's pending output flushed at the start of the next pass, ahead of connections
    /// that were not expedited: for an answer a client is waiting for, which should not queue behind a
    /// publication's pushed lines to many other connections. Changes only the order in which connections
    /// are written, never the order of bytes on one.
    /// While a write is in flight (a peer reading slowly), what is buffered goes out first once it completes.
    public func expedite() {
        guard handle != nil, !closeRequested else { return }
        if writeInFlight { expediteAfterWrite = true }
        guard !isUrgent else { return }
        isUrgent = true
        scheduleFlush()
        loop.markUrgent(self)
    }

    /// Queues the connection for a flush pass. `addedOutput`: bytes were just appended (a send), so a
    /// connection still queued from an earlier pass, left over by a bounded one, tells the loop that output
    /// grows faster than it is written (`EventLoop.leftoversGrew`).
    func scheduleFlush(addedOutput: Bool = false) {
        if !isDirty {
            isDirty = true
            queuedInPass = loop.passCount
            loop.markDirty(self)
        } else if addedOutput && queuedInPass != loop.passCount {
            loop.leftoversGrew = true
        }
    }

    /// Writes buffered output: `uv_try_write` first, then one `uv_write` of the remainder. Returns whether it
    /// wrote (false: closed, a write still in flight, or nothing to write).
    @discardableResult
    func flush() -> Bool {
        guard handle != nil, !writeInFlight else { return false }
        if tls != nil { encryptPending() }   // every plaintext sent this turn, at once
        guard let handle, !out.isEmpty else { return false }
        let bytes = out.readable
        var buf = uv_buf_t(base: UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: CChar.self)),
                           len: bytes.count)
        let written = uv_try_write(asStream(handle), &buf, 1)
        if written > 0 {
            out.consume(Int(written))
        } else if written < 0 && written != UV_EAGAIN.rawValue {
            fail(LoopError(code: written, operation: "write to \(peer)"))
            return true
        }
        if out.isEmpty {
            out.trim(retaining: loop.outputRetainLimit)
            outputDrained()
            return true
        }
        swap(&out, &inFlight)
        let rest = inFlight.readable
        var restBuf = uv_buf_t(base: UnsafeMutablePointer(mutating: rest.baseAddress!.assumingMemoryBound(to: CChar.self)),
                               len: rest.count)
        if writeReq == nil { writeReq = allocZeroed(uv_write_t.self) }
        let status = uv_write(writeReq, asStream(handle), &restBuf, 1, connectionWriteCallback)
        if status < 0 {
            fail(LoopError(code: status, operation: "write to \(peer)"))
            return true
        }
        writeInFlight = true
        return true
    }

    func writeCompleted(_ status: Int32) {
        writeInFlight = false
        inFlight.clear(retaining: loop.outputRetainLimit)
        guard handle != nil else { return }
        if status < 0 {
            if status != LoopError.canceled { fail(LoopError(code: status, operation: "write to \(peer)")) }
            return
        }
        if out.isEmpty && (plain.isEmpty || tls?.session.isEstablished != true) {
            expediteAfterWrite = false
            out.trim(retaining: loop.outputRetainLimit)
            outputDrained()
        } else {
            scheduleFlush()
            if expediteAfterWrite {
                expediteAfterWrite = false
                expedite()
            }
        }
    }

    private func outputDrained() {
        if closeRequested {
            beginShutdown()
        } else if let onDrain {
            onDrain()
        }
    }

    // MARK: Closing

    /// Graceful close: stops reading, flushes pending output (bounded by ``EventLoop/closeDeadlineMs``, after
    /// which the connection is aborted and ``onClose`` gets `ETIMEDOUT`), shuts down the write side
    /// (`uv_shutdown`, sending FIN), then closes. Idempotent; later sends are ignored. ``abort()`` may still
    /// be called to cut a pending graceful close short.
    public func close() { close(deadlineMs: nil) }

    /// ``close()`` with its own deadline (nil: ``EventLoop/closeDeadlineMs``).
    public func close(deadlineMs: UInt64?) {
        guard let handle, !closeRequested else { return }
        closeRequested = true
        if isReading { uv_read_stop(asStream(handle)); isReading = false }
        if connectDone != nil { closeHandle(); return }
        if tls != nil { tlsClosing() }   // last plaintext encrypted, close_notify queued
        if out.isEmpty && !writeInFlight {
            beginShutdown()
            return
        }
        scheduleFlush()
        deadline = loop.timer(after: deadlineMs ?? loop.closeDeadlineMs) { [unowned self] in
            self.fail(LoopError(code: LoopError.timedOut, operation: "close \(self.peer): output not drained"))
        }
    }

    /// Immediate close: pending output is dropped, ``onClose`` receives `nil`. Idempotent.
    public func abort() {
        setReason(nil)
        closeHandle()
    }

    func closeForShutdown() {
        abort()
    }

    /// Half-closes after output drained (`uv_shutdown`, which also waits for any queued write), then closes.
    private func beginShutdown() {
        guard let handle, !shutdownStarted else { return }
        shutdownStarted = true
        setReason(nil)   // all output reached the kernel: a clean close whatever happens next
        let req = allocZeroed(uv_shutdown_t.self)
        let status = uv_shutdown(req, asStream(handle), connectionShutdownCallback)
        if status < 0 {
            free(req)
            closeHandle()   // e.g. ENOTCONN when the peer already went away: nothing more to say
        }
    }

    /// Records the first reason the connection is going away.
    func noteCloseReason(_ error: LoopError?) { setReason(error) }

    private func setReason(_ error: LoopError?) {
        if !closeReasonSet { closeReasonSet = true; closeReason = error }
    }

    func fail(_ error: LoopError) {
        setReason(error)
        closeHandle()
    }

    private func closeHandle() {
        guard let handle, uv_is_closing(asHandle(handle)) == 0 else { return }
        closeRequested = true
        deadline?.cancel()
        deadline = nil
        tls?.handshakeTimer?.cancel()
        uv_close(asHandle(handle), connectionCloseCallback)
    }

    /// Close callback body: libuv has cancelled every request on the handle; release everything.
    func handleClosed() {
        if queuedEntries > 0 { loop.keepUntilFlushed(self) }   // the loop's lists hold it unretained
        handle = nil
        free(writeReq)
        writeReq = nil
        out.deallocate()
        inFlight.deallocate()
        plain.deallocate()
        tlsConnectionClosed()
        let connectDone = self.connectDone
        let onClose = self.onClose
        self.connectDone = nil
        self.onRead = nil
        self.onClose = nil
        self.onDrain = nil
        if let connectDone {
            connectDone(.failure(closeReason ?? LoopError(code: LoopError.canceled, operation: "connect \(peer)")))
        } else {
            onClose?(closeReason)
        }
    }
}

// MARK: - C callbacks

private func connectionAllocCallback(_ handle: UnsafeMutablePointer<uv_handle_t>?, _ suggested: Int,
                                     _ buf: UnsafeMutablePointer<uv_buf_t>?) {
    guard let buf, let data = handle?.pointee.loop.pointee.data else { return }
    let loop = Unmanaged<EventLoop>.fromOpaque(data).takeUnretainedValue()
    buf.pointee.base = loop.readBuffer.assumingMemoryBound(to: CChar.self)
    buf.pointee.len = EventLoop.readBufferSize
}

private func connectionReadCallback(_ stream: UnsafeMutablePointer<uv_stream_t>?, _ nread: Int,
                                    _ buf: UnsafePointer<uv_buf_t>?) {
    guard let connection = owner(stream?.pointee.data, as: TCPConnection.self) else { return }
    connection.didRead(nread, UnsafeMutableRawPointer(buf?.pointee.base))
}

private func connectionWriteCallback(_ req: UnsafeMutablePointer<uv_write_t>?, _ status: Int32) {
    guard let connection = owner(req?.pointee.handle?.pointee.data, as: TCPConnection.self) else { return }
    connection.writeCompleted(status)
}

private func connectionShutdownCallback(_ req: UnsafeMutablePointer<uv_shutdown_t>?, _ status: Int32) {
    let connection = owner(req?.pointee.handle?.pointee.data, as: TCPConnection.self)
    free(req)
    connection?.closeForShutdown()
}

private func connectionCloseCallback(_ handle: UnsafeMutablePointer<uv_handle_t>?) {
    guard let handle, let data = handle.pointee.data else { return }
    let connection = Unmanaged<TCPConnection>.fromOpaque(data).takeRetainedValue()
    handle.pointee.data = nil
    free(handle)
    connection.handleClosed()
}
