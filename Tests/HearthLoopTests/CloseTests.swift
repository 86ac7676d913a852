import Testing
@testable import HearthLoop
#if canImport(Glibc)
import Glibc
#endif

@Suite("Connection close semantics")
struct CloseTests {
    @Test("peer close triggers onClose exactly once, with nil")
    func peerClose() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var serverCloses: [LoopError?] = []
        var clientCloses: [LoopError?] = []
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.onClose = { error in
                serverCloses.append(error)
                connection.close()   // idempotent, even from inside onClose
                connection.abort()
                loop.timer(after: 50) { loop.stop() }
            }
            connection.startReading()
        }
        connectClient(loop, port: listener.port) { client in
            client.onClose = { clientCloses.append($0) }
            client.close()
            client.close()
        }
        runBounded(loop)
        #expect(serverCloses.count == 1)
        #expect(serverCloses.first.map { $0 == nil } == true)
        #expect(clientCloses.count == 1)
        #expect(clientCloses.first.map { $0 == nil } == true)
    }

    @Test("a peer reset reaches onClose as an error, exactly once")
    func peerReset() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var serverCloses: [LoopError?] = []
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            connection.onClose = { error in
                serverCloses.append(error)
                loop.timer(after: 20) { loop.stop() }
            }
            connection.startReading()
            connection.send("unread by the client")
        }
        connectClient(loop, port: listener.port) { client in
            // Closing with unread input makes the kernel send RST instead of FIN.
            loop.timer(after: 50) { client.abort() }
        }
        runBounded(loop)
        #expect(serverCloses.count == 1)
        #expect(serverCloses.first??.isConnectionReset == true)
    }

    @Test("abort drops pending output and reports nil once")
    func abortDropsOutput() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var closes: [LoopError?] = []
        var pendingAfterClose = -1
        let listener = try startEchoServer(loop)
        connectClient(loop, port: listener.port) { client in
            client.onClose = { error in
                closes.append(error)
                pendingAfterClose = client.pendingOutputBytes
                loop.timer(after: 20) { loop.stop() }
            }
            client.send(pattern(1 << 20))
            client.abort()
            client.abort()
        }
        runBounded(loop)
        #expect(closes.count == 1)
        #expect(closes.first.map { $0 == nil } == true)
        #expect(pendingAfterClose == 0)
    }

    @Test("a connection stays alive after its last user reference is dropped")
    func selfRetained() throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        weak var weakServer: TCPConnection?
        var echoed: [UInt8] = []
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
            weakServer = connection
            connection.onRead = { [unowned connection] bytes in connection.send(bytes) }
            connection.startReading()
        }   // the server keeps no reference
        connectClient(loop, port: listener.port) { client in
            client.onRead = { bytes in
                echoed += bytes
                if echoed.count >= 4 { client.close() }
            }
            client.onClose = { _ in loop.timer(after: 50) { loop.stop() } }
            client.startReading()
            loop.timer(after: 20) { client.send("ping") }
        }
        runBounded(loop)
        #expect(echoed == Array("ping".utf8))
        #expect(weakServer == nil, "released after its close callback")
    }

    @Test("shutdown closes open connections, listeners, timers and wakeups")
    func shutdownClosesEverything() throws {
        weak var weakLoop: EventLoop?
        var closes = 0
        do {
            let loop = try EventLoop()
            weakLoop = loop
            let listener = try loop.listen(host: "127.0.0.1", port: 0) { connection in
                connection.onClose = { _ in closes += 1 }
                connection.startReading()
                loop.stop()
            }
            connectClient(loop, port: listener.port) { client in
                client.onClose = { _ in closes += 1 }
                client.send("unsent?")
            }
            let wakeup = loop.makeWakeup {}
            loop.timer(after: 60_000) { Issue.record("timer fired after shutdown") }
            _ = loop.onSignal(SIGUSR2) {}
            loop.beforePoll {}
            runBounded(loop)
            loop.shutdown()
            loop.shutdown()
            wakeup.signal()   // harmless after close
            #expect(!wakeup.isOpen)
            #expect(!listener.isOpen)
            #expect(loop.isClosed)
        }
        #expect(closes == 2)
        #expect(weakLoop == nil, "no handle keeps the loop alive after shutdown")
    }

    @Test("shutdown called from inside run completes when run returns")
    func shutdownInsideRun() throws {
        let loop = try EventLoop()
        var closed = false
        let listener = try loop.listen(host: "127.0.0.1", port: 0) { _ in }
        _ = loop.makeWakeup {}
        loop.timer(after: 10) { loop.shutdown() }
        runBounded(loop)
        listener.close()
        closed = loop.isClosed
        #expect(closed)
        #expect(!listener.isOpen)
    }
}
