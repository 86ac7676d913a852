import COpenSSL

/// One TLS connection as a state machine over memory buffers: it never touches a socket. Bytes read from
/// the peer go in through ``receive(_:scratch:plaintext:)``, which advances the handshake and hands out the
/// decrypted plaintext; plaintext to send goes in through ``write(_:)``; whatever must reach the peer
/// (handshake messages, records, alerts) waits in the output, taken with ``takeOutput(into:)``. After any call,
/// send the output (even after an error: it may carry the alert telling the peer why).
///
/// One thread at a time. A client session sends its ClientHello as soon as it is made (take the output).
///
/// Peers that do not speak TLS are told apart from broken handshakes (``TLSError/Kind/plainTextPeer``): a
/// server whose first byte from the client is not a TLS handshake record, or a client whose first byte from
/// the server is not a TLS record (the server answered in plain text; its first line is quoted).
public final class TLSSession {
    public enum State: Equatable, Sendable {
        case handshaking
        case established
        /// The peer sent close_notify.
        case closed
        case failed
    }

    public private(set) var state: State = .handshaking
    public let isServer: Bool
    private let raw: OpaquePointer
    private var sawInput = false
    /// Client: the first bytes received, kept while the handshake runs to quote a plain-text answer.
    private var firstBytes: [UInt8] = []

    /// `serverName` (clients): the name the server's certificate must carry (a DNS name or an IP address),
    /// also sent as SNI for DNS names. Nil skips the name check (the chain is still verified).
    public init(context: TLSContext, serverName: String? = nil) throws(TLSError) {
        var err = [CChar](repeating: 0, count: 512)
        let made: OpaquePointer? = withOptionalCString(context.isServer ? nil : serverName) {
            hearth_tls_new(context.raw, $0, &err, err.count)
        }
        guard let made else { throw TLSError(.configuration, String(cString: err)) }
        raw = made
        isServer = context.isServer
        if !isServer {
            _ = hearth_tls_handshake(raw)   // writes the ClientHello into the output
        }
    }

    deinit { hearth_tls_free(raw) }

    public var isEstablished: Bool { state == .established }

    // MARK: Input

    /// What a ``receive(_:scratch:plaintext:)`` call changed.
    public struct Progress: Sendable {
        /// The handshake finished during this call.
        public var handshakeCompleted = false
        /// The peer sent close_notify: no more plaintext will come.
        public var peerClosed = false
    }

    /// Buffers `bytes` from the peer, advances the handshake, and calls `plaintext` with each decrypted chunk
    /// (valid during the call only; decrypted into `scratch`, at least 16 KiB is best) for as long as it
    /// returns true. Throws when the peer does not speak TLS or the connection fails; the state is then
    /// `.failed` and the output may hold an alert.
    public func receive(_ bytes: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
                        plaintext: (UnsafeRawBufferPointer) -> Bool) throws(TLSError) -> Progress {
        var progress = Progress()
        guard state == .handshaking || state == .established else { return progress }
        if bytes.count > 0 {
            if state == .handshaking && !isServer && firstBytes.count < 256 {
                firstBytes.append(contentsOf: bytes.prefix(256 - firstBytes.count))
            }
            if !sawInput {
                sawInput = true
                try checkFirstByte(bytes[0])
            }
            guard hearth_tls_feed(raw, bytes.baseAddress, bytes.count) == Int32(HEARTH_TLS_OK) else { throw fail(.connection) }
        }
        if state == .handshaking {
            switch hearth_tls_handshake(raw) {
            case Int32(HEARTH_TLS_OK):
                state = .established
                progress.handshakeCompleted = true
                firstBytes = []
            case Int32(HEARTH_TLS_WANT_INPUT):
                return progress
            default:
                throw fail(.handshake)
            }
        }
        while true {
            var status: Int32 = 0
            let n = hearth_tls_read(raw, scratch.baseAddress, scratch.count, &status)
            if n > 0 {
                if !plaintext(UnsafeRawBufferPointer(start: scratch.baseAddress, count: n)) { return progress }
                // Nothing buffered: another read would only say so (one OpenSSL call saved per record).
                if hearth_tls_input_pending(raw) == 0 { return progress }
                continue
            }
            switch status {
            case Int32(HEARTH_TLS_WANT_INPUT):
                return progress
            case Int32(HEARTH_TLS_CLOSED):
                state = .closed
                progress.peerClosed = true
                return progress
            default:
                throw fail(.connection)
            }
        }
    }

    /// Array-returning form of ``receive(_:scratch:plaintext:)``, for tests and simple clients.
    public func receive(_ bytes: [UInt8]) throws(TLSError) -> (plaintext: [UInt8], progress: Progress) {
        var out: [UInt8] = []
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024 + 512, alignment: 16)
        defer { scratch.deallocate() }
        let result = bytes.withUnsafeBytes { b in
            Result { () throws(TLSError) -> Progress in
                try receive(b, scratch: scratch) { out.append(contentsOf: $0); return true }
            }
        }
        return (out, try result.get())
    }

    private func checkFirstByte(_ first: UInt8) throws(TLSError) {
        if isServer {
            // Every TLS connection starts with a handshake record (content type 22).
            guard first != 0x16 else { return }
            state = .failed
            throw TLSError(.plainTextPeer, "the client does not speak TLS (its first bytes are not a TLS handshake)")
        }
        // Record types: change_cipher_spec 20, alert 21, handshake 22, application data 23.
        guard !(0x14...0x17).contains(first) else { return }
        state = .failed
        throw plainTextAnswer()
    }

    /// The error for a failed call, from OpenSSL's reason; the session is unusable afterwards.
    private func fail(_ kind: TLSError.Kind) -> TLSError {
        state = .failed
        return TLSError(kind, String(cString: hearth_tls_error(raw)))
    }

    /// Client: the server's answer quoted, when it answered the handshake in plain text.
    private func plainTextAnswer() -> TLSError {
        var quoted = firstBytes.prefix { $0 != 10 && $0 != 13 }
        if quoted.count > 200 { quoted = quoted.prefix(200) }
        let text = String(decoding: quoted, as: UTF8.self)
        return TLSError(.plainTextPeer, "the server answered in plain text, not TLS (is TLS off on this port?): \(text)")
    }

    // MARK: Output

    /// Encrypts all of `bytes` into the output (as records of up to 16 KiB). The handshake must be complete.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        guard state == .established else {
            throw TLSError(.notEstablished, "TLS write before the handshake finished")
        }
        guard hearth_tls_write(raw, bytes.baseAddress, bytes.count) == Int32(HEARTH_TLS_OK) else { throw fail(.connection) }
    }

    public func write(_ bytes: [UInt8]) throws(TLSError) {
        try bytes.withUnsafeBytes { b in Result { () throws(TLSError) in try write(b) } }.get()
    }

    /// Queues close_notify (after the handshake; before it there is nothing to close politely).
    public func close() {
        if state == .established || state == .closed { _ = hearth_tls_close(raw) }
    }

    /// Bytes waiting to be sent to the peer.
    public var outputCount: Int { hearth_tls_output_pending(raw) }

    /// Moves up to `buffer.count` output bytes into `buffer`; returns how many.
    public func takeOutput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        hearth_tls_take_output(raw, buffer.baseAddress, buffer.count)
    }

    /// All pending output.
    public func takeOutput() -> [UInt8] {
        let n = outputCount
        guard n > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: n) { buf, count in
            count = takeOutput(into: UnsafeMutableRawBufferPointer(buf))
        }
    }

    // MARK: Facts

    /// The peer certificate's subject in RFC 2253 form ("CN=alice,OU=ops,O=Example"), once the handshake is
    /// complete and the peer sent one. A server that requires client certificates has verified it.
    public var peerCertificateSubject: String? {
        guard state == .established || state == .closed else { return nil }
        let text = readText { hearth_tls_peer_subject(raw, $0, $1) }
        return text.isEmpty ? nil : text
    }

    /// "TLSv1.3", "TLSv1.2".
    public var protocolVersion: String { String(cString: hearth_tls_protocol(raw)) }
    /// The negotiated cipher suite, e.g. "TLS_AES_256_GCM_SHA384".
    public var cipher: String { String(cString: hearth_tls_cipher(raw)) }
    /// Whether the handshake resumed an earlier session (no certificate exchange).
    public var sessionReused: Bool { hearth_tls_session_reused(raw) != 0 }
}
