import Foundation
import HearthTesting
import Testing
@testable import HearthClient

/// A fresh daemon (private data dir, ephemeral port) and a client of it, for one test.
final class TestEnv: @unchecked Sendable {
    let daemon: DaemonProcess
    let db: Hearth

    init(extraArgs: [String] = [], settings: HearthSettings = HearthSettings()) throws {
        daemon = try DaemonProcess(extraArgs: extraArgs)
        db = Hearth(host: "127.0.0.1", port: daemon.port, settings: settings)
    }

    deinit { db.terminate() }

    /// Sends one raw protocol request on a separate connection (for setup the client API does not cover,
    /// such as declaring indexes).
    @discardableResult
    func raw(_ line: String) throws -> [String: Any] {
        let c = try daemon.connect()
        return try c.request(line)
    }
}

extension TestEnv {
    /// Declares a composite index (`fields` as the protocol's JSON list) and waits until it is ready.
    func createIndex(collection: String, fields: String) throws {
        let r = try raw(#"{"op":"index","action":"create","collection":"\#(collection)","fields":\#(fields)}"#)
        guard r.isOK, let id = (r["index"] as? [String: Any])?["id"] as? Int else { throw TestFailure("index create: \(r)") }
        for _ in 0..<500 {
            let list = try raw(#"{"op":"index","action":"list"}"#)
            let mine = (list["indexes"] as? [[String: Any]])?.first { $0["id"] as? Int == id }
            if mine?["state"] as? String == "ready" { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw TestFailure("index \(id) did not become ready")
    }
}

/// What the daemon under test supports, probed once.
enum ServerSupport {
    /// True when hearthd answers `listen` (the listener protocol is being implemented in parallel; until it
    /// lands the daemon answers INVALID_ARGUMENT `unknown op "listen"` and the listener tests against the
    /// real daemon are skipped; the client's listener logic is still covered by the scripted-server tests).
    static let listen: Bool = {
        guard let d = try? DaemonProcess(), let c = try? d.connect(),
              let r = try? c.request(#"{"op":"listen","path":"probe/doc"}"#) else { return false }
        return r.isOK
    }()
}

/// A free TCP port on 127.0.0.1 (bound then released; good enough for a test that restarts a daemon).
func freePort() throws -> Int {
    // Below the ephemeral range (32768-60999): a port from that range can be taken meanwhile by a client
    // socket, even by the very client that keeps connecting to it (a TCP self-connect).
    for _ in 0..<200 {
        let port = Int.random(in: 20_000..<32_000)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if ok { return port }
    }
    throw TestFailure("cannot find a free port below the ephemeral range")
}

/// Collects listener callbacks (thread-safe) and waits for them.
final class Recorder<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    private var errors: [Error] = []

    var callback: @Sendable (T?, Error?) -> Void {
        { value, error in
            self.lock.withLock {
                if let value { self.items.append(value) }
                if let error { self.errors.append(error) }
            }
        }
    }

    var values: [T] { lock.withLock { items } }
    var failures: [Error] { lock.withLock { errors } }

    /// Waits until at least `count` values arrived; returns them (throws on timeout).
    @discardableResult
    func wait(for count: Int, timeout: Double = TestTimeouts.barrier) async throws -> [T] {
        let v = try await poll(timeout: timeout) { let v = self.values; return v.count >= count ? v : nil }
        guard let v else { throw TestFailure("timed out waiting for \(count) snapshots (have \(values.count), errors \(failures))") }
        return v
    }

    /// Waits until an error arrived.
    func waitForError(timeout: Double = TestTimeouts.barrier) async throws -> Error {
        guard let e = try await poll(timeout: timeout, { self.failures.first }) else { throw TestFailure("timed out waiting for an error") }
        return e
    }

    /// Waits until `condition` holds for the values (throws on timeout).
    func wait(timeout: Double = 10, until condition: ([T]) -> Bool) async throws {
        guard try await poll(timeout: timeout, { condition(self.values) ? () : nil }) != nil else {
            throw TestFailure("timed out waiting for a condition (have \(values.count) snapshots)")
        }
    }

    /// Looks for a result every 5 ms until `timeout`; nil when none came. The last look is taken after the
    /// deadline, never before it: a waiter that was not scheduled for a while (a loaded suite can starve
    /// the test's tasks for seconds) must not report a callback that arrived meanwhile as missing.
    /// Looks every 5 ms until `look` finds something or `timeout` seconds of this test's own time have passed.
    /// A look that comes back much later than asked (the cooperative pool busy with the synchronous tests of
    /// the same process, which can hold it for minutes on two cores) gives the deadline that time back: the
    /// client's deliveries wait for the same pool, so it is nobody's failure.
    private func poll<R>(timeout: Double, _ look: () -> R?) async throws -> R? {
        var deadline = Date().addingTimeInterval(timeout)
        while true {
            if let r = look() { return r }
            if Date() >= deadline { return nil }
            let asked = Date()
            try await Task.sleep(nanoseconds: 5_000_000)
            let late = Date().timeIntervalSince(asked) - 0.005
            if late > 0.5 { deadline = deadline.addingTimeInterval(late) }
        }
    }
}

/// Runs a callback-style API and awaits its completion.
func withCallback<T: Sendable>(_ body: (@escaping @Sendable (T?, Error?) -> Void) -> Void) async throws -> T? {
    try await withCheckedThrowingContinuation { (cont: CheckedContinuation<T?, Error>) in
        body { value, error in
            if let error { cont.resume(throwing: error) } else { cont.resume(returning: value) }
        }
    }
}

/// The code of a thrown HearthError, nil for anything else.
func hearthCode(_ body: () async throws -> Void) async -> HearthError.Code? {
    do {
        try await body()
        return nil
    } catch let e as HearthError {
        return e.code
    } catch {
        return nil
    }
}

/// How long a test waits for an event it is sure will come (a barrier, not a sleep: a passing test never waits
/// it out). Generous, because the whole suite runs its tests in parallel on few cores: tests that block a
/// thread while the daemon works can keep a client's tasks from running for seconds.
enum TestTimeouts {
    static let barrier: Double = 60
}
