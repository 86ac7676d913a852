#if canImport(HearthCrypto)
import HearthCrypto

/// The TLS settings of one `Hearth` instance turned into an OpenSSL client context, made once so that
/// reconnections resume the TLS session.
final class TLSClient: @unchecked Sendable {
    let settings: HearthTLS
    private let context: TLSContext

    init(_ settings: HearthTLS) throws {
        self.settings = settings
        do {
            context = try TLSContext.client(caFile: settings.caFile, certificateFile: settings.certificateFile,
                                            keyFile: settings.keyFile, verifyPeer: !settings.insecureSkipVerify)
        } catch {
            throw HearthError.invalid("TLS settings: \(error.message)")
        }
    }

    /// A new TLS endpoint for a connection to `host`.
    func cipher(host: String) throws -> TLSCipher {
        do {
            return TLSCipher(try TLSSession(context: context, serverName: settings.serverName ?? host))
        } catch {
            throw HearthError.invalid("TLS: \(error.message)")
        }
    }
}

/// One connection's TLS (OpenSSL over memory buffers): the link feeds it received bytes and sends what it
/// produces.
final class TLSCipher {
    private let session: TLSSession

    init(_ session: TLSSession) { self.session = session }

    var isEstablished: Bool { session.isEstablished }

    /// Bytes to send to the daemon (the ClientHello, then whatever the session produced).
    func takeOutput() -> [UInt8] { session.takeOutput() }

    /// Received bytes in, plaintext out; `closed` once the daemon sent close_notify. Throws the reason a
    /// handshake or connection failed.
    func receive(_ bytes: ArraySlice<UInt8>) throws -> (plaintext: [UInt8], closed: Bool) {
        do {
            let (plaintext, progress) = try session.receive(Array(bytes))
            return (plaintext, progress.peerClosed)
        } catch {
            throw HearthError.unavailable(error.message)
        }
    }

    /// Plaintext in, bytes to send out.
    func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        do {
            try session.write(plaintext)
        } catch {
            throw HearthError.unavailable(error.message)
        }
        return session.takeOutput()
    }
}
#endif
