import HearthLoop

/// What a `Session` needs of its connection: a byte stream with callbacks, output buffering and read
/// pausing. `TCPConnection` is the real one; tests drive sessions through a fake one, without sockets.
///
/// Contract (as `TCPConnection`'s): callbacks run on the loop thread; `send` copies the bytes and never calls
/// back synchronously (memory safety rests on it: the dispatcher lends its shared event bytes to `send`
/// while a callback could replace them); after `close()` or `abort()` sends are ignored and `onClose` runs
/// exactly once.
package protocol ClientConnection: AnyObject {
    var peer: String { get }
    var onRead: ((UnsafeRawBufferPointer) -> Void)? { get set }
    var onDrain: (() -> Void)? { get set }
    var onClose: ((LoopError?) -> Void)? { get set }
    /// Called once when the peer has finished sending; the connection stays open for output until `close()`.
    var onEndOfInput: (() -> Void)? { get set }
    /// Output bytes not yet accepted by the peer's kernel.
    var pendingOutputBytes: Int { get }
    /// Output bytes the peer has not taken: also those in this side's kernel the peer has not acknowledged
    /// (`TCPConnection.outputNotTaken`). A system call: for periodic checks.
    var outputNotTaken: Int { get }
    func startReading()
    func pauseReading()
    func resumeReading()
    func send(_ bytes: UnsafeRawBufferPointer)
    func send(_ bytes: [UInt8])
    /// Sends `first` then `second` as one append (one pending-flush check): a pushed line made of a
    /// listener's own prefix and a body shared by every listener.
    func send(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer)
    /// Has what is buffered written ahead of connections holding only pushed lines (`TCPConnection.expedite`).
    func expedite()
    /// Flushes what is buffered, then closes.
    func close()
    /// `close()`, cutting the connection if its output has not drained after `deadlineMs` (nil: the loop's
    /// default) rather than the default.
    func close(deadlineMs: UInt64?)
    /// Drops the whole sends not yet on their way to the peer (`TCPConnection.dropUnsentOutput`); returns
    /// how many bytes that was.
    @discardableResult func dropUnsentOutput() -> Int
    /// Closes at once, dropping unsent output.
    func abort()
    /// `true` when the connection carries TLS.
    var isTLS: Bool { get }
    /// The verified subject of the client's certificate (RFC 2253, e.g. "CN=alice,O=Example") on a TLS port
    /// with `--tls-client-ca`; nil otherwise. Authorization rules see it as `request.auth.token.cert_subject`.
    var peerCertificateSubject: String? { get }
}

extension ClientConnection {
    public var isTLS: Bool { false }
    public var peerCertificateSubject: String? { nil }
}

extension TCPConnection: ClientConnection {}

extension ClientConnection {
    package func send(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) {
        send(first)
        send(second)
    }
}
