import HearthCrypto
import HearthTesting
import Testing
@testable import HearthLoop

/// TCPConnection carrying TLS over real loopback sockets, client and server in one loop.
@Suite("TLS connections")
struct TLSConnectionTests {
    static let certs: TestCertificates = try! TestCertificates()
    var certs: TestCertificates { Self.certs }

    func serverContext(clientCA: Bool = false) throws -> TLSContext {
        try .server(certificateFile: certs.serverCert, keyFile: certs.serverKey, clientCAFile: clientCA ? certs.caFile : nil)
    }

    /// A TLS echo server; `accepted` sees each connection after `startTLS`.
    func startTLSEchoServer(_ loop: EventLoop, context: TLSContext, handshakeTimeoutMs: UInt64 = 0,
                            onHandshake: ((TCPConnection, TLSError?) -> Void)? = nil,
                            accepted: ((TCPConnection) -> Void)? = nil) throws -> TCPListener {
        try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.startTLS(try! TLSSession(context: context), handshakeTimeoutMs: handshakeTimeoutMs,
                                plainTextReply: Array("plain text is not spoken here\n".utf8)) { [unowned connection] error in
                onHandshake?(connection, error)
            }
            connection.onRead = { bytes in connection.send(bytes) }
            accepted?(connection)
            connection.startReading()
        }
    }

    func connectTLS(_ loop: EventLoop, port: Int, context: TLSContext, serverName: String? = nil,
                    _ done: @escaping (Result<TCPConnection, LoopError>) -> Void) {
        loop.connectTLS(host: "127.0.0.1", port: port, context: context, serverName: serverName, done)
    }

    @Test("pipelined messages echo intact over TLS, and the server sees the client's certificate")
    func echo() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var serverSide: TCPConnection?
        let listener = try startTLSEchoServer(loop, context: serverContext(clientCA: true), accepted: { serverSide = $0 })
        var expected: [UInt8] = []
        for i in 0..<20_000 { expected += Array("message number \(i)\n".utf8) }
        var received: [UInt8] = []
        var protocolVersion = ""
        let client = try TLSContext.client(caFile: certs.caFile, certificateFile: certs.clientCert, keyFile: certs.clientKey)
        connectTLS(loop, port: listener.port, context: client) { result in
            guard case .success(let c) = result else { Issue.record("\(result)"); loop.stop(); return }
            protocolVersion = c.tlsSession?.protocolVersion ?? ""
            #expect(c.isTLS)
            c.onRead = { bytes in
                received += bytes
                if received.count >= expected.count { loop.stop() }
            }
            c.startReading()
            for i in 0..<20_000 { c.send("message number \(i)\n") }
        }
        runBounded(loop)
        #expect(received == expected)
        #expect(protocolVersion == "TLSv1.3")
        #expect(serverSide?.peerCertificateSubject == TestCertificates.clientSubject)
    }

    @Test("a turn's sends are encrypted together: record overhead per flush, not per send")
    func encryptsOncePerFlush() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let server = try startTLSEchoServer(loop, context: serverContext())
        // A relay between client and server counts the ciphertext the client sends.
        var clientBytes = 0
        let relay = try loop.listen(host: "127.0.0.1", port: 0) { inbound in
            loop.connect(host: "127.0.0.1", port: server.port) { result in
                guard case .success(let outbound) = result else { inbound.abort(); return }
                inbound.onRead = { bytes in clientBytes += bytes.count; outbound.send(bytes) }
                outbound.onRead = { bytes in inbound.send(bytes) }
                inbound.onClose = { _ in outbound.close() }
                outbound.onClose = { _ in inbound.close() }
                inbound.startReading()
                outbound.startReading()
            }
        }
        let lines = 1000, line = Array("0123456789abcdefghi\n".utf8)
        var echoed = 0
        var afterHandshake = 0
        connectTLS(loop, port: relay.port, context: try .client(caFile: certs.caFile)) { result in
            guard case .success(let c) = result else { Issue.record("\(result)"); loop.stop(); return }
            afterHandshake = clientBytes
            c.onRead = { bytes in
                echoed += bytes.count
                if echoed >= lines * line.count { loop.stop() }
            }
            c.startReading()
            for _ in 0..<lines { c.send(line) }   // one turn: one flush
        }
        runBounded(loop)
        #expect(echoed == lines * line.count)
        let ciphertext = clientBytes - afterHandshake
        // 20,000 plaintext bytes: two records' overhead (~22 bytes each) if encrypted per flush; 1,000 records'
        // (~22,000 bytes) if encrypted per send.
        #expect(ciphertext >= lines * line.count && ciphertext < lines * line.count + 200, "\(ciphertext) bytes of ciphertext")
    }

    @Test("a plain-text client of a TLS server gets the plain-text reply and is closed")
    func plainTextClient() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var failure: TLSError?
        let listener = try startTLSEchoServer(loop, context: serverContext()) { _, error in failure = error }
        var received: [UInt8] = []
        var closed = false
        connectClient(loop, port: listener.port) { c in
            c.onRead = { received += $0 }
            c.onClose = { _ in closed = true; loop.stop() }
            c.startReading()
            c.send(#"{"op":"ping"}"# + "\n")
        }
        runBounded(loop)
        #expect(closed)
        #expect(received == Array("plain text is not spoken here\n".utf8))
        #expect(failure?.kind == .plainTextPeer)
    }

    @Test("a handshake that does not finish in time is closed")
    func handshakeTimeout() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var failure: TLSError?
        var serverClose: LoopError?
        let listener = try startTLSEchoServer(loop, context: serverContext(), handshakeTimeoutMs: 100,
                                              onHandshake: { _, error in failure = error },
                                              accepted: { c in c.onClose = { serverClose = $0 } })
        var closed = false
        let start = loop.now
        connectClient(loop, port: listener.port) { c in
            c.onClose = { _ in closed = true; loop.stop() }
            c.startReading()
            c.send([0x16, 0x03, 0x01])   // the start of a record, and nothing more
        }
        runBounded(loop)
        #expect(closed)
        #expect(loop.now - start >= 100)
        #expect(failure == TLSError(.timedOut, "the TLS handshake did not finish within 100 ms"))
        #expect(serverClose?.code == LoopError.timedOut)
    }

    @Test("a TLS client of a plain-text server fails with the server's line quoted")
    func plainTextServer() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { c in
            c.onRead = { _ in c.send(#"{"ok":false,"error":{"code":"UNAVAILABLE","message":"plain only"}}"# + "\n"); c.close() }
            c.startReading()
        }
        var failure: LoopError?
        connectTLS(loop, port: listener.port, context: try .client(caFile: certs.caFile)) { result in
            if case .failure(let e) = result { failure = e } else { Issue.record("connected") }
            loop.stop()
        }
        runBounded(loop)
        #expect(failure?.code == LoopError.protocolError)
        #expect(failure?.message == #"the server answered in plain text, not TLS (is TLS off on this port?): {"ok":false,"error":{"code":"UNAVAILABLE","message":"plain only"}}"#)
    }

    @Test("an untrusted server certificate fails the connect, and the server logs the client's alert")
    func untrustedServer() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var serverFailure: TLSError?
        let listener = try startTLSEchoServer(loop, context: serverContext(), onHandshake: { _, e in serverFailure = e })
        var failure: LoopError?
        connectTLS(loop, port: listener.port, context: try .client(caFile: certs.otherCAFile)) { result in
            if case .failure(let e) = result { failure = e } else { Issue.record("connected") }
        }
        let poll = loop.timer(after: 5, repeat: 5) { if failure != nil && serverFailure != nil { loop.stop() } }
        runBounded(loop)
        poll.cancel()
        #expect(failure?.message == "TLS handshake failed: certificate verify failed: unable to get local issuer certificate")
        #expect(serverFailure?.kind == .handshake)
        #expect(serverFailure?.message.contains("unknown ca") == true, "\(String(describing: serverFailure))")
    }

    @Test("a graceful close delivers the last bytes, then close_notify ends the stream")
    func gracefulClose() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try serverContext()
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { c in
            c.startTLS(try! TLSSession(context: context))
            c.onRead = { _ in c.send("bye\n"); c.close() }
            c.startReading()
        }
        var received: [UInt8] = []
        var closeError: LoopError?? = .none
        connectTLS(loop, port: listener.port, context: try .client(caFile: certs.caFile)) { result in
            guard case .success(let c) = result else { Issue.record("\(result)"); loop.stop(); return }
            c.onRead = { received += $0 }
            c.onClose = { closeError = .some($0); loop.stop() }
            c.startReading()
            c.send("hi\n")
        }
        runBounded(loop)
        #expect(received == Array("bye\n".utf8))
        #expect(closeError == .some(nil))
    }
}
