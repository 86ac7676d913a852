/// TLS settings of a `Hearth` instance (`HearthSettings.tls`). Verification is on by default: the daemon's
/// certificate must chain to `caFile` (or, without one, to the system's trusted CAs) and carry the host name
/// (a DNS name, or an IP address in its subjectAltName).
///
/// Linux speaks TLS through OpenSSL (HearthCrypto); Apple platforms through the system's TLS (Security),
/// where client certificates from PEM files are not supported.
public struct HearthTLS: Sendable, Equatable {
    /// PEM CA certificates that sign the daemon's certificate; nil trusts the system's CAs.
    public var caFile: String?
    /// PEM client certificate and its key, for a daemon that requires client certificates (mutual TLS).
    public var certificateFile: String?
    public var keyFile: String?
    /// The name the certificate must carry, when not the host connected to.
    public var serverName: String?
    /// Accepts any certificate for any name: anyone between client and daemon can read and change the
    /// traffic. For tests against throwaway daemons only.
    public var insecureSkipVerify = false

    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                serverName: String? = nil, insecureSkipVerify: Bool = false) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.serverName = serverName
        self.insecureSkipVerify = insecureSkipVerify
    }
}
