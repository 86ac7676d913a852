import Foundation
import HearthCrypto
import HearthServer
import HearthTesting
import Testing

/// TLS end to end: the real hearthd over TCP with certificates made by openssl at test time, driven by the
/// `hearth` CLI (every kind of subcommand) and a TLS wire client.
@Suite(.serialized) struct TLSDaemonTests {
    static let certs: TestCertificates = try! TestCertificates()
    var certs: TestCertificates { Self.certs }

    func tlsDaemon(cert: String? = nil, key: String? = nil, clientCA: Bool = false, extra: [String] = []) throws -> DaemonProcess {
        var args = ["--tls-cert", cert ?? certs.serverCert, "--tls-key", key ?? certs.serverKey]
        if clientCA { args += ["--tls-client-ca", certs.caFile] }
        return try DaemonProcess(extraArgs: args + extra)
    }

    /// `hearth <args> --port <port> <tls flags>`.
    func hearth(_ args: [String], _ d: DaemonProcess, port: Int? = nil, tls: [String]? = nil, host: String? = nil) throws -> CLIProcess.Result {
        try CLIProcess.run(args + ["--port", String(port ?? d.port), "--timeout", "10"] + (host.map { ["--host", $0] } ?? [])
                           + (tls ?? ["--tls", "--ca", certs.caFile]))
    }

    func client() throws -> TLSContext { try .client(caFile: certs.caFile) }

    @Test func everyKindOfSubcommandOverVerifiedTLS() throws {
        let d = try tlsDaemon()
        #expect(d.log.contains("(TLS with \(OpenSSL.version): \(TestCertificates.serverSubject) from \(certs.serverCert)"), "\(d.log)")
        let set = try hearth(["set", "tls/a", #"{"n":1}"#], d)
        #expect(set.status == 0, "\(set.stderr)")
        let get = try hearth(["get", "tls/a", "--json"], d)
        #expect(get.status == 0 && get.stdout.contains(#""n":1"#), "\(get)")
        let query = try hearth(["query", "tls", "where", "n", "==", "1", "--json"], d, host: "localhost")
        #expect(query.status == 0 && query.stdout.contains("tls/a"), "\(query)")
        let listen = try hearth(["listen", "tls/a", "--events", "1", "--json"], d)
        #expect(listen.status == 0 && listen.stdout.contains(#""type":"snapshot""#), "\(listen)")
        let shell = try CLIProcess.run(["shell", "--port", String(d.port), "--tls", "--ca", certs.caFile], stdin: "get tls/a\nping\n")
        #expect(shell.status == 0 && shell.stdout.contains("tls/a") && shell.stdout.contains("pong"), "\(shell)")
        let bench = try CLIProcess.run(["bench", "get", "-c", "4", "-n", "400", "--keys", "50", "--json", "--port", String(d.port),
                                        "--tls", "--ca", certs.caFile])
        #expect(bench.status == 0 && bench.stdout.contains(#""tls":true"#) && bench.stdout.contains(#""errors":0"#), "\(bench)")
    }

    @Test func aListenerOverTLSSeesWritesFromAnotherConnection() throws {
        let d = try tlsDaemon()
        let listener = try WireClient(port: d.port, tls: client())
        let first = try listener.request(#"{"op":"listen","path":"tls/doc","id":1}"#)
        #expect(first["ok"] as? Bool == true)
        let initial = try listener.readObject()
        #expect(initial["type"] as? String == "snapshot")
        let writer = try WireClient(port: d.port, tls: client())
        #expect(try writer.request(#"{"op":"set","path":"tls/doc","data":{"v":7},"id":2}"#)["ok"] as? Bool == true)
        let change = try listener.readObject()
        #expect(change["type"] as? String == "snapshot")
        #expect("\(change)".contains("7"), "\(change)")
    }

    @Test func untrustedExpiredAndMisnamedCertificatesAreRefused() throws {
        let d = try tlsDaemon()
        let wrongCA = try hearth(["ping"], d, tls: ["--tls", "--ca", certs.otherCAFile])
        #expect(wrongCA.status == 3)
        #expect(wrongCA.stderr.contains("certificate verify failed: unable to get local issuer certificate"), "\(wrongCA.stderr)")
        #expect(d.waitForLog("TLS handshake with 127.0.0.1:"), "the daemon logs the failed handshake")
        #expect(d.log.contains("unknown ca"), "\(d.log)")

        let expired = try tlsDaemon(cert: certs.expiredCert, key: certs.expiredKey)
        let old = try hearth(["ping"], expired)
        #expect(old.status == 3 && old.stderr.contains("certificate verify failed: certificate has expired"), "\(old.stderr)")

        let misnamed = try tlsDaemon(cert: certs.wrongHostCert, key: certs.wrongHostKey)
        let byName = try hearth(["ping"], misnamed, host: "localhost")
        #expect(byName.status == 3 && byName.stderr.contains("certificate verify failed: hostname mismatch"), "\(byName.stderr)")
        let byAddress = try hearth(["ping"], misnamed)
        #expect(byAddress.status == 3 && byAddress.stderr.contains("certificate verify failed: IP address mismatch"), "\(byAddress.stderr)")
        let skipping = try hearth(["ping"], misnamed, tls: ["--tls", "--insecure-skip-verify"])
        #expect(skipping.status == 0, "\(skipping.stderr)")
    }

    @Test func clientCertificateRequiredAndMissingIsRefused() throws {
        let d = try tlsDaemon(clientCA: true)
        let with = try hearth(["ping"], d, tls: ["--tls", "--ca", certs.caFile, "--cert", certs.clientCert, "--key", certs.clientKey])
        #expect(with.status == 0, "\(with.stderr)")
        let without = try hearth(["ping"], d)
        #expect(without.status == 3)
        #expect(without.stderr.contains("certificate required"), "\(without.stderr)")
        #expect(d.waitForLog("peer did not return a certificate"), "\(d.log)")
        // The wire client sees the verified subject the daemon sees.
        let mutual = try WireClient(port: d.port, tls: .client(caFile: certs.caFile, certificateFile: certs.clientCert, keyFile: certs.clientKey))
        #expect(try mutual.request(#"{"op":"ping","id":1}"#)["ok"] as? Bool == true)
    }

    @Test func plainTextClientOfATLSPortIsAnsweredAndClosed() throws {
        let d = try tlsDaemon()
        let plain = try d.connect()
        try plain.send(#"{"op":"ping","id":1}"#)
        let answer = try plain.readObject()
        #expect(answer["ok"] as? Bool == false)
        let error = answer["error"] as? [String: Any]
        #expect(error?["code"] as? String == "UNAVAILABLE")
        #expect(error?["message"] as? String == "this port speaks TLS; connect with a TLS client (hearth --tls, openssl s_client)")
        #expect(plain.isClosedByPeer())
        #expect(d.waitForLog("it spoke plain text to the TLS port \(d.port)"), "\(d.log)")
        let cli = try hearth(["ping"], d, tls: [])
        #expect(cli.status == 1 && cli.stderr.contains("this port speaks TLS"), "\(cli)")
    }

    @Test func tlsClientOfAPlainPortIsTold() throws {
        let d = try DaemonProcess()
        let cli = try hearth(["ping"], d)
        #expect(cli.status == 3)
        #expect(cli.stderr.contains("the server answered in plain text, not TLS (is TLS off on this port?)"), "\(cli.stderr)")
        #expect(cli.stderr.contains("this port speaks plain text, not TLS; connect without TLS"), "\(cli.stderr)")
        #expect(d.waitForLog("it sent a TLS handshake to a plain-text port (connect without TLS)"), "\(d.log)")
        // The daemon is unharmed.
        #expect(try d.connect().request(#"{"op":"ping","id":1}"#)["ok"] as? Bool == true)
    }

    @Test func slowHandshakeIsClosedAtTheTimeout() throws {
        let d = try tlsDaemon(extra: ["--tls-handshake-timeout", "200"])
        let slow = try d.connect()
        try slow.sendRaw([0x16, 0x03, 0x01])   // a record header, then silence
        #expect(slow.isClosedByPeer(timeout: 10))
        #expect(d.waitForLog("the TLS handshake did not finish within 200 ms (--tls-handshake-timeout)"), "\(d.log)")
    }

    @Test func sighupReloadsTheCertificateWhileATLSListenerStaysSubscribed() throws {
        let dir = certs.path("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let cert = dir + "/server.pem", key = dir + "/server.key"
        try FileManager.default.copyItem(atPath: certs.serverCert, toPath: cert)
        try FileManager.default.copyItem(atPath: certs.serverKey, toPath: key)
        let d = try tlsDaemon(cert: cert, key: key)

        let listener = try WireClient(port: d.port, tls: client())
        #expect(listener.tls?.peerCertificateSubject == TestCertificates.serverSubject)
        #expect(try listener.request(#"{"op":"listen","path":"reload/doc","id":1}"#)["ok"] as? Bool == true)
        _ = try listener.readObject()   // the initial snapshot

        try FileManager.default.removeItem(atPath: cert)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: certs.renewedServerCert, toPath: cert)
        try FileManager.default.copyItem(atPath: certs.renewedServerKey, toPath: key)
        kill(d.pid, SIGHUP)
        #expect(d.waitForLog("SIGHUP: reloaded TLS certificate: \(TestCertificates.renewedSubject) from \(cert)"), "\(d.log)")

        let fresh = try WireClient(port: d.port, tls: client())
        #expect(fresh.tls?.peerCertificateSubject == TestCertificates.renewedSubject)
        #expect(try fresh.request(#"{"op":"set","path":"reload/doc","data":{"after":"reload"},"id":2}"#)["ok"] as? Bool == true)
        let pushed = try listener.readObject()
        #expect(pushed["type"] as? String == "snapshot" && "\(pushed)".contains("reload"), "\(pushed)")

        // A file that does not load keeps the current certificate.
        try "not a certificate\n".write(toFile: cert, atomically: true, encoding: .utf8)
        kill(d.pid, SIGHUP)
        #expect(d.waitForLog("SIGHUP: could not reload TLS certificate, keeping the previous one: --tls-cert \(cert): not a usable PEM certificate chain"), "\(d.log)")
        let after = try WireClient(port: d.port, tls: client())
        #expect(after.tls?.peerCertificateSubject == TestCertificates.renewedSubject)
        #expect(try listener.request(#"{"op":"ping","id":3}"#)["ok"] as? Bool == true, "the first listener's connection survived both reloads")
    }

    @Test func tlsPortBesidePlainTextOnLoopback() throws {
        let d = try tlsDaemon(extra: ["--tls-port", "0"])
        let log = d.log
        guard let r = log.range(of: #"and 127\.0\.0\.1:(\d+) \(plain text, loopback only\)"#, options: .regularExpression) else {
            Issue.record("no plain-text port in the start line: \(log)")
            return
        }
        let plainPort = Int(log[r].dropFirst("and 127.0.0.1:".count).prefix { $0.isNumber })!
        #expect(plainPort != d.port)
        let tls = try WireClient(port: d.port, tls: client())
        #expect(try tls.request(#"{"op":"set","path":"two/a","data":{"n":1},"id":1}"#)["ok"] as? Bool == true)
        let plain = try WireClient(port: plainPort)
        let got = try plain.request(#"{"op":"get","path":"two/a","id":2}"#)
        #expect(got["ok"] as? Bool == true && "\(got)".contains("two/a"), "\(got)")
        // TLS sent to the plain port is told where TLS is.
        let wrong = try hearth(["ping"], d, port: plainPort)
        #expect(wrong.stderr.contains("this port speaks plain text, not TLS; TLS is served on port \(d.port)"), "\(wrong.stderr)")
    }

    @Test func listenAddressesKeepPlainTextOnLoopback() {
        var config = ServerConfig()
        config.port = 7411
        #expect(config.listenAddresses == [ListenAddress(host: "127.0.0.1", port: 7411, tls: false)])
        config.tls = TLSSettings(certificateFile: "c", keyFile: "k")
        #expect(config.listenAddresses == [ListenAddress(host: "127.0.0.1", port: 7411, tls: true)])
        config.tls?.port = 7412
        config.host = "0.0.0.0"
        #expect(config.listenAddresses == [ListenAddress(host: "0.0.0.0", port: 7412, tls: true),
                                           ListenAddress(host: "127.0.0.1", port: 7411, tls: false)])
        config.host = "::"
        #expect(config.listenAddresses.last == ListenAddress(host: "::1", port: 7411, tls: false))
        config.host = "127.0.0.2"
        #expect(config.listenAddresses.last == ListenAddress(host: "127.0.0.2", port: 7411, tls: false))
    }

    @Test func flagMistakesAreRefusedBeforeAnythingHappens() throws {
        let dataDir = NSTemporaryDirectory() + "hearth-tls-flags-" + UUID().uuidString
        let cases: [([String], String)] = [
            (["--tls-cert", certs.serverCert], "hearthd error: --tls-cert needs --tls-key (the certificate's private key)"),
            (["--tls-key", certs.serverKey], "hearthd error: --tls-key needs --tls-cert (the certificate it belongs to)"),
            (["--tls-port", "7412"], "hearthd error: --tls-port needs --tls-cert and --tls-key"),
            (["--tls-client-ca", certs.caFile], "hearthd error: --tls-client-ca needs --tls-cert and --tls-key (client certificates are checked over TLS)"),
            (["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--port", "7500", "--tls-port", "7500"],
             "hearthd error: --tls-port 7500 is also --port: TLS and plain text need two ports"),
            (["--tls-cert", certs.path("absent.pem"), "--tls-key", certs.serverKey],
             "hearthd error: cannot start: --tls-cert \(certs.path("absent.pem")): cannot read the file: No such file or directory"),
            (["--tls-cert", certs.serverCert, "--tls-key", certs.clientKey],
             "hearthd error: cannot start: --tls-key \(certs.clientKey) does not belong to the certificate in \(certs.serverCert)"),
        ]
        for (args, message) in cases {
            let (status, stderr) = try DaemonProcess.runToExit(["--port", "0", "--data-dir", dataDir] + args)
            #expect(status == 2, "\(args)")
            #expect(stderr.contains(message), "\(args): \(stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dataDir), "a refused start created the data directory")
    }
}
