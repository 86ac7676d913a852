import HearthCrypto

// TLS on a TCPConnection: a `TLSSession` (HearthCrypto's memory-buffer state machine) between the socket and
// the connection's owner. Bytes read are decrypted before `onRead`; plaintext sent is buffered in `plain` and
// encrypted into `out` once per flush, so a turn's many response lines become as few records as fit.

/// A connection's TLS state.
final class TLSLayer {
    let session: TLSSession
    var handshakeTimer: LoopTimer?
    /// Server side: sent as is to a client whose first bytes are not TLS, before closing.
    let plainTextReply: [UInt8]?
    /// Called once: nil when the handshake completed, the error when it failed (the connection then closes).
    var onHandshake: ((TLSError?) -> Void)?
    /// The TLS session failed: nothing more is encrypted or decrypted.
    var failed = false

    init(session: TLSSession, plainTextReply: [UInt8]?, onHandshake: ((TLSError?) -> Void)?) {
        self.session = session
        self.plainTextReply = plainTextReply
        self.onHandshake = onHandshake
    }

    /// Reports the handshake's outcome, once.
    func announce(_ error: TLSError?) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        let callback = onHandshake
        onHandshake = nil
        callback?(error)
    }
}

extension TCPConnection {
    /// Makes this connection a TLS stream: from now on ``onRead`` receives decrypted plaintext and `send`
    /// takes plaintext. Call it before any byte is read or sent (right after accept or connect). A client
    /// session's ClientHello goes out at once. Reading runs during the handshake whatever the owner asked.
    ///
    /// - `handshakeTimeoutMs`: a handshake not finished by then fails (0: no limit).
    /// - `plainTextReply`: servers, for a client that sends plain text instead of a handshake: these bytes are
    ///   sent unencrypted before the connection closes (a short explanation the client can read).
    /// - `onHandshake`: called once, with nil when the handshake completed, or the error when it failed or the
    ///   connection closed first. A failed connection then closes (``onClose`` gets an `EPROTO`, or
    ///   `ETIMEDOUT` after the timeout, ``LoopError`` with the reason as its message).
    public func startTLS(_ session: TLSSession, handshakeTimeoutMs: UInt64 = 0, plainTextReply: [UInt8]? = nil,
                         onHandshake: ((TLSError?) -> Void)? = nil) {
        guard handle != nil, !closeRequested, tls == nil else { return }
        let layer = TLSLayer(session: session, plainTextReply: plainTextReply, onHandshake: onHandshake)
        tls = layer
        if handshakeTimeoutMs > 0 {
            layer.handshakeTimer = loop.timer(after: handshakeTimeoutMs) { [unowned self] in
                self.tlsFailed(TLSError(.timedOut, "the TLS handshake did not finish within \(handshakeTimeoutMs) ms"))
            }
        }
        moveTLSOutput()
        updateReading()
    }

    /// The TLS session, when the connection carries TLS.
    public var tlsSession: TLSSession? { tls?.session }

    /// `true` when the connection carries TLS.
    public var isTLS: Bool { tls != nil }

    /// The verified subject of the peer's certificate (RFC 2253, e.g. "CN=alice,O=Example"), when the
    /// connection carries TLS, the handshake is done and the peer presented one (a server with a client CA
    /// requires it). Nil otherwise.
    public var peerCertificateSubject: String? { tls?.session.peerCertificateSubject }

    /// Ciphertext from the socket: decrypted plaintext goes to `onRead`.
    func tlsReceived(_ bytes: UnsafeRawBufferPointer) {
        guard let tls, !tls.failed else { return }
        // `bytes` lies in the loop's read buffer; the session copies them in before it decrypts into it.
        let scratch = UnsafeMutableRawBufferPointer(start: loop.readBuffer, count: EventLoop.readBufferSize)
        do {
            let progress = try tls.session.receive(bytes, scratch: scratch) { plaintext in
                if tls.onHandshake != nil { tls.announce(nil) }
                self.onRead?(plaintext)
                return self.isOpen
            }
            guard isOpen else { return }
            moveTLSOutput()   // handshake messages, session tickets
            if progress.handshakeCompleted {
                if tls.onHandshake != nil { tls.announce(nil) }
                updateReading()
                if !plain.isEmpty { scheduleFlush() }
            }
            if progress.peerClosed { peerFinishedSending() }
        } catch {
            tlsFailed(error)
        }
    }

    /// The TLS session failed (or timed out, or the peer does not speak TLS): tell the owner, send what may
    /// still be sent (an alert; the plain-text reply), close.
    func tlsFailed(_ error: TLSError) {
        guard let tls, !tls.failed, handle != nil else { return }
        tls.failed = true
        plain.clear(retaining: 0)
        let code = error.kind == .timedOut ? LoopError.timedOut : LoopError.protocolError
        let loopError = LoopError(code: code, operation: "TLS with \(peer)", message: error.message)
        tls.announce(error)
        guard handle != nil else { return }
        if error.kind == .timedOut {
            fail(loopError)
            return
        }
        if error.kind == .plainTextPeer, let reply = tls.plainTextReply {
            reply.withUnsafeBytes { out.append($0) }
        } else {
            moveTLSOutput(evenIfFailed: true)   // the alert telling the peer why
        }
        noteCloseReason(loopError)
        close()
    }

    /// Graceful close with TLS: the last plaintext is encrypted and close_notify queued (after the handshake;
    /// plaintext sent before the handshake finished is dropped).
    func tlsClosing() {
        guard let tls, !tls.failed else { return }
        if tls.session.isEstablished || tls.session.state == .closed {
            encryptPending()
            tls.session.close()
            moveTLSOutput()
        }
        plain.clear(retaining: 0)
    }

    /// Encrypts the buffered plaintext into the output buffer (after the handshake).
    func encryptPending() {
        guard let tls, !tls.failed, !plain.isEmpty, tls.session.isEstablished else { return }
        do {
            try tls.session.write(plain.readable)
        } catch {
            tlsFailed(error)
            return
        }
        plain.clear(retaining: loop.outputRetainLimit)
        moveTLSOutput()
    }

    /// Moves the session's pending output into the output buffer and schedules a flush.
    func moveTLSOutput(evenIfFailed: Bool = false) {
        guard let tls, evenIfFailed || !tls.failed else { return }
        let count = tls.session.outputCount
        guard count > 0 else { return }
        out.append(reserving: count) { tls.session.takeOutput(into: $0) }
        scheduleFlush()
    }

    /// From the close callback: a handshake still running fails (the connection went first).
    func tlsConnectionClosed() {
        guard let tls else { return }
        tls.handshakeTimer?.cancel()
        tls.handshakeTimer = nil
        if tls.onHandshake != nil {
            tls.announce(TLSError(.handshake, "the connection closed during the TLS handshake"))
        }
    }
}

extension EventLoop {
    /// Connects to `host:port` and completes a TLS handshake made from `context` (a client context) before
    /// calling `done`: the connection it gets reads and sends plaintext. `serverName` is the name the server's
    /// certificate must carry (default: `host`). Every failure (connect, certificate check, a server that
    /// answers in plain text, the timeout) arrives as a ``LoopError`` whose message gives the reason.
    public func connectTLS(host: String, port: Int, context: TLSContext, serverName: String? = nil,
                           handshakeTimeoutMs: UInt64 = 10_000,
                           _ done: @escaping (Result<TCPConnection, LoopError>) -> Void) {
        let session: TLSSession
        do {
            session = try TLSSession(context: context, serverName: serverName ?? host)
        } catch {
            let failure = LoopError(code: LoopError.invalidArgument, operation: "TLS to \(host):\(port)", message: error.message)
            timer(after: 0) { done(.failure(failure)) }
            return
        }
        connect(host: host, port: port) { result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let connection):
                connection.startTLS(session, handshakeTimeoutMs: handshakeTimeoutMs) { error in
                    if let error {
                        let code = error.kind == .timedOut ? LoopError.timedOut : LoopError.protocolError
                        done(.failure(LoopError(code: code, operation: "TLS to \(connection.peer)", message: error.message)))
                    } else {
                        done(.success(connection))
                    }
                }
            }
        }
    }
}
