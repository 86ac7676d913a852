/// `hearthd`'s TLS flags: `--tls-cert`, `--tls-key`, `--tls-client-ca`, `--tls-port`, `--tls-handshake-timeout`.
public struct TLSSettings: Sendable, Equatable {
    /// PEM certificate chain: the server's certificate first, then any intermediates.
    public var certificateFile: String
    /// The certificate's PEM private key.
    public var keyFile: String
    /// PEM CA certificates: when set, every client must present a certificate they signed (mutual TLS).
    public var clientCAFile: String?
    /// When set, TLS is served on this port and plain text on `ServerConfig.port`, on loopback only. When nil,
    /// `ServerConfig.port` serves TLS (and nothing serves plain text).
    public var port: Int?
    /// How long a client may take to finish its handshake before it is closed (slowloris); 0: forever.
    public var handshakeTimeoutMs: UInt64 = 10_000

    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil, port: Int? = nil,
                handshakeTimeoutMs: UInt64 = 10_000) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.port = port
        self.handshakeTimeoutMs = handshakeTimeoutMs
    }
}

/// One address the daemon listens on.
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// 127.0.0.0/8, ::1 and localhost.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

extension ServerConfig {
    /// Where the daemon listens: `host:port` (TLS when TLS is configured); with a separate TLS port, TLS on
    /// `host:tlsPort` and plain text on `port` at the loopback address of `host`'s family (`host` itself
    /// when it is a loopback address), so plain text never leaves the machine. TLS first.
    public var listenAddresses: [ListenAddress] {
        guard let tls else { return [ListenAddress(host: host, port: port, tls: false)] }
        guard let tlsPort = tls.port else { return [ListenAddress(host: host, port: port, tls: true)] }
        let plainHost = ListenAddress.isLoopback(host) ? host : (host.contains(":") ? "::1" : "127.0.0.1")
        return [ListenAddress(host: host, port: tlsPort, tls: true), ListenAddress(host: plainHost, port: port, tls: false)]
    }
}
