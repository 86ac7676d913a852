import Foundation

/// Certificates made with the `openssl` command at test time, in a private temporary directory (nothing that
/// expires is checked in): a CA, a server certificate for 127.0.0.1 and localhost, a client certificate, an
/// expired server certificate, a server certificate for another host name, and a second, unrelated CA with a
/// server certificate of its own. All keys are P-256 EC keys; every path is a PEM file.
public final class TestCertificates: @unchecked Sendable {
    public let directory: String

    public var caFile: String { path("ca.pem") }
    public var serverCert: String { path("server.pem") }
    public var serverKey: String { path("server.key") }
    public var clientCert: String { path("client.pem") }
    public var clientKey: String { path("client.key") }
    /// Signed by the CA, for 127.0.0.1 and localhost, but expired yesterday.
    public var expiredCert: String { path("expired.pem") }
    public var expiredKey: String { path("expired.key") }
    /// Signed by the CA, valid, for `wrong.example` only.
    public var wrongHostCert: String { path("wronghost.pem") }
    public var wrongHostKey: String { path("wronghost.key") }
    /// A second CA nobody trusts, and a server certificate for 127.0.0.1 and localhost it signed.
    public var otherCAFile: String { path("other-ca.pem") }
    public var otherServerCert: String { path("other-server.pem") }
    public var otherServerKey: String { path("other-server.key") }
    /// A second server certificate from the CA (another subject), for reload tests.
    public var renewedServerCert: String { path("renewed.pem") }
    public var renewedServerKey: String { path("renewed.key") }

    /// The client certificate's subject as the daemon reports it (RFC 2253).
    public static let clientSubject = "CN=test-client,O=Hearth Tests"
    public static let serverSubject = "CN=localhost,O=Hearth Tests"
    public static let renewedSubject = "CN=localhost renewed,O=Hearth Tests"

    public init() throws {
        directory = NSTemporaryDirectory() + "hearth-certs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TemporaryDirectories.removeAtExit(directory)
        let localSAN = "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
        try makeCA("ca", subject: "/CN=Hearth Test CA")
        try makeCA("other-ca", subject: "/CN=Unrelated Test CA")
        try issue("server", subject: "/O=Hearth Tests/CN=localhost", by: "ca", extensions: localSAN + "\nextendedKeyUsage=serverAuth")
        try issue("renewed", subject: "/O=Hearth Tests/CN=localhost renewed", by: "ca", extensions: localSAN + "\nextendedKeyUsage=serverAuth")
        try issue("client", subject: "/O=Hearth Tests/CN=test-client", by: "ca", extensions: "extendedKeyUsage=clientAuth")
        try issue("expired", subject: "/O=Hearth Tests/CN=expired", by: "ca", extensions: localSAN, days: -1)
        try issue("wronghost", subject: "/O=Hearth Tests/CN=wrong.example", by: "ca", extensions: "subjectAltName=DNS:wrong.example")
        try issue("other-server", subject: "/O=Elsewhere/CN=localhost", by: "other-ca", extensions: localSAN)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    public func path(_ name: String) -> String { directory + "/" + name }

    private func makeCA(_ name: String, subject: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "2", "-subj", subject,
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    }

    private func issue(_ name: String, subject: String, by ca: String, extensions: String, days: Int = 2) throws {
        let ext = path(name + ".ext")
        try extensions.write(toFile: ext, atomically: true, encoding: .utf8)
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subject])
        try openssl(["x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key"),
                     "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-days", String(days),
                     "-extfile", ext, "-out", path(name + ".pem")])
    }

    private func openssl(_ args: [String]) throws {
        try OpenSSLCommand.run(args)
    }
}
