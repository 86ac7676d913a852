import COpenSSL

/// The configuration TLS connections are made from (an OpenSSL `SSL_CTX`): TLS 1.2 at least, AEAD cipher
/// suites only, no renegotiation, session resumption. Immutable once made; replacing certificates means making
/// a new context (connections made from the old one keep it until they close). Thread-safe: sessions for many
/// threads may be made from one context.
public final class TLSContext: @unchecked Sendable {
    let raw: OpaquePointer
    /// `true` for a server context.
    public let isServer: Bool
    /// Server contexts: whether clients must present a certificate signed by the client CA.
    public let requiresClientCertificate: Bool

    private init(isServer: Bool, cert: String?, key: String?, ca: String?, verify: Bool) throws(TLSError) {
        var err = [CChar](repeating: 0, count: 1024)
        let made: OpaquePointer? = withOptionalCString(cert) { certPtr in
            withOptionalCString(key) { keyPtr in
                withOptionalCString(ca) { caPtr in
                    var config = hearth_tls_ctx_config(is_server: isServer ? 1 : 0, cert_file: certPtr, key_file: keyPtr,
                                                       ca_file: caPtr, verify_peer: verify ? 1 : 0)
                    return hearth_tls_ctx_new(&config, &err, err.count)
                }
            }
        }
        guard let made else { throw TLSError(.configuration, String(cString: err)) }
        raw = made
        self.isServer = isServer
        requiresClientCertificate = isServer && ca != nil
    }

    deinit { hearth_tls_ctx_free(raw) }

    /// A server context: `certificateFile` holds the PEM certificate chain (the server's certificate first,
    /// then intermediates), `keyFile` its PEM private key. With `clientCAFile`, clients must present a
    /// certificate that CA signed (mutual TLS). Errors name the flag's file and OpenSSL's reason.
    public static func server(certificateFile: String, keyFile: String, clientCAFile: String? = nil) throws(TLSError) -> TLSContext {
        try TLSContext(isServer: true, cert: certificateFile, key: keyFile, ca: clientCAFile, verify: true)
    }

    /// A client context. The server's certificate is verified against `caFile` (PEM), or against the system's
    /// trusted certificates when nil; `verifyPeer: false` turns the check off entirely (for tests against
    /// self-signed daemons only). `certificateFile` and `keyFile` are presented when the server asks.
    public static func client(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                              verifyPeer: Bool = true) throws(TLSError) -> TLSContext {
        try TLSContext(isServer: false, cert: certificateFile, key: keyFile, ca: caFile, verify: verifyPeer)
    }

    /// The subject of this context's own certificate (RFC 2253), nil without one.
    public var certificateSubject: String? {
        let text = readText { hearth_tls_ctx_subject(raw, $0, $1) }
        return text.isEmpty ? nil : text
    }

    /// When this context's own certificate expires, as OpenSSL prints it ("Jan  1 00:00:00 2030 GMT").
    public var certificateNotAfter: String? {
        let text = readText { hearth_tls_ctx_not_after(raw, $0, $1) }
        return text.isEmpty ? nil : text
    }
}

/// Runs `body` with a C string for `text`, or NULL.
func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// Reads text a C function writes into a buffer (returning its length).
func readText(_ fill: (UnsafeMutablePointer<CChar>, Int) -> Int) -> String {
    var buf = [CChar](repeating: 0, count: 1024)
    let n = buf.withUnsafeMutableBufferPointer { fill($0.baseAddress!, $0.count) }
    return String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
