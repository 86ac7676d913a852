#if !canImport(HearthCrypto) && canImport(Security)
import Foundation
import Security

// TLS on Apple platforms through the system's TLS (Security's SSLContext over memory buffers, so the link
// stays one non-blocking socket on every platform). TLS 1.2 at least; the daemon's certificate is evaluated
// with SecTrust against `caFile` (or the system's anchors) and the host name. Client certificates from PEM
// files are not supported here.

/// The TLS settings of one `Hearth` instance, with the CA file read once.
final class TLSClient: @unchecked Sendable {
    let settings: HearthTLS
    let anchors: [SecCertificate]?

    init(_ settings: HearthTLS) throws {
        guard settings.certificateFile == nil, settings.keyFile == nil else {
            throw HearthError.invalid("TLS settings: client certificates from PEM files are supported on Linux only")
        }
        self.settings = settings
        anchors = try settings.caFile.map { try TLSClient.certificates(inPEMFile: $0) }
    }

    func cipher(host: String) throws -> TLSCipher {
        try TLSCipher(client: self, serverName: settings.serverName ?? host)
    }

    /// The certificates of a PEM file (each `-----BEGIN CERTIFICATE-----` block).
    static func certificates(inPEMFile path: String) throws -> [SecCertificate] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw HearthError.invalid("TLS settings: cannot read the CA file \(path)")
        }
        var found: [SecCertificate] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("-----BEGIN CERTIFICATE-----") { body = ""; continue }
            if line.hasPrefix("-----END CERTIFICATE-----") {
                if let b = body, let der = Data(base64Encoded: b, options: .ignoreUnknownCharacters),
                   let cert = SecCertificateCreateWithData(nil, der as CFData) {
                    found.append(cert)
                }
                body = nil
                continue
            }
            body? += line
        }
        guard !found.isEmpty else { throw HearthError.invalid("TLS settings: no PEM certificate in the CA file \(path)") }
        return found
    }
}

/// Bytes between SSLContext and the socket.
private final class MemoryIO {
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
}

private func memoryRead(_ connection: SSLConnectionRef, _ data: UnsafeMutableRawPointer,
                        _ length: UnsafeMutablePointer<Int>) -> OSStatus {
    let io = Unmanaged<MemoryIO>.fromOpaque(connection).takeUnretainedValue()
    let wanted = length.pointee
    let n = min(wanted, io.inbound.count)
    io.inbound.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: n) }
    io.inbound.removeFirst(n)
    length.pointee = n
    return n < wanted ? errSSLWouldBlock : noErr
}

private func memoryWrite(_ connection: SSLConnectionRef, _ data: UnsafeRawPointer,
                         _ length: UnsafeMutablePointer<Int>) -> OSStatus {
    let io = Unmanaged<MemoryIO>.fromOpaque(connection).takeUnretainedValue()
    io.outbound.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length.pointee))
    return noErr
}

/// One connection's TLS: the link feeds it received bytes and sends what it produces.
final class TLSCipher {
    private let context: SSLContext
    private let io = MemoryIO()
    private let client: TLSClient
    private let serverName: String
    private(set) var isEstablished = false
    private var sawInput = false

    init(client: TLSClient, serverName: String) throws {
        guard let context = SSLCreateContext(nil, .clientSide, .streamType) else {
            throw HearthError.internalError("TLS: cannot create an SSL context")
        }
        self.context = context
        self.client = client
        self.serverName = serverName
        SSLSetIOFuncs(context, memoryRead, memoryWrite)
        SSLSetConnection(context, Unmanaged.passUnretained(io).toOpaque())
        SSLSetProtocolVersionMin(context, .tlsProtocol12)
        SSLSetPeerDomainName(context, serverName, serverName.utf8.count)
        // Evaluate the certificate here (custom anchors, host name) instead of the default check.
        SSLSetSessionOption(context, .breakOnServerAuth, true)
        try advance()   // the ClientHello
    }

    deinit { SSLClose(context) }

    func takeOutput() -> [UInt8] {
        defer { io.outbound.removeAll(keepingCapacity: true) }
        return io.outbound
    }

    /// Drives the handshake until it needs more input.
    private func advance() throws {
        while !isEstablished {
            let status = SSLHandshake(context)
            switch status {
            case noErr: isEstablished = true
            case errSSLWouldBlock: return
            case errSSLPeerAuthCompleted: try evaluateTrust()
            default: throw HearthError.unavailable("TLS handshake failed: \(describe(status))")
            }
        }
    }

    private func evaluateTrust() throws {
        guard !client.settings.insecureSkipVerify else { return }
        var trust: SecTrust?
        guard SSLCopyPeerTrust(context, &trust) == noErr, let trust else {
            throw HearthError.unavailable("TLS handshake failed: the daemon sent no certificate")
        }
        SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, serverName as CFString))
        if let anchors = client.anchors {
            SecTrustSetAnchorCertificates(trust, anchors as CFArray)
            SecTrustSetAnchorCertificatesOnly(trust, true)
        }
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else {
            let reason = error.map { CFErrorCopyDescription($0) as String } ?? "not trusted"
            throw HearthError.unavailable("TLS handshake failed: certificate verify failed: \(reason)")
        }
    }

    func receive(_ bytes: ArraySlice<UInt8>) throws -> (plaintext: [UInt8], closed: Bool) {
        if !sawInput, let first = bytes.first {
            sawInput = true
            // Every TLS record starts with its type, 20...23; a daemon without TLS answers a JSON line.
            guard (0x14...0x17).contains(first) else {
                let line = String(decoding: bytes.prefix { $0 != 10 && $0 != 13 }.prefix(200), as: UTF8.self)
                throw HearthError.unavailable("the server answered in plain text, not TLS (is TLS off on this port?): \(line)")
            }
        }
        io.inbound += bytes
        try advance()
        guard isEstablished else { return ([], false) }
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            var n = 0
            let status = buffer.withUnsafeMutableBytes { SSLRead(context, $0.baseAddress!, $0.count, &n) }
            plaintext += buffer[..<n]
            switch status {
            case noErr: continue
            case errSSLWouldBlock: return (plaintext, false)
            case errSSLClosedGraceful, errSSLClosedNoNotify: return (plaintext, true)
            default: throw HearthError.unavailable("TLS read failed: \(describe(status))")
            }
        }
    }

    func encrypt(_ plaintext: [UInt8]) throws -> [UInt8] {
        var written = 0
        let status = plaintext.withUnsafeBytes { SSLWrite(context, $0.baseAddress!, $0.count, &written) }
        guard status == noErr, written == plaintext.count else {
            throw HearthError.unavailable("TLS write failed: \(describe(status))")
        }
        return takeOutput()
    }

    private func describe(_ status: OSStatus) -> String {
        (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
    }
}
#endif
