import HearthCrypto
import HearthTesting
import Testing

/// The TLS engine without sockets: a client and a server session pumped into each other.
@Suite struct TLSSessionTests {
    static let certs: TestCertificates = try! TestCertificates()
    var certs: TestCertificates { Self.certs }

    /// Both ends of one connection and the plaintext each received.
    final class Pair {
        let client: TLSSession
        let server: TLSSession
        var clientGot: [UInt8] = []
        var serverGot: [UInt8] = []
        var clientError: TLSError?
        var serverError: TLSError?
        var clientClosed = false
        var serverClosed = false

        init(client: TLSContext, server: TLSContext, serverName: String? = "127.0.0.1") throws {
            self.client = try TLSSession(context: client, serverName: serverName)
            self.server = try TLSSession(context: server)
        }

        /// Moves output both ways, `chunk` bytes at a time, until neither side has anything to send.
        func pump(chunk: Int = .max) {
            var moved = true
            while moved {
                moved = false
                moved = deliver(from: client, to: server, chunk: chunk) || moved
                moved = deliver(from: server, to: client, chunk: chunk) || moved
            }
        }

        private func deliver(from: TLSSession, to: TLSSession, chunk: Int) -> Bool {
            let bytes = from.takeOutput()
            guard !bytes.isEmpty else { return false }
            var offset = 0
            while offset < bytes.count {
                let piece = Array(bytes[offset..<min(bytes.count, offset + chunk)])
                offset += piece.count
                do {
                    let (plain, progress) = try to.receive(piece)
                    if to === server { serverGot += plain; serverClosed = serverClosed || progress.peerClosed }
                    else { clientGot += plain; clientClosed = clientClosed || progress.peerClosed }
                } catch {
                    if to === server { serverError = serverError ?? error } else { clientError = clientError ?? error }
                    return true   // the failing side's alert (if any) still goes out on the next round
                }
            }
            return true
        }
    }

    func serverContext(cert: String? = nil, key: String? = nil, clientCA: String? = nil) throws -> TLSContext {
        try TLSContext.server(certificateFile: cert ?? certs.serverCert, keyFile: key ?? certs.serverKey, clientCAFile: clientCA)
    }

    @Test func handshakeThenDataBothWays() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext())
        pair.pump()
        #expect(pair.client.isEstablished && pair.server.isEstablished)
        #expect(pair.client.protocolVersion == "TLSv1.3")
        #expect(pair.client.peerCertificateSubject == TestCertificates.serverSubject)
        #expect(pair.server.peerCertificateSubject == nil)
        try pair.client.write(Array(#"{"op":"ping","id":1}"#.utf8) + [10])
        pair.pump()
        #expect(pair.serverGot == Array(#"{"op":"ping","id":1}"#.utf8) + [10])
        try pair.server.write(Array("pong\n".utf8))
        pair.pump()
        #expect(pair.clientGot == Array("pong\n".utf8))
    }

    @Test func everySplitOfTheByteStreamGivesTheSameResult() throws {
        for chunk in [1, 2, 7, 100, 1500] {
            let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext())
            pair.pump(chunk: chunk)
            #expect(pair.server.isEstablished, "chunk \(chunk)")
            let message = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try pair.client.write(message)
            pair.pump(chunk: chunk)
            #expect(pair.serverGot == message, "chunk \(chunk)")
        }
    }

    @Test func largeWritesBecomeManyRecords() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext())
        pair.pump()
        let big = [UInt8](repeating: 0x61, count: 1 << 20)
        try pair.server.write(big)
        #expect(pair.server.outputCount > big.count)   // record headers and tags on top
        pair.pump()
        #expect(pair.clientGot == big)
    }

    @Test func mutualTLSExposesTheClientSubject() throws {
        let client = try TLSContext.client(caFile: certs.caFile, certificateFile: certs.clientCert, keyFile: certs.clientKey)
        let pair = try Pair(client: client, server: serverContext(clientCA: certs.caFile))
        pair.pump()
        #expect(pair.server.isEstablished)
        #expect(pair.server.peerCertificateSubject == TestCertificates.clientSubject)
    }

    @Test func missingClientCertificateIsRefused() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext(clientCA: certs.caFile))
        pair.pump()
        // TLS 1.3: the client believes the handshake done until the server's alert arrives.
        try? pair.client.write(Array("x\n".utf8))
        pair.pump()
        #expect(pair.serverError?.kind == .handshake)
        #expect(pair.serverError?.message.contains("did not return a certificate") == true, "\(String(describing: pair.serverError))")
        #expect(pair.clientError?.message.contains("certificate required") == true, "\(String(describing: pair.clientError))")
        #expect(pair.serverGot.isEmpty)
    }

    @Test func clientCertificateFromAnotherCAIsRefused() throws {
        let client = try TLSContext.client(caFile: certs.caFile, certificateFile: certs.otherServerCert, keyFile: certs.otherServerKey)
        let pair = try Pair(client: client, server: serverContext(clientCA: certs.caFile))
        pair.pump()
        try? pair.client.write(Array("x\n".utf8))
        pair.pump()
        #expect(pair.serverError?.message.contains("certificate verify failed") == true, "\(String(describing: pair.serverError))")
        #expect(pair.serverGot.isEmpty)
    }

    @Test func serverFromAnUntrustedCAIsRefused() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile),
                            server: serverContext(cert: certs.otherServerCert, key: certs.otherServerKey))
        pair.pump()
        #expect(pair.clientError?.kind == .handshake)
        #expect(pair.clientError?.message == "TLS handshake failed: certificate verify failed: unable to get local issuer certificate")
        #expect(pair.serverError?.message.contains("unknown ca") == true, "\(String(describing: pair.serverError))")
        #expect(!pair.server.isEstablished)
    }

    @Test func expiredCertificateIsRefused() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext(cert: certs.expiredCert, key: certs.expiredKey))
        pair.pump()
        #expect(pair.clientError?.message == "TLS handshake failed: certificate verify failed: certificate has expired")
    }

    @Test func hostNameMismatchIsRefused() throws {
        let server = try serverContext(cert: certs.wrongHostCert, key: certs.wrongHostKey)
        let byName = try Pair(client: .client(caFile: certs.caFile), server: server, serverName: "localhost")
        byName.pump()
        #expect(byName.clientError?.message == "TLS handshake failed: certificate verify failed: hostname mismatch")
        let byAddress = try Pair(client: .client(caFile: certs.caFile), server: server, serverName: "127.0.0.1")
        byAddress.pump()
        #expect(byAddress.clientError?.message == "TLS handshake failed: certificate verify failed: IP address mismatch")
        let matching = try Pair(client: .client(caFile: certs.caFile), server: server, serverName: "wrong.example")
        matching.pump()
        #expect(matching.client.isEstablished)
    }

    @Test func skippingVerificationAcceptsAnyCertificate() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile, verifyPeer: false),
                            server: serverContext(cert: certs.otherServerCert, key: certs.otherServerKey), serverName: "localhost")
        pair.pump()
        #expect(pair.client.isEstablished)
    }

    @Test func plainTextClientIsToldApart() throws {
        let server = try TLSSession(context: serverContext())
        #expect(throws: TLSError(.plainTextPeer, "the client does not speak TLS (its first bytes are not a TLS handshake)")) {
            _ = try server.receive(Array(#"{"op":"ping"}"#.utf8) + [10])
        }
        #expect(server.state == .failed)
    }

    @Test func plainTextServerAnswerIsQuoted() throws {
        let client = try TLSSession(context: .client(caFile: certs.caFile), serverName: "127.0.0.1")
        #expect(client.outputCount > 0)   // the ClientHello
        let answer = #"{"ok":false,"error":{"code":"UNAVAILABLE","message":"this port speaks plain text"}}"# + "\n"
        do {
            _ = try client.receive(Array(answer.utf8))
            Issue.record("a plain-text answer was accepted")
        } catch {
            #expect(error.kind == .plainTextPeer)
            #expect(error.message == #"the server answered in plain text, not TLS (is TLS off on this port?): {"ok":false,"error":{"code":"UNAVAILABLE","message":"this port speaks plain text"}}"#)
        }
    }

    @Test func sessionsResumeWithTheSameClientContext() throws {
        let client = try TLSContext.client(caFile: certs.caFile)
        let server = try serverContext()
        let first = try Pair(client: client, server: server)
        first.pump()
        try first.server.write(Array("hi\n".utf8))   // TLS 1.3 tickets arrive with the first records read
        first.pump()
        #expect(!first.client.sessionReused)
        let second = try Pair(client: client, server: server)
        second.pump()
        #expect(second.client.isEstablished)
        #expect(second.client.sessionReused && second.server.sessionReused)
        let elsewhere = try Pair(client: client, server: server, serverName: "localhost")
        elsewhere.pump()
        #expect(!elsewhere.client.sessionReused, "a session is offered only to the name it was made with")
    }

    @Test func closeNotifyEndsTheStream() throws {
        let pair = try Pair(client: .client(caFile: certs.caFile), server: serverContext())
        pair.pump()
        try pair.server.write(Array("bye\n".utf8))
        pair.server.close()
        pair.pump()
        #expect(pair.clientGot == Array("bye\n".utf8))
        #expect(pair.clientClosed)
        #expect(pair.client.state == .closed)
    }

    @Test func writingBeforeTheHandshakeIsAnError() throws {
        let client = try TLSSession(context: .client(caFile: certs.caFile), serverName: "127.0.0.1")
        #expect(throws: TLSError(.notEstablished, "TLS write before the handshake finished")) { try client.write(Array("x".utf8)) }
    }

    @Test func configurationErrorsNameTheFile() throws {
        let missing = certs.path("missing.pem")
        #expect(throws: TLSError(.configuration, "--tls-cert \(missing): cannot read the file: No such file or directory")) {
            _ = try TLSContext.server(certificateFile: missing, keyFile: certs.serverKey)
        }
        do {
            _ = try TLSContext.server(certificateFile: certs.serverCert, keyFile: certs.clientKey)
            Issue.record("a key of another certificate was accepted")
        } catch {
            #expect(error.message.hasPrefix("--tls-key \(certs.clientKey) does not belong to the certificate in \(certs.serverCert)"), "\(error)")
        }
        do {
            _ = try TLSContext.server(certificateFile: certs.serverKey, keyFile: certs.serverKey)
            Issue.record("a key file was accepted as a certificate")
        } catch {
            #expect(error.message.hasPrefix("--tls-cert \(certs.serverKey): not a usable PEM certificate chain"), "\(error)")
        }
        do {
            _ = try TLSContext.client(caFile: certs.serverKey)
            Issue.record("a key file was accepted as a CA file")
        } catch {
            #expect(error.message.hasPrefix("CA file \(certs.serverKey): not a usable PEM CA file"), "\(error)")
        }
    }

    @Test func contextsDescribeTheirCertificate() throws {
        let server = try serverContext()
        #expect(server.certificateSubject == TestCertificates.serverSubject)
        #expect(server.certificateNotAfter?.hasSuffix("GMT") == true)
        #expect(try TLSContext.client().certificateSubject == nil)
    }
}
