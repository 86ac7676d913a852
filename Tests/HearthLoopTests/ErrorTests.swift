import Testing
@testable import HearthLoop

@Suite("libuv errors surface as LoopError")
struct ErrorTests {
    @Test("listening on a port in use throws EADDRINUSE")
    func addressInUse() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let first = try loop.listen(host: "127.0.0.1", port: 0) { _ in }
        let error = #expect(throws: LoopError.self) {
            _ = try loop.listen(host: "127.0.0.1", port: first.port) { _ in }
        }
        #expect(error?.name == "EADDRINUSE")
        #expect(error?.code == -98)
        #expect(error?.description.contains("EADDRINUSE") == true)
        #expect(error?.operation.contains("\(first.port)") == true)
        first.close()
    }

    @Test("connecting to a closed port yields ECONNREFUSED")
    func connectionRefused() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let probe = try loop.listen(host: "127.0.0.1", port: 0) { _ in }
        let port = probe.port
        probe.close()
        var result: Result<TCPConnection, LoopError>?
        loop.connect(host: "127.0.0.1", port: port) { r in
            result = r
            loop.stop()
        }
        #expect(result == nil, "never reported before connect returns")
        runBounded(loop)
        guard case .failure(let error)? = result else {
            Issue.record("expected a failure, got \(String(describing: result))")
            return
        }
        #expect(error.name == "ECONNREFUSED")
    }

    @Test("bad addresses are reported, not crashed on")
    func badAddresses() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        #expect(throws: LoopError.self) { _ = try loop.listen(host: "not-an-address", port: 0) { _ in } }
        #expect(throws: LoopError.self) { _ = try loop.listen(host: "127.0.0.1", port: 70_000) { _ in } }
        var error: LoopError?
        loop.connect(host: "nowhere.invalid", port: 1) { r in
            if case .failure(let e) = r { error = e }
            loop.stop()
        }
        runBounded(loop)
        #expect(error?.name == "EINVAL")
    }

    @Test("LoopError.check funnels status codes")
    func checkFunnel() throws {
        #expect(try LoopError.check(7, "op") == 7)
        let error = #expect(throws: LoopError.self) { try LoopError.check(LoopError.timedOut, "wait") }
        #expect(error?.name == "ETIMEDOUT")
        #expect(error?.operation == "wait")
        #expect(error?.message.isEmpty == false)
    }

    @Test("using a loop after shutdown fails softly")
    func afterShutdown() throws {
        let loop = try EventLoop()
        loop.shutdown()
        #expect(throws: LoopError.self) { _ = try loop.listen(host: "127.0.0.1", port: 0) { _ in } }
        var error: LoopError?
        loop.connect(host: "127.0.0.1", port: 1) { if case .failure(let e) = $0 { error = e } }
        #expect(error?.name == "ECANCELED")
        let timer = loop.timer(after: 1) {}
        #expect(!timer.isActive)
        var ran = false
        loop.submit({}, done: { ran = true })
        #expect(ran)
        loop.run()
        #expect(loop.now == 0)
    }
}
