import Foundation
import HearthTesting
import Testing
import HearthClient

/// HearthClient over TLS against real daemons (Linux: OpenSSL through HearthCrypto). Certificates are made
/// with the openssl command at test time.
@Suite(.serialized) struct TLSTests {
    static let certs: TestCertificates = try! TestCertificates()
    var certs: TestCertificates { Self.certs }

    func daemon(cert: String? = nil, key: String? = nil, clientCA: Bool = false) throws -> DaemonProcess {
        var args = ["--tls-cert", cert ?? certs.serverCert, "--tls-key", key ?? certs.serverKey]
        if clientCA { args += ["--tls-client-ca", certs.caFile] }
        return try DaemonProcess(extraArgs: args)
    }

    func client(_ d: DaemonProcess, host: String = "127.0.0.1", _ tls: HearthTLS?) -> Hearth {
        var settings = HearthSettings()
        settings.tls = tls
        settings.heartbeatInterval = 0.2
        return Hearth(host: host, port: d.port, settings: settings)
    }

    func expectUnavailable(_ db: Hearth, containing text: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            _ = try await db.ping()
            Issue.record("the connection was accepted", sourceLocation: sourceLocation)
        } catch let error as HearthError {
            #expect(error.code == .unavailable, sourceLocation: sourceLocation)
            #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func getsWritesAndAListenerOverVerifiedTLS() async throws {
        let d = try daemon()
        let db = client(d, HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        let stream = db.collection("tls").snapshots
        var snapshots = stream.makeAsyncIterator()
        let first = try await snapshots.next()
        #expect(first?.documents.isEmpty == true)
        try await db.document("tls/a").setData(["n": 1])
        let got = try await db.document("tls/a").getDocument()
        #expect(got.data()?["n"] as? Int == 1, "\(String(describing: got.data()))")
        let second = try await snapshots.next()
        #expect(second?.documents.map(\.documentID) == ["a"])
    }

    @Test func localhostVerifiesByName() async throws {
        let d = try daemon()
        let db = client(d, host: "localhost", HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        _ = try await db.ping()
    }

    @Test func untrustedCAIsRefused() async throws {
        let d = try daemon(cert: certs.otherServerCert, key: certs.otherServerKey)
        let db = client(d, HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        await expectUnavailable(db, containing: "certificate verify failed: unable to get local issuer certificate")
        let skipping = client(d, HearthTLS(insecureSkipVerify: true))
        defer { skipping.terminate() }
        _ = try await skipping.ping()
    }

    @Test func expiredCertificateIsRefused() async throws {
        let d = try daemon(cert: certs.expiredCert, key: certs.expiredKey)
        let db = client(d, HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        await expectUnavailable(db, containing: "certificate verify failed: certificate has expired")
    }

    @Test func hostNameMismatchIsRefused() async throws {
        let d = try daemon(cert: certs.wrongHostCert, key: certs.wrongHostKey)
        let db = client(d, host: "localhost", HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        await expectUnavailable(db, containing: "certificate verify failed: hostname mismatch")
        let named = client(d, HearthTLS(caFile: certs.caFile, serverName: "wrong.example"))
        defer { named.terminate() }
        _ = try await named.ping()
    }

    @Test func clientCertificates() async throws {
        let d = try daemon(clientCA: true)
        let with = client(d, HearthTLS(caFile: certs.caFile, certificateFile: certs.clientCert, keyFile: certs.clientKey))
        defer { with.terminate() }
        _ = try await with.ping()
        let without = client(d, HearthTLS(caFile: certs.caFile))
        defer { without.terminate() }
        await expectUnavailable(without, containing: "certificate required")
    }

    @Test func plainTextDaemonIsToldApart() async throws {
        let d = try DaemonProcess()
        let db = client(d, HearthTLS(caFile: certs.caFile))
        defer { db.terminate() }
        await expectUnavailable(db, containing: "the server answered in plain text, not TLS")
    }

    @Test func plainTextClientOfATLSDaemonGetsTheReason() async throws {
        let d = try daemon()
        let db = client(d, nil)
        defer { db.terminate() }
        do {
            _ = try await db.ping()
            Issue.record("a plain-text ping was answered")
        } catch let error as HearthError {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("this port speaks TLS"), "\(error.message)")
        }
    }

    @Test func badSettingsNameTheFile() async throws {
        let d = try daemon()
        let missing = certs.path("nope.pem")
        let db = client(d, HearthTLS(caFile: missing))
        defer { db.terminate() }
        do {
            _ = try await db.ping()
            Issue.record("a missing CA file was accepted")
        } catch let error as HearthError {
            #expect(error.code == .invalidArgument)
            #expect(error.message == "TLS settings: CA file \(missing): cannot read the file: No such file or directory")
        }
    }
}
