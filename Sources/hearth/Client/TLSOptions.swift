import HearthCrypto

/// `--tls`, `--ca`, `--cert`, `--key`, `--insecure-skip-verify`: how every subcommand that talks to the daemon
/// speaks TLS. The daemon's certificate is verified against the system's trusted CAs or `--ca`, and must carry
/// the `--host` name (a DNS name, or an IP address in its subjectAltName); `--cert`/`--key` present a client
/// certificate (mutual TLS).
struct TLSOptions {
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    var skipVerify = false

    static let specs: [OptionSpec] = [
        .flag("tls", "Speak TLS; the daemon's certificate must be trusted (system CAs, or --ca) and name --host."),
        .value("ca", "file", "With --tls: PEM CA certificates to verify the daemon's certificate with."),
        .value("cert", "file", "With --tls: PEM client certificate for a daemon that requires one (needs --key)."),
        .value("key", "file", "With --tls: the client certificate's PEM private key."),
        .flag("insecure-skip-verify", "With --tls: accept any certificate and host name (anyone in between can read and change the traffic)."),
    ]

    /// Nil without `--tls`; a usage error for TLS flags without `--tls`, or that contradict each other.
    init?(_ args: ParsedArguments) throws(UsageError) {
        caFile = args.string("ca")
        certificateFile = args.string("cert")
        keyFile = args.string("key")
        skipVerify = args.flag("insecure-skip-verify")
        guard args.flag("tls") else {
            let given = ["ca", "cert", "key"].filter { args.string($0) != nil } + (skipVerify ? ["insecure-skip-verify"] : [])
            if let first = given.first { throw UsageError("--\(first) needs --tls.") }
            return nil
        }
        if certificateFile != nil && keyFile == nil { throw UsageError("--cert needs --key (the certificate's private key).") }
        if keyFile != nil && certificateFile == nil { throw UsageError("--key needs --cert (the certificate it belongs to).") }
        if skipVerify && caFile != nil { throw UsageError("--insecure-skip-verify and --ca contradict each other: --ca verifies.") }
        for name in ["ca", "cert", "key"] where args.string(name)?.isEmpty == true {
            throw UsageError("--\(name) needs a file.")
        }
    }

    /// The client context these options describe; errors name the file and the reason.
    func makeContext() throws(ClientError) -> TLSContext {
        do {
            return try TLSContext.client(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile,
                                         verifyPeer: !skipVerify)
        } catch {
            throw .connect("TLS: \(error.message)")
        }
    }

    /// The flags again, for a command line the user can rerun.
    var arguments: [String] {
        var parts = ["--tls"]
        if let caFile { parts += ["--ca", caFile] }
        if let certificateFile, let keyFile { parts += ["--cert", certificateFile, "--key", keyFile] }
        if skipVerify { parts.append("--insecure-skip-verify") }
        return parts
    }
}
