import HearthCrypto
import HearthLoop
import HearthModel
import HearthProtocol

/// The daemon's TLS: the current server context (made from `TLSSettings`' files, remade on SIGHUP), and the
/// wiring of each accepted connection on a TLS port. Loop thread, except `init`.
public final class ServerTLS {
    public let settings: TLSSettings
    /// New connections use this; connections already open keep the context they were made from.
    public private(set) var context: TLSContext

    /// Loads the certificate, key and client CA; throws a message naming the flag, the file and the reason.
    public init(_ settings: TLSSettings) throws(HearthError) {
        self.settings = settings
        do {
            context = try ServerTLS.makeContext(settings)
        } catch {
            throw HearthError(.invalidArgument, error.message)
        }
    }

    private static func makeContext(_ s: TLSSettings) throws(TLSError) -> TLSContext {
        try TLSContext.server(certificateFile: s.certificateFile, keyFile: s.keyFile, clientCAFile: s.clientCAFile)
    }

    /// SIGHUP: reads the files again. On success new connections use the new context (open ones keep theirs)
    /// and the result describes the certificate; on failure the old context stays and the error says why.
    func reload() throws(TLSError) -> String {
        context = try ServerTLS.makeContext(settings)
        return certificateSummary
    }

    /// "CN=localhost,O=Example, valid until Jan  1 00:00:00 2030 GMT; client certificates required (CA file)".
    var certificateSummary: String {
        var text = "\(context.certificateSubject ?? "no subject") from \(settings.certificateFile)"
        if let until = context.certificateNotAfter { text += ", valid until \(until)" }
        if let ca = settings.clientCAFile { text += "; client certificates required (\(ca))" }
        return text
    }

    /// The start-up line's description of a TLS port.
    var startupDescription: String {
        "TLS with \(OpenSSL.version): \(certificateSummary)"
    }

    /// Sent unencrypted to a client that speaks plain text to a TLS port, before it is closed.
    static let plainTextReply: [UInt8] = {
        var w = JSONWriter(capacity: 256)
        ResponseLine.error(&w, HearthError(.unavailable, "this port speaks TLS; connect with a TLS client (hearth --tls, openssl s_client)"), id: nil)
        return w.bytes
    }()
}

extension Server {
    /// A connection accepted on one of the daemon's ports: TLS ports wrap it in a TLS session first.
    func acceptTCP(_ conn: TCPConnection, tls: Bool, port: Int) {
        if tls, let serverTLS = self.tls, !shuttingDown {
            let session: TLSSession
            do {
                session = try TLSSession(context: serverTLS.context)
            } catch {
                logger.error("cannot start TLS for \(conn.peer): \(error.message)")
                conn.abort()
                return
            }
            let peer = conn.peer
            conn.startTLS(session, handshakeTimeoutMs: serverTLS.settings.handshakeTimeoutMs,
                          plainTextReply: ServerTLS.plainTextReply) { [unowned self] error in
                guard let error else { return }
                self.tlsFailures.note(Server.describeTLSFailure(error, peer: peer, port: port))
            }
        }
        accept(conn)
    }

    /// The one log line for a TLS connection that failed before it could carry a request.
    static func describeTLSFailure(_ error: TLSError, peer: String, port: Int) -> String {
        switch error.kind {
        case .plainTextPeer:
            return "closed \(peer): it spoke plain text to the TLS port \(port) (answered with a plain-text error line)"
        case .timedOut:
            return "closed \(peer): \(error.message) (--tls-handshake-timeout)"
        default:
            return "TLS handshake with \(peer) on port \(port) failed: \(error.message)"
        }
    }

    /// A client sent a TLS handshake to a plain-text port: one log line, one plain-text error line, closed.
    func tlsOnPlainPort(_ session: Session) {
        var hint = "connect without TLS"
        if let tlsPort = boundTLSPort { hint = "TLS is served on port \(tlsPort)" }
        tlsFailures.note("closed \(session.conn.peer): it sent a TLS handshake to a plain-text port (\(hint))")
        session.close(with: HearthError(.unavailable, "this port speaks plain text, not TLS; \(hint)"))
    }
}
