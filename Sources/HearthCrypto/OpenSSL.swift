import COpenSSL

/// Facts about the OpenSSL library Hearth is linked with. HearthCrypto is the only module that imports
/// OpenSSL (through the C target COpenSSL); TLS and token signatures go through it.
public enum OpenSSL {
    /// The library's version text, e.g. "OpenSSL 3.0.19 27 Jan 2026", as the start-up log prints it.
    public static var version: String { String(cString: hearth_openssl_version()) }
}
